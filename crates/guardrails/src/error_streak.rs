//! Consecutive tool errors (F19, S0).

use serde::{Deserialize, Serialize};

use looprail_loop_core::event::Event;
use looprail_loop_core::guard::{
    Decision, Guard, GuardStateError, TurnView, state_from_value, state_to_value,
};
use looprail_loop_core::message::{Message, ToolCall, ToolResult};

/// After `threshold` tool errors in a row, injects a reflection message asking the model to
/// step back and change approach (again at every further `threshold` errors). The streak resets
/// on the next successful tool call and on a new user message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorStreak {
    threshold: u32,
    streak: u32,
}

impl ErrorStreak {
    /// Reflects after `threshold` consecutive errors.
    pub fn new(threshold: u32) -> Self {
        Self { threshold: threshold.max(1), streak: 0 }
    }

    /// Errors in a row so far.
    pub fn streak(&self) -> u32 {
        self.streak
    }
}

impl Guard for ErrorStreak {
    fn name(&self) -> &str {
        "error_streak"
    }

    fn after_tools(
        &mut self,
        _view: &TurnView<'_>,
        _calls: &[ToolCall],
        results: &[ToolResult],
    ) -> Vec<Decision> {
        let mut fired = false;
        for result in results {
            if result.is_error {
                self.streak += 1;
                fired |= self.streak.is_multiple_of(self.threshold);
            } else {
                self.streak = 0;
            }
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
    }

    fn save_state(&self) -> serde_json::Value {
        state_to_value(self)
    }

    fn load_state(&mut self, state: serde_json::Value) -> Result<(), GuardStateError> {
        *self = state_from_value("error_streak", state)?;
        Ok(())
    }
}
