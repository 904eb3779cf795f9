//! Soft and hard wall-clock limits (F6).

use serde::{Deserialize, Serialize};

use crate::guard::{Decision, Guard, GuardStateError, TurnView, state_from_value, state_to_value};
use crate::outcome::{LimitReason, StopCause};

/// At the soft limit, stops the loop with [`LimitReason::SoftTimeLimit`]: the engine then
/// makes one final text-only "summarise what you have done" call and the run ends `timed_out`.
/// At the hard limit, stops with [`LimitReason::Timeout`] and a reply built without a model
/// call. Both are checked at turn boundaries only: nothing in flight is killed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TimeLimits {
    soft_fired: bool,
}

impl Guard for TimeLimits {
    fn name(&self) -> &str {
        "time_limits"
    }

    fn before_turn(&mut self, view: &TurnView<'_>) -> Vec<Decision> {
        let budget = &view.config.budget;
        let secs = view.elapsed.as_secs();
        if budget.hard_time_limit_secs > 0 && secs >= budget.hard_time_limit_secs {
            return vec![Decision::Stop(StopCause::Limit { reason: LimitReason::Timeout })];
        }
        if budget.soft_time_limit_secs > 0 && secs >= budget.soft_time_limit_secs && !self.soft_fired {
            self.soft_fired = true;
            return vec![Decision::Stop(StopCause::Limit { reason: LimitReason::SoftTimeLimit })];
        }
        Vec::new()
    }

    fn save_state(&self) -> serde_json::Value {
        state_to_value(self)
    }

    fn load_state(&mut self, state: serde_json::Value) -> Result<(), GuardStateError> {
        *self = state_from_value("time_limits", state)?;
        Ok(())
    }
}
