//! Consecutive tool errors (F19, S0), novelty-aware by default (B10).

use serde::{Deserialize, Serialize};

use looprail_loop_core::config::ConfigError;
use looprail_loop_core::event::Event;
use looprail_loop_core::guard::{
    Decision, Guard, GuardStateError, TurnView, state_from_value, state_to_value,
};
use looprail_loop_core::message::{Message, ToolCall, ToolResult};

use crate::signature::{CallSignature, observation_fingerprint};

/// Errors of one streak remembered at most (the streak itself keeps counting).
const STREAK_KEPT: usize = 64;

/// After `threshold` tool errors in a row, injects a reflection message asking the model to
/// step back and change approach. The streak resets on the next successful tool call and on a
/// new user message.
///
/// S0's rule reflects at every `threshold`-th error in a row ([`ErrorStreak::new`]). On real
/// runs most error streaks are an agent trying different things, each failing differently
/// (a missing file, then a wrong parameter, then a clash), and recovering by itself; so the
/// default stack uses [`ErrorStreak::repeats_only`]: it reflects only when the streak holds the
/// same call failing the same way twice (volatile numbers masked), i.e. errors without novelty.
///
/// ```
/// use looprail_guardrails::ErrorStreak;
/// assert!(ErrorStreak::new(0).is_err(), "0 is refused, not raised to 1");
/// let guard = ErrorStreak::repeats_only(3).unwrap();
/// assert_eq!(guard.streak(), 0);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorStreak {
    threshold: u32,
    streak: u32,
    #[serde(default)]
    repeats_only: bool,
    /// (call signature, observation) of the streak's errors since the last reflection.
    #[serde(default)]
    errors: Vec<(u64, u64)>,
}

impl ErrorStreak {
    /// S0's rule: reflects after every `threshold` consecutive errors. `threshold` must be at
    /// least 1 (the error names the key `error_streak`).
    pub fn new(threshold: u32) -> Result<Self, ConfigError> {
        if threshold == 0 {
            return Err(ConfigError::new(
                "error_streak",
                "must be at least 1 (leave the guard out to switch it off)",
            ));
        }
        Ok(Self { threshold, streak: 0, repeats_only: false, errors: Vec::new() })
    }

    /// Reflects once a streak of at least `threshold` errors holds a repeated error.
    pub fn repeats_only(threshold: u32) -> Result<Self, ConfigError> {
        Ok(Self { repeats_only: true, ..Self::new(threshold)? })
    }

    /// Errors in a row so far.
    pub fn streak(&self) -> u32 {
        self.streak
    }

    /// Counts one result; true when it completes a streak worth a reflection.
    fn count(&mut self, call: &ToolCall, result: &ToolResult) -> bool {
        if !result.is_error {
            self.streak = 0;
            self.errors.clear();
            return false;
        }
        self.streak += 1;
        if !self.repeats_only {
            return self.streak.is_multiple_of(self.threshold);
        }
        let error =
            (CallSignature::of(&call.name, &call.arguments).call, observation_fingerprint(&result.content));
        let repeated = self.errors.contains(&error);
        if self.errors.len() < STREAK_KEPT {
            self.errors.push(error);
        }
        let fire = repeated && self.errors.len() >= self.threshold as usize;
        if fire {
            // The next reflection needs another full streak with a repeat in it.
            self.errors.clear();
        }
        fire
    }
}

impl Guard for ErrorStreak {
    fn name(&self) -> &str {
        "error_streak"
    }

    fn after_tools(
        &mut self,
        _view: &TurnView<'_>,
        calls: &[ToolCall],
        results: &[ToolResult],
    ) -> Vec<Decision> {
        let mut fired = false;
        for (call, result) in calls.iter().zip(results) {
            fired |= self.count(call, result);
        }
        if !fired {
            return Vec::new();
        }
        let text = format!(
            "REFLECTION: your last {} tool calls failed. Before the next call, consider why they \
             failed and choose a different approach instead of another variation of the same one.",
            self.streak
        );
        vec![
            Decision::Inject(Message::internal_user("error_reflection", text)),
            Decision::Emit(Event::GuardIntervened {
                guard: "error_streak".into(),
                action: "reflection".into(),
            }),
        ]
    }

    fn on_user_turn(&mut self) {
        self.streak = 0;
        self.errors.clear();
    }

    fn save_state(&self) -> serde_json::Value {
        state_to_value(self)
    }

    fn load_state(&mut self, state: serde_json::Value) -> Result<(), GuardStateError> {
        *self = state_from_value("error_streak", state)?;
        Ok(())
    }
}
