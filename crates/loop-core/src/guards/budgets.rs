//! Budgets checked at every turn start (F4): max turns, token budget, tool-call budget, cost;
//! over the run or the current stretch (B16), and the totals of `budget.total`.

use crate::config::BudgetScope;
use crate::guard::{Decision, Guard, TurnView};
use crate::outcome::{LimitReason, StopCause};

/// Stops the loop at the first turn boundary where a configured budget is used up. It reads
/// the engine's counters, so it keeps no state of its own. A turn in flight is never cut short:
/// the check runs only before the next model call. With [`BudgetScope::Stretch`] the budgets
/// count the current stretch (the turns since the last user message); `budget.total` counts
/// everything either way.
#[derive(Debug, Clone, Copy, Default)]
pub struct Budgets;

impl Guard for Budgets {
    fn name(&self) -> &str {
        "budgets"
    }

    fn before_turn(&mut self, view: &TurnView<'_>) -> Vec<Decision> {
        let budget = &view.config.budget;
        let total = view.counters;
        let stretch;
        let c = match budget.scope {
            BudgetScope::Run => total,
            BudgetScope::Stretch => {
                stretch = total.in_stretch();
                &stretch
            }
        };
        let t = &budget.total;
        let reason = if budget.max_turns.is_some_and(|max| c.turns >= max)
            || t.max_turns.is_some_and(|max| total.turns >= max)
        {
            Some(LimitReason::MaxTurns)
        } else if budget.token_budget.is_some_and(|max| c.usage.total() >= max)
            || t.token_budget.is_some_and(|max| total.usage.total() >= max)
        {
            Some(LimitReason::TokenBudget)
        } else if budget.tool_call_budget.is_some_and(|max| c.tool_calls >= max)
            || t.tool_call_budget.is_some_and(|max| total.tool_calls >= max)
        {
            Some(LimitReason::ToolCallBudget)
        } else if budget.cost_limit.is_some_and(|max| c.cost >= max)
            || t.cost_limit.is_some_and(|max| total.cost >= max)
        {
            Some(LimitReason::CostLimit)
        } else {
            None
        };
        reason.map(|reason| vec![Decision::Stop(StopCause::Limit { reason })]).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::LoopConfig;
    use crate::guard::Counters;

    fn stops(config: &LoopConfig, counters: &Counters) -> bool {
        let view = TurnView { counters, messages: &[], config, elapsed: Default::default() };
        !Budgets.before_turn(&view).is_empty()
    }

    #[test]
    fn a_stretch_budget_counts_the_stretch_and_a_total_budget_everything() {
        let mut config = LoopConfig::default();
        config.budget.tool_call_budget = Some(10);
        let mut counters = Counters { user_turns: 1, tool_calls: 9, ..Counters::default() };
        counters.start_user_turn(Some(0));
        counters.tool_calls += 5;
        assert!(stops(&config, &counters), "over the run: 14 calls");
        config.budget.scope = BudgetScope::Stretch;
        assert!(!stops(&config, &counters), "5 calls in this stretch");
        config.budget.total.tool_call_budget = Some(14);
        assert!(stops(&config, &counters), "14 in all");
    }
}
