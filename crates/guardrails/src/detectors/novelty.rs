//! Repetition without novelty (B10): the default loop detector.
//!
//! A loop is an agent producing calls, and getting observations, that bring nothing new. Each
//! tool call is reduced to a pair: its signature (tool + whole canonical arguments, B1) and its
//! observation fingerprint (volatile numbers masked, B4). A call is *stale* when
//! - its pair was seen before: the same call with the same result (`identical`), a short cycle
//!   of calls with the same results (`cycle`), or old calls in a new order (`no_novelty`); or
//! - its output, compared with the same call's output a few calls earlier, brings nothing new:
//!   the same change again (the same block inserted again while a file grows), only lines
//!   already shown, or the same lines in another order (`repeated_effect`, see
//!   [`effect`](super::effect)).
//!
//! The detector counts the stale calls since the last novel one (the *stale streak*) and fires
//! while that streak is long:
//! - re-running the same test after a different edit: the edit is novel, the streak restarts;
//! - polling a job whose output grows with new lines: every poll brings new content;
//! - the same failing call again and again, or the same edit sent again while the file grows:
//!   every repeat is stale, the streak grows;
//! - A-B-A-B with the same results: stale from the second round on (reported as a cycle).
//!
//! The streak's length sets how far up the ladder a detection may lead: a nudge once it reaches
//! `nudge_after`, a directive `step` stale calls later, `ask_human` another `step` later. So the
//! ladder climbs only while the repetition goes on; anything new in between restarts the count.
//! Two exceptions keep waiting apart from looping:
//! - a call that waits on something outside the agent ([`is_waiting_call`]: a status poll, a
//!   `sleep N && check`) leads to a nudge at most, however long its streak: the run's
//!   wall-clock limit ends a wait, not the ladder's `ask_human`;
//! - as cheap insurance, the same call `identical_call_nudge` times in a row leads to a nudge
//!   whatever its outputs (gemini-cli's rule of five), even when each output is new.

use std::collections::{HashMap, VecDeque};

use serde::{Deserialize, Serialize};

use looprail_loop_core::guard::GuardStateError;

use super::effect::{CYCLE_MAX_PERIOD, Effect, RecentOutputs, SavedOutput};
use super::loop_memory::LoopMemory;
use super::words::Words;
use crate::detection::{Detection, Detector, Observed, TIER_IDENTICAL_CALL};
#[cfg(doc)]
use crate::is_waiting_call;
use crate::ladder::Level;

/// Stale calls kept for the tier and the evidence of a detection.
const STREAK_KEPT: usize = 16;
/// Earlier calls named as evidence at most.
const EVIDENCE_MAX: usize = 8;

type Pair = (u64, u64);

/// One stale call of the current streak.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
struct Stale {
    index: u64,
    matched: u64,
    /// Stale by its effect (its output brought nothing new), not by a pair seen before.
    #[serde(default)]
    effect: bool,
}

