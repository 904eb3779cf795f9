//! Soft and hard wall-clock limits (F6), over the run or the current stretch (B16).

use serde::{Deserialize, Serialize};

use crate::config::BudgetScope;
use crate::guard::{Decision, Guard, GuardStateError, TurnView, state_from_value, state_to_value};
use crate::outcome::{LimitReason, StopCause};

/// At the soft limit, stops the loop with [`LimitReason::SoftTimeLimit`]: the engine then
/// makes one final text-only "summarise what you have done" call and the run ends `timed_out`.
/// At the hard limit, stops with [`LimitReason::Timeout`] and a reply built without a model
/// call. Both are checked at turn boundaries only: nothing in flight is killed. With
/// [`BudgetScope::Stretch`] the time is the current stretch's own (since the first moment the
/// agent worked on the last user message), and each stretch gets its own soft limit.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TimeLimits {
    soft_fired: bool,
    /// The user turn the soft limit fired in (per-stretch limits fire once per stretch).
    #[serde(default)]
    soft_fired_turn: u32,
}

impl Guard for TimeLimits {
    fn name(&self) -> &str {
        "time_limits"
    }

    fn before_turn(&mut self, view: &TurnView<'_>) -> Vec<Decision> {
        let budget = &view.config.budget;
        let elapsed_ms = u64::try_from(view.elapsed.as_millis()).unwrap_or(u64::MAX);
        let (ms, fired) = match budget.scope {
            BudgetScope::Run => (elapsed_ms, self.soft_fired),
            BudgetScope::Stretch => (
                view.counters.stretch_elapsed_ms(elapsed_ms),
                self.soft_fired && self.soft_fired_turn == view.counters.user_turns,
            ),
        };
        let secs = ms / 1000;
        if budget.hard_time_limit_secs > 0 && secs >= budget.hard_time_limit_secs {
            return vec![Decision::Stop(StopCause::Limit { reason: LimitReason::Timeout })];
        }
        if budget.soft_time_limit_secs > 0 && secs >= budget.soft_time_limit_secs && !fired {
            self.soft_fired = true;
            self.soft_fired_turn = view.counters.user_turns;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::LoopConfig;
    use crate::guard::Counters;
    use std::time::Duration;

    fn reason(
        guard: &mut TimeLimits,
        config: &LoopConfig,
        counters: &Counters,
        at_secs: u64,
    ) -> Option<LimitReason> {
        let view = TurnView { counters, messages: &[], config, elapsed: Duration::from_secs(at_secs) };
        guard.before_turn(&view).into_iter().find_map(|d| match d {
            Decision::Stop(StopCause::Limit { reason }) => Some(reason),
            _ => None,
        })
    }

    #[test]
    fn a_stretch_counts_its_own_time_and_gets_its_own_soft_limit() {
        let mut config = LoopConfig::default();
        config.budget.scope = BudgetScope::Stretch;
        config.budget.soft_time_limit_secs = 60;
        config.budget.hard_time_limit_secs = 120;
        let mut guard = TimeLimits::default();
        let mut counters = Counters { user_turns: 1, ..Counters::default() };
        counters.mark_stretch_time(0);
        assert_eq!(reason(&mut guard, &config, &counters, 59), None);
        assert_eq!(reason(&mut guard, &config, &counters, 61), Some(LimitReason::SoftTimeLimit));
        assert_eq!(reason(&mut guard, &config, &counters, 62), None, "once per stretch");
        // The user answers three hours later: a new stretch, its own clock.
        counters.start_user_turn(Some(3 * 3600 * 1000));
        assert_eq!(reason(&mut guard, &config, &counters, 3 * 3600 + 30), None);
        assert_eq!(reason(&mut guard, &config, &counters, 3 * 3600 + 70), Some(LimitReason::SoftTimeLimit));
        assert_eq!(reason(&mut guard, &config, &counters, 3 * 3600 + 130), Some(LimitReason::Timeout));
        // Over the run, the same times are long past the hard limit.
        config.budget.scope = BudgetScope::Run;
        assert_eq!(
            reason(&mut TimeLimits::default(), &config, &counters, 3 * 3600 + 30),
            Some(LimitReason::Timeout)
        );
    }
}
