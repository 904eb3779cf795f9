//! Repetition without novelty (B10): the default loop detector.
//!
//! A loop is an agent producing calls, and getting observations, that the run has already
//! produced, with nothing new in between. Each tool call is reduced to a pair: its signature
//! (tool + whole canonical arguments, B1) and its observation fingerprint (volatile numbers
//! masked, B4). A call whose pair the run has not seen before is *novel*; the detector counts
//! the calls since the last novel one (the *stale streak*) and fires while that streak is long.
//!
//! What this means in practice:
//! - re-running the same test after a different edit: the edit is novel, the streak restarts;
//! - polling a job whose output grows: every poll's observation is new, nothing fires;
//! - the same failing call again and again: every repeat is stale, the streak grows;
//! - A-B-A-B with the same results: stale from the second round on (reported as a cycle).
//!
//! The streak's length sets how far up the ladder a detection may lead: a nudge once it reaches
//! `nudge_after`, a directive `step` stale calls later, `ask_human` another `step` later. So the
//! ladder climbs only while the repetition goes on; anything new in between restarts the count.
//! A call whose observation differs from that same call's previous observation (an output
//! flipping between two states) leads to a nudge at most: something did change.

use std::collections::{HashMap, VecDeque};

use serde::{Deserialize, Serialize};

use looprail_loop_core::guard::GuardStateError;

use super::words::Words;
use crate::detection::{Detection, Detector, Observed};
use crate::ladder::Level;

/// Stale calls kept for the tier and the evidence of a detection.
const STREAK_KEPT: usize = 16;
/// Earlier calls named as evidence at most.
const EVIDENCE_MAX: usize = 8;
/// Longest cycle named as such.
const CYCLE_MAX_PERIOD: usize = 5;

type Pair = (u64, u64);

/// One stale call of the current streak.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
struct Stale {
    index: u64,
    matched: u64,
}

/// Fires on calls that add no new (call signature, observation) pair to the run, once there
/// have been `nudge_after` of them in a row. Memory is bounded: the last `memory` distinct
/// pairs are remembered (a pair older than that counts as new again), so a call costs O(1)
/// whatever the run's length.
///
/// ```
/// use looprail_guardrails::detectors::NoveltyStreak;
/// use looprail_guardrails::signature::CallSignature;
/// use looprail_guardrails::{Detector, Level, Observed};
///
/// let mut detector = NoveltyStreak::new(2, 2, 256);
/// let call = |index, output: u64| Observed {
///     index,
///     tool: "bash",
///     signature: CallSignature::of("bash", r#"{"command": "pytest"}"#),
///     observation: output,
///     is_error: false,
/// };
/// // The same test re-run with a different result each time: progress, never a detection.
/// assert!((0..10).all(|i| detector.observe(&call(i, i)).is_none()));
/// // The same call with the same result: the 3rd occurrence is the 2nd stale call in a row.
/// assert!(detector.observe(&call(10, 99)).is_none());
/// assert!(detector.observe(&call(11, 99)).is_none());
/// let found = detector.observe(&call(12, 99)).unwrap();
/// assert_eq!((found.tier, found.cap), ("identical", Level::Nudge));
/// assert_eq!(found.evidence, vec![10, 11]);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoveltyStreak {
    nudge_after: u32,
    step: u32,
    memory: usize,
    seen: HashMap<Pair, u64>,
    order: VecDeque<Pair>,
    /// The last observation of each call signature (rebuilt from `seen` when it outgrows the
    /// memory).
    last_observation: HashMap<u64, u64>,
    streak_len: u32,
    streak: VecDeque<Stale>,
}

#[derive(Serialize, Deserialize)]
struct Saved {
    /// Remembered pairs, oldest first, each with the last call index it was seen at: three
    /// words each.
    pairs: Words,
    streak_len: u32,
    streak: Vec<Stale>,
    /// (call signature, its last observation), sorted: two words each.
    #[serde(default)]
    last_observations: Words,
}

impl NoveltyStreak {
    /// A detector that nudges after `nudge_after` stale calls in a row, leads to a directive
    /// `step` stale calls later and to `ask_human` `step` calls after that, remembering the
    /// last `memory` distinct pairs.
    pub fn new(nudge_after: u32, step: u32, memory: u32) -> Self {
        Self {
            nudge_after: nudge_after.max(1),
            step: step.max(1),
            memory: (memory as usize).max(1),
            seen: HashMap::new(),
            order: VecDeque::new(),
            last_observation: HashMap::new(),
            streak_len: 0,
            streak: VecDeque::with_capacity(STREAK_KEPT),
        }
    }

    /// Stale calls in a row so far.
    pub fn streak(&self) -> u32 {
        self.streak_len
    }

    /// Records `pair` as the latest observation of its call; true when that call was seen
    /// before with another observation.
    fn observation_changed(&mut self, pair: Pair) -> bool {
        if self.last_observation.len() >= self.memory && !self.last_observation.contains_key(&pair.0) {
            self.rebuild_last_observations();
        }
        self.last_observation.insert(pair.0, pair.1).is_some_and(|previous| previous != pair.1)
    }