/// Fires on stale calls (no new (call signature, observation) pair, and no new content in the
/// output compared with the same call's recent output) once there have been `nudge_after` of
/// them in a row. Memory is bounded: the last `memory` distinct pairs are remembered (a pair
/// older than that counts as new again) and the output summaries of the last five calls, so a
/// call costs O(its output) whatever the run's length.
///
/// ```
/// use looprail_guardrails::detectors::NoveltyStreak;
/// use looprail_guardrails::signature::{CallSignature, OutputLines, observation_fingerprint};
/// use looprail_guardrails::{Detector, Level, Observed};
///
/// let mut detector = NoveltyStreak::new(2, 2, 256);
/// let mut call = |index: u64, command: &str, output: &str| {
///     let arguments = format!(r#"{{"command": "{command}"}}"#);
///     detector.observe(&Observed {
///         index,
///         tool: "bash",
///         signature: CallSignature::of("bash", &arguments),
///         observation: observation_fingerprint(output),
///         lines: &OutputLines::of(output),
///         is_error: false,
///         waiting: false,
///     })
/// };
/// // The same test re-run after each edit, with the same failure: every edit is new.
/// for i in 0..5 {
///     assert!(call(2 * i, &format!("sed -i s/a{i}/b{i}/ x.py"), "").is_none());
///     assert!(call(2 * i + 1, "pytest", "1 failed, 20 passed in 0.31s").is_none());
/// }
/// // The same call with the same result: the 3rd occurrence is the 2nd stale call in a row.
/// assert!(call(10, "make", "Error: no rule to make target").is_none());
/// assert!(call(11, "make", "Error: no rule to make target").is_none());
/// let found = call(12, "make", "Error: no rule to make target").unwrap();
/// assert_eq!((found.tier, found.cap), ("identical", Level::Nudge));
/// assert_eq!(found.evidence, vec![10, 11]);
/// // The same edit again while the file grows by the same lines: nothing new either.
/// let file = |copies: usize| format!("[File: A.java ({} lines)]\n{}}}", copies + 1, "import a.B;\n".repeat(copies));
/// assert!(call(13, "edit 1:1", &file(1)).is_none());
/// assert!(call(14, "edit 1:1", &file(2)).is_none());
/// let found = call(15, "edit 1:1", &file(3)).unwrap();
/// assert_eq!(found.tier, "repeated_effect");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoveltyStreak {
    nudge_after: u32,
    step: u32,
    memory: usize,
    identical_call_nudge: u32,
    seen: HashMap<Pair, u64>,
    order: VecDeque<Pair>,
    recent: RecentOutputs,
    /// The last call's signature and how many times in a row it was made.
    same_call: (u64, u32),
    streak_len: u32,
    streak: VecDeque<Stale>,
    /// A streak interrupted by a short detour, and the loop's outputs.
    loop_memory: LoopMemory,
    /// New calls after which an interrupted streak is forgotten (0: at once).
    forget_after: u32,
    /// The last call brought something new.
    progress: bool,
}

#[derive(Serialize, Deserialize)]
struct Saved {
    /// Remembered pairs, oldest first, each with the last call index it was seen at: three
    /// words each.
    pairs: Words,
    streak_len: u32,
    streak: Vec<Stale>,
    /// The last calls' output summaries, oldest first.
    #[serde(default)]
    recent: Vec<SavedOutput>,
    #[serde(default)]
    same_call: (u64, u32),
    #[serde(default)]
    loop_memory: LoopMemory,
}

impl NoveltyStreak {
    /// A detector that nudges after `nudge_after` stale calls in a row, leads to a directive
    /// `step` stale calls later and to `ask_human` `step` calls after that, remembering the
    /// last `memory` distinct pairs; the same call 5 times in a row leads to a nudge (see
    /// [`NoveltyStreak::identical_call_nudge`]).
    pub fn new(nudge_after: u32, step: u32, memory: u32) -> Self {
        Self {
            nudge_after: nudge_after.max(1),
            step: step.max(1),
            memory: (memory as usize).max(1),
            identical_call_nudge: 5,
            seen: HashMap::new(),
            order: VecDeque::new(),
            recent: RecentOutputs::default(),
            same_call: (0, 0),
            streak_len: 0,
            streak: VecDeque::with_capacity(STREAK_KEPT),
            loop_memory: LoopMemory::default(),
            forget_after: 8,
            progress: true,
        }
    }

    /// How many calls that bring something new end a loop's memory (default 8): a loop that
    /// comes back before that, after a detour, continues its streak where it stopped instead of
    /// counting from zero, so the ladder resumes at the rung it had reached (0: a detour
    /// forgets the loop at once).
    pub fn forget_after(mut self, calls: u32) -> Self {
        self.forget_after = calls;
        self
    }

    /// The same call (signature) this many times in a row leads to a nudge, whatever its
    /// outputs (0: never).
    pub fn identical_call_nudge(mut self, calls: u32) -> Self {
        self.identical_call_nudge = calls;
        self
    }

    /// Stale calls in a row so far.
    pub fn streak(&self) -> u32 {
        self.streak_len
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

    /// `repeated_effect` when a stale call of the streak brought nothing new in its output,
    /// `identical` when every stale call repeats the call just before it, `cycle` when every
    /// one repeats the call 2 to 5 calls back, else `no_novelty` (old calls in a new order).
    fn tier(&self) -> &'static str {
        if self.streak.iter().any(|s| s.effect) {
            return "repeated_effect";
        }
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

    fn stale(&mut self, index: u64, matched: u64, effect: bool) {
        self.streak_len = self.streak_len.saturating_add(1);
        if self.streak.len() == STREAK_KEPT {
            self.streak.pop_front();
        }
        self.streak.push_back(Stale { index, matched, effect });
    }

    /// The insurance: the same call `identical_call_nudge` times in a row.
    fn same_call_again(&self, call: &Observed<'_>) -> Option<Detection> {
        let (_, run) = self.same_call;
        (self.identical_call_nudge > 0 && run >= self.identical_call_nudge).then(|| {
            let shown = u64::from(run.min(EVIDENCE_MAX as u32 + 1) - 1);
            Detection {
                detector: "novelty",
                tier: TIER_IDENTICAL_CALL,
                cap: Level::Nudge,
                evidence: (call.index.saturating_sub(shown)..call.index).collect(),
            }
        })
    }
}

impl Detector for NoveltyStreak {
    fn name(&self) -> &'static str {
        "novelty"
    }

