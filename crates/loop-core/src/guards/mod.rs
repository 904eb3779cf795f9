//! The guards loop-core ships: [`TimeLimits`] (F6), [`Budgets`] (F4) and [`TodoNudge`] (F14).
//! Loop detectors and the escalation ladder live in `looprail-guardrails`.

mod budgets;
mod time_limits;
mod todo_nudge;

pub use budgets::Budgets;
pub use time_limits::TimeLimits;
pub use todo_nudge::{TODO_TOOL, TodoNudge};

use crate::config::LoopConfig;
use crate::guard::Guard;

/// The default guards, in F1 order: time limits first, then budgets, then the todo nudge.
pub fn defaults(config: &LoopConfig) -> Vec<Box<dyn Guard>> {
    vec![
        Box::new(TimeLimits::default()),
        Box::new(Budgets),
        Box::new(TodoNudge::new(config.guardrails.todo_nudge_cap)),
    ]
}
