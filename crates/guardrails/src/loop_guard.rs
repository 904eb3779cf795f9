//! [`LoopGuard`]: the window detectors feeding one escalation ladder, plus a backstop stop.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use looprail_loop_core::event::Event;
use looprail_loop_core::guard::{Decision, Guard, GuardStateError, TurnView};
use looprail_loop_core::message::{Message, ToolCall, ToolResult};
use looprail_loop_core::outcome::StopCause;
use looprail_loop_core::provider::{ModelResponse, StopReason};
use looprail_loop_core::tool::ToolChoice;

use crate::config::{DetectorKind, GuardrailsConfig};
use crate::detection::{Detection, Detector, Observed, TIER_IDENTICAL_CALL};
use crate::detectors::{CycleDetector, NoveltyStreak, SameObservation, ThrashWindow};
use crate::ladder::{EscalationLadder, Level};
use crate::signature::{CallSignature, Fnv64, observe_output};
use crate::waiting::is_waiting_call;

mod messages;
use messages::{Subject, ask_human, directive, nudge, recovery};

/// The guard's name and the key of its saved state.
pub const LOOP_GUARD: &str = "loop_guard";

/// The detector and tier of a reply cut for repeating itself (B14).
pub const DEGENERATE_REPLY: &str = "degenerate_reply";

/// The event level of the recovery from a first degenerate reply: the run goes on.
pub const RECOVERY: &str = "recovery";

/// Replies within which a second degenerate reply climbs the ladder; one further apart is
/// recovered from again.
const DEGENERATE_WITHIN: u64 = 3;

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
struct Counters {
    calls_seen: u64,
    /// The last step's calls and observations.
    last_step: Option<u64>,
    /// The last step's calls alone.
    #[serde(default)]
    last_calls: Option<u64>,
    consecutive_steps: u32,
    /// Replies seen (the turn count the degenerate-reply policy measures in).
    #[serde(default)]
    replies: u64,
    /// The reply that last degenerated, if any.
    #[serde(default)]
    last_degenerate: Option<u64>,
}

#[derive(Serialize, Deserialize)]
struct SavedState {
    counters: Counters,
    ladder: EscalationLadder,
    detectors: BTreeMap<String, serde_json::Value>,
}

/// Runs the configured detectors (by default [`NoveltyStreak`]: repetition without novelty)
/// after every tool call and walks the escalation ladder (F17): a soft nudge, a hard
/// directive, then a forced `ask_human` call (or a stop when the run has no `ask_human` tool).
/// The same whole step with nothing new (the same observations, or outputs found stale)
/// `consecutive_stop` times in a row stops the
/// run: a backstop for a model that ignores the ladder (or a provider that ignores tool choice).
///
/// ```
/// use looprail_guardrails::{GuardrailsConfig, LoopGuard};
/// use looprail_loop_core::prelude::*;
///
/// let mut run = Run::builder(LoopConfig::default())
///     .user("go")
///     .guard(LoopGuard::new(&GuardrailsConfig::default()))
///     .build()
///     .unwrap();
/// assert!(run.header().guards.contains_key("loop_guard"));
/// ```
pub struct LoopGuard {
    detectors: Vec<Box<dyn Detector>>,
    ladder: EscalationLadder,
    counters: Counters,
    polling: Vec<String>,
    consecutive_stop: u32,
    directive_tool: Option<String>,
    reset_on_user_turn: bool,
}

impl std::fmt::Debug for LoopGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoopGuard")
            .field("level", &self.ladder.level())
            .field("counters", &self.counters)
            .finish()
    }
}

impl LoopGuard {
    /// The stack configured by `config`.
    pub fn new(config: &GuardrailsConfig) -> Self {
        let detectors = config
            .detectors
            .iter()
            .map(|kind| -> Box<dyn Detector> {
                match kind {
                    DetectorKind::Novelty => Box::new(
                        NoveltyStreak::new(config.novelty_after, config.novelty_step, config.novelty_memory)
                            .identical_call_nudge(config.identical_call_nudge)
                            .forget_after(config.deescalate_after),
                    ),
                    DetectorKind::Thrash => Box::new(ThrashWindow::new(
                        config.window,
                        config.identical_threshold,
                        config.pattern_threshold,
                        config.pattern_max_level,
                    )),
                    DetectorKind::Cycle => {
                        Box::new(CycleDetector::new(config.cycle_max_period, config.cycle_repetitions))
                    }
                    DetectorKind::SameObservation => Box::new(SameObservation::new(
                        config.same_observation_window,
                        config.same_observation_threshold,
                    )),
                }
            })
            .collect();
        Self {
            detectors,
            ladder: EscalationLadder::new(config.escalation_gap, config.deescalate_after),
            counters: Counters::default(),
            polling: config.polling_tools.clone(),
            consecutive_stop: config.consecutive_stop,
            directive_tool: config.directive_tool.clone(),
            reset_on_user_turn: config.reset_on_user_turn,
        }
    }