    fn observe(&mut self, call: &Observed<'_>) -> Option<Detection> {
        let signature = call.signature.call;
        self.same_call = match self.same_call {
            (last, run) if last == signature && run > 0 => (last, run.saturating_add(1)),
            _ => (signature, 1),
        };
        let effect = self.recent.judge(call.index, signature, call.lines);
        let stale = match (self.remember((signature, call.observation), call.index), effect) {
            (Some(matched), _) => Some((matched, false)),
            (None, Effect::Repeated { matched }) => Some((matched, true)),
            // Neither progress nor repetition: the streak stays as it is.
            (None, Effect::Hold) => {
                self.progress = false;
                return self.same_call_again(call);
            }
            // A changed call whose output is what the loop's calls returned: the same effect.
            (None, Effect::New) => {
                self.loop_memory.same_outcome(call.observation, call.lines).map(|matched| (matched, true))
            }
        };
        let Some((matched, effect)) = stale else {
            self.progress = true;
            // The stale calls of a streak that was a loop stay as evidence for when it
            // resumes; those of a shorter one, or of a forgotten one, go.
            let forgotten = self.loop_memory.on_novel(self.streak_len, self.forget_after);
            if forgotten || self.streak_len < self.nudge_after {
                self.streak.clear();
            }
            self.streak_len = 0;
            return self.same_call_again(call);
        };
        self.progress = false;
        self.stale(call.index, matched, effect);
        if let Some(suspended) =
            self.loop_memory.on_stale(call.index, signature, call.observation, self.nudge_after)
        {
            self.streak_len = self.streak_len.saturating_add(suspended);
        }
        if self.streak_len < self.nudge_after {
            return self.same_call_again(call);
        }
        let (tier, cap) = if call.waiting { ("waiting", Level::Nudge) } else { (self.tier(), self.cap()) };
        Some(Detection { detector: "novelty", tier, cap, evidence: self.evidence() })
    }

    fn progress(&self) -> bool {
        self.progress
    }

    fn reset(&mut self) {
        self.seen.clear();
        self.order.clear();
        self.recent.clear();
        self.same_call = (0, 0);
        self.streak_len = 0;
        self.streak.clear();
        self.loop_memory.clear();
        self.progress = true;
    }

    fn save_state(&self) -> serde_json::Value {
        let pairs = self
            .order
            .iter()
            .flat_map(|pair| [pair.0, pair.1, self.seen.get(pair).copied().unwrap_or_default()])
            .collect();
        let saved = Saved {
            pairs: Words(pairs),
            streak_len: self.streak_len,
            streak: self.streak.iter().copied().collect(),
            recent: self.recent.save(),
            same_call: self.same_call,
            loop_memory: self.loop_memory.clone(),
        };
        serde_json::to_value(saved).unwrap_or_default()
    }

    fn load_state(&mut self, state: serde_json::Value) -> Result<(), GuardStateError> {
        let saved: Saved =
            serde_json::from_value(state).map_err(|e| GuardStateError::from_serde("novelty", e))?;
        let pairs = saved.pairs.0;
        if !pairs.len().is_multiple_of(3) {
            return Err(GuardStateError::from_serde("novelty", "remembered pairs are not whole"));
        }
        self.reset();
        for triple in pairs.chunks_exact(3) {
            self.remember((triple[0], triple[1]), triple[2]);
        }
        self.recent = RecentOutputs::load(saved.recent);
        self.same_call = saved.same_call;
        self.loop_memory = saved.loop_memory;
        self.streak_len = saved.streak_len;
        self.streak = saved.streak.into_iter().rev().take(STREAK_KEPT).rev().collect();
        Ok(())
    }
}
