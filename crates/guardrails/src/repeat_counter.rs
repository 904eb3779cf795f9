//! The per-executor repeat counter (F18, S3).

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use looprail_loop_core::event::Event;
use looprail_loop_core::guard::{Decision, Guard, GuardStateError, TurnView};
use looprail_loop_core::message::{ToolCall, ToolResult};
use looprail_loop_core::outcome::{LoopEvidence, StopCause};

use crate::config::{RepeatAction, RepeatCounterConfig};
use crate::signature::{CallSignature, display_arguments};

/// The flag on a synthetic result the repeat counter returns instead of running the tool.
pub const FLAG_LOOP_DETECTED: &str = "loop-detected";

/// Counts calls per (tool, canonical arguments) for the whole run, across user turns (it lives
/// as long as the executor, S3). Past the limit it either aborts the run with the tool,
/// arguments and count ([`RepeatAction::Abort`]) or answers with a synthetic result flagged
/// `loop-detected` and does not run the tool ([`RepeatAction::Hint`]). Canonical arguments
/// mean key order does not split one call into two counters (B1, which S3 lacks).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RepeatCounter {
    config: RepeatCounterConfig,
    polling: Vec<String>,
    counts: HashMap<u64, u32>,
    calls_seen: u64,
}

#[derive(Serialize, Deserialize)]
struct SavedCounts {
    counts: Vec<(u64, u32)>,
    calls_seen: u64,
}

impl RepeatCounter {
    /// A counter with these settings; `polling` tools are never counted (B2).
    pub fn new(config: RepeatCounterConfig, polling: Vec<String>) -> Self {
        Self { config, polling, counts: HashMap::new(), calls_seen: 0 }
    }

    /// How often this call was seen.
    pub fn count(&self, tool: &str, arguments: &str) -> u32 {
        self.counts.get(&CallSignature::of(tool, arguments).call).copied().unwrap_or(0)
    }

    fn limit(&self, tool: &str) -> u32 {
        self.config.per_tool.get(tool).copied().unwrap_or(self.config.max_repeats)
    }

    fn bound_memory(&mut self) {
        if self.counts.len() > self.config.max_entries {
            // Calls seen once carry the least evidence of a loop: forget them first.
            self.counts.retain(|_, n| *n > 1);
            if self.counts.len() > self.config.max_entries {
                self.counts.clear();
            }
        }
    }
}

impl Guard for RepeatCounter {
    fn name(&self) -> &str {
        "repeat_counter"
    }

    fn before_tools(&mut self, _view: &TurnView<'_>, calls: &[ToolCall]) -> Vec<Decision> {
        let mut decisions = Vec::new();
        for call in calls {
            let index = self.calls_seen;
            self.calls_seen += 1;
            if self.polling.contains(&call.name) {
                continue;
            }
            let key = CallSignature::of(&call.name, &call.arguments).call;
            let count = {
                let entry = self.counts.entry(key).or_insert(0);
                *entry += 1;
                *entry
            };
            if count <= self.limit(&call.name) {
                continue;
            }
            let level = match self.config.action {
                RepeatAction::Abort => "abort",
                RepeatAction::Hint => "hint",
            };
            decisions.push(Decision::Emit(Event::LoopDetected {
                call_index: index,
                detector: "repeat_counter".into(),
                tier: "repeat".into(),
                tool: call.name.clone(),
                level: level.into(),
                evidence: Vec::new(),
            }));
            match self.config.action {
                RepeatAction::Abort => {
                    let evidence = LoopEvidence {
                        tool: call.name.clone(),
                        arguments: display_arguments(&call.arguments),
                        count,
                    };
                    decisions.push(Decision::Stop(StopCause::LoopDetected {
                        detector: "repeat_counter".into(),
                        detail: format!("`{}` was called {count} times with the same arguments", call.name),
                        evidence: Some(evidence),
                    }));
                    return decisions;
                }
                RepeatAction::Hint => {
                    let text = format!(
                        "Loop detected: `{}` was already called {} times with exactly these arguments, so it \
                         was not run again. Its result will not change; use what you already have or try \
                         something different.",
                        call.name,
                        count - 1
                    );
                    decisions.push(Decision::ReplaceResult(
                        ToolResult::error(&call.id, text).with_flag(FLAG_LOOP_DETECTED),
                    ));
                }
            }
        }
        self.bound_memory();
        decisions
    }

    fn save_state(&self) -> serde_json::Value {
        let saved = SavedCounts {
            counts: self.counts.iter().map(|(k, v)| (*k, *v)).collect(),
            calls_seen: self.calls_seen,
        };
        serde_json::to_value(saved).unwrap_or_default()
    }

    fn load_state(&mut self, state: serde_json::Value) -> Result<(), GuardStateError> {
        let saved: SavedCounts =
            serde_json::from_value(state).map_err(|e| GuardStateError::from_serde("repeat_counter", e))?;
        self.counts = saved.counts.into_iter().collect();
        self.calls_seen = saved.calls_seen;
        Ok(())
    }
}