    /// The ladder's current level.
    pub fn level(&self) -> Level {
        self.ladder.level()
    }

    fn climb(
        &self,
        view: &TurnView<'_>,
        level: Level,
        detection: &Detection,
        call_index: u64,
        subject: Subject<'_>,
    ) -> Vec<Decision> {
        let tool = match subject {
            Subject::Call(tool) => tool,
            Subject::Reply => "",
        };
        let mut decisions = vec![
            Decision::Emit(Event::LoopDetected {
                call_index,
                detector: detection.detector.to_owned(),
                tier: detection.tier.to_owned(),
                tool: tool.to_owned(),
                level: level.as_str().to_owned(),
                evidence: detection.evidence.clone(),
            }),
            Decision::Emit(Event::GuardrailEscalated {
                guard: LOOP_GUARD.to_owned(),
                level: level.as_str().to_owned(),
            }),
        ];
        match level {
            Level::None => {}
            Level::Nudge => {
                decisions.push(Decision::Inject(Message::internal_user("loop_nudge", nudge(subject))))
            }
            Level::Directive => {
                decisions
                    .push(Decision::Inject(Message::internal_user("loop_directive", directive(subject))));
                if let Some(tool) = &self.directive_tool {
                    decisions.push(Decision::ForceToolChoice(ToolChoice::Named(tool.clone())));
                }
            }
            Level::AskHuman => match &view.config.guardrails.ask_human_tool {
                Some(ask) => {
                    decisions.push(Decision::Inject(Message::internal_user(
                        "loop_ask_human",
                        ask_human(subject, ask),
                    )));
                    decisions.push(Decision::ForceToolChoice(ToolChoice::Named(ask.clone())));
                }
                None => {
                    let on = match subject {
                        Subject::Call(tool) => format!("`{tool}`"),
                        Subject::Reply => "its replies".to_owned(),
                    };
                    decisions.push(Decision::Stop(StopCause::LoopDetected {
                        detector: detection.detector.to_owned(),
                        detail: format!(
                            "{} loop on {on} and no ask_human tool to escalate to",
                            detection.tier
                        ),
                        evidence: None,
                    }))
                }
            },
        }
        decisions
    }
}

impl Guard for LoopGuard {
    fn name(&self) -> &str {
        LOOP_GUARD
    }

    /// A reply cut for repeating itself (B14) is recovered from: the model is told what it
    /// repeated and gets another turn. Only a second one within a few replies climbs the
    /// ladder like a loop of calls (a nudge, then a directive, then `ask_human`).
    fn after_response(&mut self, view: &TurnView<'_>, response: &ModelResponse) -> Vec<Decision> {
        self.counters.replies += 1;
        if response.stop_reason != StopReason::Degenerate {
            return Vec::new();
        }
        let reply = self.counters.replies;
        let again = self.counters.last_degenerate.is_some_and(|last| reply - last <= DEGENERATE_WITHIN);
        self.counters.last_degenerate = Some(reply);
        let index = self.counters.calls_seen;
        if !again {
            return vec![
                Decision::Emit(Event::LoopDetected {
                    call_index: index,
                    detector: DEGENERATE_REPLY.to_owned(),
                    tier: DEGENERATE_REPLY.to_owned(),
                    tool: String::new(),
                    level: RECOVERY.to_owned(),
                    evidence: Vec::new(),
                }),
                Decision::Inject(Message::internal_user(
                    "degenerate_recovery",
                    recovery(response.text.as_deref()),
                )),
            ];
        }
        match self.ladder.escalate(index, Level::AskHuman) {
            Some(level) => {
                let detection = Detection {
                    detector: DEGENERATE_REPLY,
                    tier: DEGENERATE_REPLY,
                    cap: Level::AskHuman,
                    evidence: Vec::new(),
                };
                self.climb(view, level, &detection, index, Subject::Reply)
            }
            None => Vec::new(),
        }
    }