    /// The last observation of each call still in memory, from the pairs' last indices.
    fn rebuild_last_observations(&mut self) {
        let mut latest: HashMap<u64, (u64, u64)> = HashMap::with_capacity(self.order.len());
        for pair in &self.order {
            let index = self.seen.get(pair).copied().unwrap_or_default();
            let entry = latest.entry(pair.0).or_insert((index, pair.1));
            if index >= entry.0 {
                *entry = (index, pair.1);
            }
        }
        self.last_observation =
            latest.into_iter().map(|(call, (_, observation))| (call, observation)).collect();
    }

    fn remember(&mut self, pair: Pair, index: u64) -> Option<u64> {
        if let Some(last) = self.seen.get_mut(&pair) {
            let matched = *last;
            *last = index;
            return Some(matched);
        }
        if self.order.len() == self.memory
            && let Some(oldest) = self.order.pop_front()
        {
            self.seen.remove(&oldest);
        }
        self.order.push_back(pair);
        self.seen.insert(pair, index);
        None
    }

    fn cap(&self) -> Level {
        let over = self.streak_len - self.nudge_after;
        if over >= 2 * self.step {
            Level::AskHuman
        } else if over >= self.step {
            Level::Directive
        } else {
            Level::Nudge
        }
    }

    /// `identical` when every stale call repeats the call just before it, `cycle` when every
    /// one repeats the call 2 to 5 calls back, else `no_novelty` (old calls in a new order).
    fn tier(&self) -> &'static str {
        let distance = |s: &Stale| s.index.saturating_sub(s.matched);
        let Some(period) = self.streak.front().map(distance) else { return "no_novelty" };
        if !self.streak.iter().all(|s| distance(s) == period) {
            return "no_novelty";
        }
        match period {
            1 => "identical",
            p if p <= CYCLE_MAX_PERIOD as u64 => "cycle",
            _ => "no_novelty",
        }
    }

    fn evidence(&self) -> Vec<u64> {
        let mut matched: Vec<u64> = self.streak.iter().map(|s| s.matched).collect();
        matched.sort_unstable();
        matched.dedup();
        let skip = matched.len().saturating_sub(EVIDENCE_MAX);
        matched.split_off(skip)
    }
}

impl Detector for NoveltyStreak {
    fn name(&self) -> &'static str {
        "novelty"
    }

    fn observe(&mut self, call: &Observed<'_>) -> Option<Detection> {
        let pair = (call.signature.call, call.observation);
        let changed = self.observation_changed(pair);
        let Some(matched) = self.remember(pair, call.index) else {
            self.streak_len = 0;
            self.streak.clear();
            return None;
        };
        self.streak_len = self.streak_len.saturating_add(1);
        if self.streak.len() == STREAK_KEPT {
            self.streak.pop_front();
        }
        self.streak.push_back(Stale { index: call.index, matched });
        (self.streak_len >= self.nudge_after).then(|| Detection {
            detector: "novelty",
            tier: self.tier(),
            cap: if changed { Level::Nudge } else { self.cap() },
            evidence: self.evidence(),
        })
    }

    fn reset(&mut self) {
        self.seen.clear();
        self.order.clear();
        self.last_observation.clear();
        self.streak_len = 0;
        self.streak.clear();
    }

    fn save_state(&self) -> serde_json::Value {
        let pairs = self
            .order
            .iter()
            .flat_map(|pair| [pair.0, pair.1, self.seen.get(pair).copied().unwrap_or_default()])
            .collect();
        let mut last_observations: Vec<(u64, u64)> =
            self.last_observation.iter().map(|(c, o)| (*c, *o)).collect();
        last_observations.sort_unstable();
        let saved = Saved {
            pairs: Words(pairs),
            streak_len: self.streak_len,
            streak: self.streak.iter().copied().collect(),
            last_observations: Words(last_observations.into_iter().flat_map(|(c, o)| [c, o]).collect()),
        };
        serde_json::to_value(saved).unwrap_or_default()
    }

    fn load_state(&mut self, state: serde_json::Value) -> Result<(), GuardStateError> {
        let saved: Saved =
            serde_json::from_value(state).map_err(|e| GuardStateError::from_serde("novelty", e))?;
        let (pairs, observations) = (saved.pairs.0, saved.last_observations.0);
        if !pairs.len().is_multiple_of(3) || !observations.len().is_multiple_of(2) {
            return Err(GuardStateError::from_serde("novelty", "remembered pairs are not whole"));
        }
        self.reset();
        for triple in pairs.chunks_exact(3) {
            self.remember((triple[0], triple[1]), triple[2]);
        }
        self.last_observation = observations.chunks_exact(2).map(|p| (p[0], p[1])).collect();
        self.streak_len = saved.streak_len;
        self.streak = saved.streak.into_iter().rev().take(STREAK_KEPT).rev().collect();
        Ok(())
    }
}
