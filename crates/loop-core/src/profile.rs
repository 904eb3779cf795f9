//! Named sets of limits, for the two ways looprail meets an agent (B16).
//!
//! | profile | where | iteration cap | time limits (soft / hard) | counted over |
//! |---|---|---|---|---|
//! | `task` | a library [`Run`](crate::Run): one task, one run (the default of [`LoopConfig`]) | 50 turns | 15 / 20 min | the run |
//! | `coding-agent` | `looprail gateway`, the hooks and the audit: one long conversation | 1,000 turns | 8 / 12 h | each autonomous stretch |
//!
//! `task` keeps the seeds' numbers (S0, S2, S4): a run given one task that has not finished in
//! 50 turns or 20 minutes is lost. A coding agent is different: Claude Code, Codex and
//! OpenHands routinely make 100 to 300 tool calls for one user request, vendors report single
//! requests worked on for several hours, and the conversation lives on between requests. So
//! in `coding-agent` everything counts per stretch (the turns after one real user message, for
//! as long as they take, never the time the conversation waited for its user); the iteration cap
//! (1,000) is three times the longest healthy stretches reported, so that loops are ended by the
//! loop guard (within a few calls of their start) long before it; and the time limits (8 h
//! soft, 12 h hard) are a backstop for a wait that never ends, not a schedule. Spending is
//! bounded by explicit budgets, per stretch or over the conversation (`budget.total`), all
//! off by default.

use serde::{Deserialize, Serialize};

use crate::config::{BudgetScope, LoopConfig};

/// A named set of limits (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Profile {
    /// One task, one run: the seeds' 50 turns and 15 / 20 minutes over the run.
    #[default]
    Task,
    /// A coding agent's conversation: 1,000 turns and 8 / 12 hours per autonomous stretch.
    CodingAgent,
}

impl Profile {
    /// Both profiles, the library's default first.
    pub const ALL: [Profile; 2] = [Profile::Task, Profile::CodingAgent];

    /// The name used in config files and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Profile::Task => "task",
            Profile::CodingAgent => "coding-agent",
        }
    }

    /// The profile named `name`.
    pub fn from_name(name: &str) -> Option<Profile> {
        Self::ALL.into_iter().find(|p| p.name() == name)
    }

    /// The loop configuration of this profile (everything not named above at its default).
    ///
    /// ```
    /// use looprail_loop_core::config::{BudgetScope, LoopConfig};
    /// use looprail_loop_core::profile::Profile;
    ///
    /// assert_eq!(Profile::Task.config(), LoopConfig::default());
    /// let agent = Profile::CodingAgent.config();
    /// assert_eq!((agent.limits.max_iterations, agent.budget.scope), (1_000, BudgetScope::Stretch));
    /// assert_eq!(agent.budget.hard_time_limit_secs, 12 * 3600);
    /// ```
    pub fn config(self) -> LoopConfig {
        let mut config = LoopConfig::default();
        if self == Profile::CodingAgent {
            config.limits.max_iterations = 1_000;
            config.budget.scope = BudgetScope::Stretch;
            config.budget.soft_time_limit_secs = 8 * 3600;
            config.budget.hard_time_limit_secs = 12 * 3600;
        }
        config
    }
}
