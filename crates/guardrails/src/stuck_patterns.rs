//! OpenHands' stuck detector, as a guard: a peer's rules kept for comparison (the
//! `openhands-stuck` preset), not part of the default stack.
//!
//! OpenHands (`StuckDetector`) ends a run with an error when the history after the last user
//! message ends in one of these patterns of tool calls:
//! - the same action with the same observation 4 times in a row;
//! - the same action 3 times in a row, each answered by an error;
//! - two actions alternating over the last 6 calls (A-B-A-B-A-B), each with the same
//!   observation every time.
//!
//! Observations are compared by their [`observation_fingerprint`] (volatile numbers masked,
//! where OpenHands drops process ids and the like). Its monologue and context-window rules see
//! messages rather than calls and are left out.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use looprail_loop_core::event::Event;
use looprail_loop_core::guard::{
    Decision, Guard, GuardStateError, TurnView, state_from_value, state_to_value,
};
use looprail_loop_core::message::{ToolCall, ToolResult};
use looprail_loop_core::outcome::StopCause;

use crate::signature::{CallSignature, observation_fingerprint};

/// Calls the longest rule looks back on.
const KEPT: usize = 6;

/// The guard's name, and its detector's in events.
pub const STUCK_PATTERNS: &str = "stuck_patterns";

/// One call as the rules compare it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
struct Seen {
    call: u64,
    observation: u64,
    is_error: bool,
}

/// OpenHands' stuck rules over tool calls (see the module docs): stops the run at the call
/// that completes a pattern.
///
/// ```
/// use looprail_guardrails::StuckPatterns;
/// use looprail_loop_core::prelude::*;
///
/// let run = Run::builder(LoopConfig::default()).user("go").guard(StuckPatterns::default()).build();
/// assert!(run.is_ok());
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StuckPatterns {
    recent: VecDeque<Seen>,
    calls_seen: u64,
}

impl StuckPatterns {
    /// Which rule the recent calls complete, if any.
    fn pattern(&self) -> Option<&'static str> {
        let last = |n: usize| self.recent.iter().skip(self.recent.len().saturating_sub(n));
        let all_same = |n: usize, same: &dyn Fn(&Seen, &Seen) -> bool| {
            self.recent.len() >= n && {
                let first = last(n).next();
                first.is_some_and(|f| last(n).all(|s| same(f, s)))
            }
        };
        if all_same(4, &|a, b| a.call == b.call && a.observation == b.observation) {
            return Some("repeated_action_observation");
        }
        if all_same(3, &|a, b| a.call == b.call && b.is_error) && last(3).all(|s| s.is_error) {
            return Some("repeated_action_error");
        }
        if self.recent.len() >= KEPT {
            let six: Vec<&Seen> = last(KEPT).collect();
            let alternating = six[0].call != six[1].call
                && (2..KEPT)
                    .all(|i| six[i].call == six[i - 2].call && six[i].observation == six[i - 2].observation);
            if alternating {
                return Some("alternating_pattern");
            }
        }
        None
    }
}

impl Guard for StuckPatterns {
    fn name(&self) -> &str {
        STUCK_PATTERNS
    }

    fn after_tools(
        &mut self,
        _view: &TurnView<'_>,
        calls: &[ToolCall],
        results: &[ToolResult],
    ) -> Vec<Decision> {
        for (call, result) in calls.iter().zip(results) {
            self.calls_seen += 1;
            if self.recent.len() == KEPT {
                self.recent.pop_front();
            }
            self.recent.push_back(Seen {
                call: CallSignature::of(&call.name, &call.arguments).call,
                observation: observation_fingerprint(&result.content),
                is_error: result.is_error,
            });
            if let Some(tier) = self.pattern() {
                let tool = call.name.clone();
                return vec![
                    Decision::Emit(Event::LoopDetected {
                        call_index: self.calls_seen - 1,
                        detector: STUCK_PATTERNS.into(),
                        tier: tier.into(),
                        tool: tool.clone(),
                        level: "stop".into(),
                        evidence: Vec::new(),
                    }),
                    Decision::Stop(StopCause::LoopDetected {
                        detector: STUCK_PATTERNS.into(),
                        detail: format!("stuck in a loop on `{tool}` ({tier})"),
                        evidence: None,
                    }),
                ];
            }
        }
        Vec::new()
    }

    fn on_user_turn(&mut self) {
        self.recent.clear();
    }

    fn save_state(&self) -> serde_json::Value {
        state_to_value(self)
    }

    fn load_state(&mut self, state: serde_json::Value) -> Result<(), GuardStateError> {
        *self = state_from_value(STUCK_PATTERNS, state)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use looprail_loop_core::config::LoopConfig;
    use looprail_loop_core::guard::Counters;

    fn stops(calls: &[(&str, &str, bool)]) -> Option<(usize, String)> {
        let config = LoopConfig::default();
        let counters = Counters::default();
        let view =
            TurnView { counters: &counters, messages: &[], config: &config, elapsed: Default::default() };
        let mut guard = StuckPatterns::default();
        for (i, (args, output, error)) in calls.iter().enumerate() {
            let call = ToolCall::new(format!("c{i}"), "bash", *args);
            let mut result = ToolResult::ok(format!("c{i}"), *output);
            result.is_error = *error;
            for d in guard.after_tools(&view, &[call], &[result]) {
                if let Decision::Emit(Event::LoopDetected { tier, .. }) = d {
                    return Some((i, tier));
                }
            }
        }
        None
    }

    #[test]
    fn the_three_rules() {
        let same = ("{\"c\": \"ls\"}", "a b", false);
        assert_eq!(stops(&[same; 4]), Some((3, "repeated_action_observation".into())));
        assert_eq!(stops(&[same; 3]), None);
        let failing = ("{\"c\": \"make\"}", "Error: 1", true);
        let failing_again = ("{\"c\": \"make\"}", "Error: another", true);
        assert_eq!(stops(&[failing, failing_again, failing]), Some((2, "repeated_action_error".into())));
        let (a, b) = (("{\"c\": \"a\"}", "x", false), ("{\"c\": \"b\"}", "y", false));
        assert_eq!(stops(&[a, b, a, b, a, b]), Some((5, "alternating_pattern".into())));
        assert_eq!(stops(&[a, b, a, b, a, ("{\"c\": \"b\"}", "z", false)]), None);
    }
}
