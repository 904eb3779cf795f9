//! The [`Counters`] the engine keeps (turns, tool calls, usage, cost), and autonomous
//! stretches (B16): the model turns between two real user messages.
//!
//! One task given to a library [`Run`](crate::Run) is one run, and its budgets count the whole
//! run. An agent behind the gateway (or a hook) lives in one long conversation: a user asks, the
//! agent works for 5 or 300 tool calls, the user asks again hours later. There the unit of a
//! budget is the *stretch*: what the agent does on its own after one user message. With
//! [`BudgetScope::Stretch`](crate::config::BudgetScope::Stretch), the iteration cap, the budgets
//! and the time limits count the current stretch only, and its time is its own duration, never
//! the hours the conversation waited for its user; `budget.total` still counts everything.
//!
//! [`Counters`] keep the totals and, in [`StretchStart`], what they were when the current
//! stretch began:
//!
//! ```
//! use looprail_loop_core::guard::Counters;
//!
//! let mut counters = Counters { user_turns: 1, ..Counters::default() };
//! counters.turns = 40;
//! counters.tool_calls = 120;
//! counters.start_user_turn(Some(3_600_000)); // a new user message, an hour in
//! counters.turns += 2;
//! counters.tool_calls += 5;
//! let stretch = counters.in_stretch();
//! assert_eq!((stretch.turns, stretch.tool_calls, stretch.user_turns), (2, 5, 2));
//! assert_eq!(counters.stretch_elapsed_ms(3_660_000), 60_000); // a minute into the stretch
//! ```

use serde::{Deserialize, Serialize};

use crate::provider::Usage;

/// Counters the engine keeps, readable by guards and policies.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Counters {
    /// Model turns since the iteration counter was last reset (F11 `new_instruction` resets it).
    pub iterations: u32,
    /// Model turns of the loop in total.
    pub turns: u32,
    /// Tool calls requested by the model in total.
    pub tool_calls: u32,
    /// Token usage in total (fallback calls included).
    pub usage: Usage,
    /// Cost in total.
    pub cost: f64,
    /// Continuations of truncated replies in the current user turn (F12).
    pub max_tokens_recoveries: u32,
    /// User turns started (the first message counts as 1).
    pub user_turns: u32,
    /// The totals when the current stretch (the turns since the last user message) began;
    /// see the module docs.
    #[serde(default)]
    pub stretch: StretchStart,
}

/// The totals when the current stretch began, and when (ms on the run's clock).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StretchStart {
    /// Model turns before the stretch.
    pub turns: u32,
    /// Tool calls before the stretch.
    pub tool_calls: u32,
    /// Token usage before the stretch.
    pub usage: Usage,
    /// Cost before the stretch.
    pub cost: f64,
    /// When the stretch began, in ms on the clock of `TurnView::elapsed` (the run's or the
    /// conversation's), once known: the first moment the agent worked on it.
    pub started_ms: Option<u64>,
}

impl Counters {
    /// A new user message: a new user turn, and a new stretch starting at `now_ms` (on the
    /// clock of `TurnView::elapsed`; `None` when the time is not known yet, set by the next
    /// [`Counters::mark_stretch_time`]). The iteration counter and the continuations of
    /// truncated replies start again.
    pub fn start_user_turn(&mut self, now_ms: Option<u64>) {
        self.user_turns = self.user_turns.saturating_add(1);
        self.iterations = 0;
        self.max_tokens_recoveries = 0;
        self.stretch = StretchStart {
            turns: self.turns,
            tool_calls: self.tool_calls,
            usage: self.usage,
            cost: self.cost,
            started_ms: now_ms,
        };
    }

    /// Records `now_ms` as the current stretch's start if it has none yet.
    pub fn mark_stretch_time(&mut self, now_ms: u64) {
        self.stretch.started_ms.get_or_insert(now_ms);
    }

    /// The counters of the current stretch alone: turns, tool calls, usage and cost since it
    /// began (the iteration counter already counts the stretch; user turns stay the total).
    pub fn in_stretch(&self) -> Counters {
        let base = &self.stretch;
        let usage = Usage {
            input_tokens: self.usage.input_tokens.saturating_sub(base.usage.input_tokens),
            output_tokens: self.usage.output_tokens.saturating_sub(base.usage.output_tokens),
            cache_read_tokens: self.usage.cache_read_tokens.saturating_sub(base.usage.cache_read_tokens),
            cache_write_tokens: self.usage.cache_write_tokens.saturating_sub(base.usage.cache_write_tokens),
            estimated_tokens: self.usage.estimated_tokens.saturating_sub(base.usage.estimated_tokens),
        };
        Counters {
            turns: self.turns.saturating_sub(base.turns),
            tool_calls: self.tool_calls.saturating_sub(base.tool_calls),
            usage,
            cost: (self.cost - base.cost).max(0.0),
            stretch: StretchStart { started_ms: base.started_ms, ..StretchStart::default() },
            ..self.clone()
        }
    }

    /// How long the current stretch has run at `now_ms` (0 before its start is known).
    pub fn stretch_elapsed_ms(&self, now_ms: u64) -> u64 {
        self.stretch.started_ms.map_or(0, |start| now_ms.saturating_sub(start))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// The stretch's counters plus what came before always make the totals.
        #[test]
        fn a_stretch_and_its_start_make_the_totals(
            steps in prop::collection::vec((0u32..5, 0u32..9, 0u64..10_000, any::<bool>()), 1..40),
        ) {
            let mut counters = Counters { user_turns: 1, ..Counters::default() };
            for (turns, calls, tokens, new_user) in steps {
                if new_user {
                    counters.start_user_turn(None);
                }
                counters.turns += turns;
                counters.tool_calls += calls;
                counters.usage.input_tokens += tokens;
                let stretch = counters.in_stretch();
                prop_assert_eq!(stretch.turns + counters.stretch.turns, counters.turns);
                prop_assert_eq!(stretch.tool_calls + counters.stretch.tool_calls, counters.tool_calls);
                prop_assert_eq!(stretch.usage.total() + counters.stretch.usage.total(), counters.usage.total());
            }
        }
    }

    #[test]
    fn the_stretch_time_is_set_once() {
        let mut counters = Counters::default();
        counters.start_user_turn(None);
        assert_eq!(counters.stretch_elapsed_ms(5_000), 0, "not started yet");
        counters.mark_stretch_time(1_000);
        counters.mark_stretch_time(4_000);
        assert_eq!(counters.stretch_elapsed_ms(5_000), 4_000);
    }
}
