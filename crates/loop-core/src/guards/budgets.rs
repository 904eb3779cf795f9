//! Budgets checked at every turn start (F4): max turns, token budget, tool-call budget, cost.

use crate::guard::{Decision, Guard, TurnView};
use crate::outcome::{LimitReason, StopCause};

/// Stops the loop at the first turn boundary where a configured budget is used up. It reads
/// the engine's counters, so it keeps no state of its own. A turn in flight is never cut short:
/// the check runs only before the next model call.
#[derive(Debug, Clone, Copy, Default)]
pub struct Budgets;

impl Guard for Budgets {
    fn name(&self) -> &str {
        "budgets"
    }

    fn before_turn(&mut self, view: &TurnView<'_>) -> Vec<Decision> {
        let budget = &view.config.budget;
        let c = view.counters;
        let reason = if budget.max_turns.is_some_and(|max| c.turns >= max) {
            Some(LimitReason::MaxTurns)
        } else if budget.token_budget.is_some_and(|max| c.usage.total() >= max) {
            Some(LimitReason::TokenBudget)
        } else if budget.tool_call_budget.is_some_and(|max| c.tool_calls >= max) {
            Some(LimitReason::ToolCallBudget)
        } else if budget.cost_limit.is_some_and(|max| c.cost >= max) {
            Some(LimitReason::CostLimit)
        } else {
            None
        };
        reason.map(|reason| vec![Decision::Stop(StopCause::Limit { reason })]).unwrap_or_default()
    }
}