    fn after_tools(
        &mut self,
        view: &TurnView<'_>,
        calls: &[ToolCall],
        results: &[ToolResult],
    ) -> Vec<Decision> {
        let mut decisions = Vec::new();
        // The step's keys for the backstop: its calls' signatures, and their observations, so
        // a poll whose output changes is never a repeated step; unless every call of the step
        // was found stale (its output brought nothing new: the same edit again while a file
        // grows), when the signatures alone are the key. Waiting calls are left out: the
        // wall-clock limit ends a wait.
        let mut calls_key = Fnv64::default();
        let mut step = Fnv64::default();
        let mut all_detected = true;
        let mut first_watched: Option<&str> = None;
        for (call, result) in calls.iter().zip(results) {
            let index = self.counters.calls_seen;
            self.counters.calls_seen += 1;
            if self.polling.iter().any(|p| p == &call.name) {
                continue;
            }
            let signature = CallSignature::of(&call.name, &call.arguments);
            let (observation, lines) = observe_output(&result.content);
            let waiting = is_waiting_call(&call.name, &call.arguments);
            if !waiting {
                calls_key.write(&signature.call.to_le_bytes());
                step.write(&signature.call.to_le_bytes());
                step.write(&observation.to_le_bytes());
                first_watched.get_or_insert(call.name.as_str());
            }
            let observed = Observed {
                index,
                tool: &call.name,
                signature,
                observation,
                lines: &lines,
                is_error: result.is_error,
                waiting,
            };
            let detections: Vec<Detection> =
                self.detectors.iter_mut().filter_map(|d| d.observe(&observed)).collect();
            let strongest = detections.iter().max_by_key(|d| d.cap);
            all_detected &= waiting || detections.iter().any(|d| d.tier != TIER_IDENTICAL_CALL);
            match strongest {
                Some(detection) => {
                    if let Some(level) = self.ladder.on_detection(index, detection.cap) {
                        decisions.extend(self.climb(
                            view,
                            level,
                            detection,
                            index,
                            Subject::Call(&call.name),
                        ));
                    }
                }
                // Only progress walks the ladder down: a call that repeats something without a
                // detection yet (one stale call after a detour) is no sign of recovery.
                None if self.detectors.iter().all(|d| d.progress()) => {
                    self.ladder.on_quiet_call();
                }
                None => {}
            }
        }
        // The backstop: the same whole step again and again, whatever the ladder said.
        if let (Some(first_tool), true) = (first_watched, self.consecutive_stop > 0) {
            let (calls_key, step) = (calls_key.finish(), step.finish());
            let same_calls = self.counters.last_calls == Some(calls_key);
            if same_calls && (self.counters.last_step == Some(step) || all_detected) {
                self.counters.consecutive_steps += 1;
            } else {
                self.counters.consecutive_steps = 1;
            }
            self.counters.last_step = Some(step);
            self.counters.last_calls = Some(calls_key);
            if self.counters.consecutive_steps >= self.consecutive_stop {
                let tool = first_tool.to_owned();
                let count = self.counters.consecutive_steps;
                decisions.push(Decision::Emit(Event::LoopDetected {
                    call_index: self.counters.calls_seen.saturating_sub(1),
                    detector: "consecutive_steps".into(),
                    tier: "identical_steps".into(),
                    tool: tool.clone(),
                    level: "stop".into(),
                    evidence: Vec::new(),
                }));
                decisions.push(Decision::Stop(StopCause::LoopDetected {
                    detector: "consecutive_steps".into(),
                    detail: format!("the same step on `{tool}` with nothing new {count} times in a row"),
                    evidence: None,
                }));
            }
        }
        decisions
    }

    fn on_user_turn(&mut self) {
        if self.reset_on_user_turn {
            self.ladder.reset();
            self.counters.last_step = None;
            self.counters.last_calls = None;
            self.counters.consecutive_steps = 0;
            for detector in &mut self.detectors {
                detector.reset();
            }
        }
    }

    fn save_state(&self) -> serde_json::Value {
        let state = SavedState {
            counters: self.counters.clone(),
            ladder: self.ladder.clone(),
            detectors: self.detectors.iter().map(|d| (d.name().to_owned(), d.save_state())).collect(),
        };
        serde_json::to_value(state).unwrap_or_default()
    }

    /// Restores the whole state or none of it: when one detector's part does not load, every
    /// detector starts afresh (those already restored are reset; nothing is saved beforehand,
    /// so a load costs no more than the state it reads).
    fn load_state(&mut self, state: serde_json::Value) -> Result<(), GuardStateError> {
        let saved: SavedState =
            serde_json::from_value(state).map_err(|e| GuardStateError::from_serde(LOOP_GUARD, e))?;
        if let Err(error) = self.load_detectors(saved.detectors) {
            self.detectors.iter_mut().for_each(|d| d.reset());
            return Err(error);
        }
        self.counters = saved.counters;
        self.ladder = saved.ladder;
        Ok(())
    }
}

impl LoopGuard {
    fn load_detectors(
        &mut self,
        mut states: BTreeMap<String, serde_json::Value>,
    ) -> Result<(), GuardStateError> {
        for detector in &mut self.detectors {
            if let Some(state) = states.remove(detector.name()) {
                detector.load_state(state)?;
            }
        }
        Ok(())
    }
}
