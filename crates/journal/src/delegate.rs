//! Delegation (F2, F37): the `delegate` tool starts a child run through the runner, one level
//! deeper, in a lane of its own, with the parent's id and a budget carved from what the parent
//! (and its earlier children) left, and returns the child's answer as the tool result. Off by
//! default ([`DelegationConfig::enabled`]).

use async_trait::async_trait;
use looprail_loop_core::config::{ConfigError, LoopConfig};
use looprail_loop_core::guard::Counters;
use looprail_loop_core::outcome::Outcome;
use looprail_loop_core::state::RunState;
use looprail_loop_core::tool::{Tool, ToolContext, ToolDefinition, ToolError, ToolOutput};
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use crate::JournalError;
use crate::store::{RunSpec, RunStatus, SharedStore};

/// The name of the delegation tool.
pub const DELEGATE_TOOL: &str = "delegate";

/// The config file's `[delegation]` section.
///
/// ```
/// use looprail_journal::DelegationConfig;
///
/// let config = DelegationConfig::default();
/// assert!(!config.enabled);
/// assert!(DelegationConfig { budget_share: 1.5, ..config }.validate().is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DelegationConfig {
    /// Offers the `delegate` tool to runs shallower than `loop.limits.max_delegation_depth`.
    pub enabled: bool,
    /// The share of the parent's remaining budgets (turns, tokens, tool calls, cost) a child
    /// gets, in (0, 1].
    pub budget_share: f64,
}

impl Default for DelegationConfig {
    fn default() -> Self {
        Self { enabled: false, budget_share: 0.5 }
    }
}

impl DelegationConfig {
    /// Checks the share, naming the key.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if !(self.budget_share > 0.0 && self.budget_share <= 1.0) {
            return Err(ConfigError::new("budget_share", "must be in (0, 1]"));
        }
        Ok(())
    }
}

/// What a parent has spent: its own counters at its latest checkpoint plus its children's.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Spent {
    /// Model turns.
    pub turns: u64,
    /// Tokens.
    pub tokens: u64,
    /// Tool calls.
    pub tool_calls: u64,
    /// Cost.
    pub cost: f64,
    /// Wall-clock time of the parent, in milliseconds.
    pub elapsed_ms: u64,
}

impl Spent {
    /// Adds a run's counters.
    pub fn add(&mut self, counters: &Counters) {
        self.turns += u64::from(counters.turns);
        self.tokens += counters.usage.total();
        self.tool_calls += u64::from(counters.tool_calls);
        self.cost += counters.cost;
    }
}

/// The child's configuration: the parent's, with each set budget replaced by `share` of what
/// is left of it, and the hard time limit by what is left of the parent's. `Err` names the
/// budget that has nothing left to give.
pub fn carve(parent: &LoopConfig, spent: &Spent, share: f64) -> Result<LoopConfig, String> {
    let mut child = parent.clone();
    let part = |limit: u64, used: u64, what: &str| -> Result<u64, String> {
        let left = limit.saturating_sub(used);
        let given = (left as f64 * share).floor() as u64;
        if given == 0 { Err(format!("no {what} left to give a sub-task")) } else { Ok(given) }
    };
    let b = &parent.budget;
    if let Some(turns) = b.max_turns {
        child.budget.max_turns = Some(part(u64::from(turns), spent.turns, "turns")? as u32);
    }
    if let Some(tokens) = b.token_budget {
        child.budget.token_budget = Some(part(tokens, spent.tokens, "tokens")?);
    }
    if let Some(calls) = b.tool_call_budget {
        child.budget.tool_call_budget = Some(part(u64::from(calls), spent.tool_calls, "tool calls")? as u32);
    }
    if let Some(cost) = b.cost_limit {
        let left = (cost - spent.cost).max(0.0) * share;
        if left <= 0.0 {
            return Err("no cost budget left to give a sub-task".into());
        }
        child.budget.cost_limit = Some(left);
    }
    if b.hard_time_limit_secs > 0 {
        let left = b.hard_time_limit_secs.saturating_sub(spent.elapsed_ms / 1000);
        if left < 2 {
            return Err("no time left to give a sub-task".into());
        }
        child.budget.hard_time_limit_secs = left;
        if child.budget.soft_time_limit_secs >= left {
            child.budget.soft_time_limit_secs = left - 1;
        }
    }
    Ok(child)
}

/// How a child run ended when the parent asked it to run.
pub(crate) enum ChildEnd {
    /// It ran to an outcome.
    Ran(Box<Outcome>),
    /// Its lane is busy with another run.
    LaneBusy,
    /// It halted for a human (resume-unsafe, say), described.
    Halted(String),
}

/// What the `delegate` tool needs of the runner that executes its parent: the store, the
/// parent's configuration, and running a child with a configuration of its own (the runner
/// implements it; this module knows no runner).
#[async_trait]
pub(crate) trait ChildRunner: Clone + Send + Sync + 'static {
    /// The run store.
    fn store(&self) -> &SharedStore;
    /// The parent's loop configuration.
    fn loop_config(&self) -> &LoopConfig;
    /// Starts the child `spec` with `config`, stopping when `cancel` fires.
    async fn start_child(
        &self,
        spec: &RunSpec,
        config: LoopConfig,
        cancel: CancellationToken,
    ) -> Result<ChildEnd, JournalError>;
    /// Picks up the interrupted child `run_id`.
    async fn resume_child(
        &self,
        run_id: &str,
        config: LoopConfig,
        cancel: CancellationToken,
    ) -> Result<ChildEnd, JournalError>;
    /// The outcome a finished child `run_id` stored.
    async fn finished_child(&self, run_id: &str, status: RunStatus) -> Result<Outcome, JournalError>;
}

/// The `delegate` tool of one parent run.
pub(crate) struct Delegate<R> {
    pub(crate) runner: R,
    pub(crate) parent: String,
    pub(crate) depth: u32,
    pub(crate) share: f64,
}

impl<R: ChildRunner> Delegate<R> {
    /// What the parent and its earlier children spent.
    async fn spent(&self) -> Result<Spent, crate::JournalError> {
        let store = self.runner.store();
        let mut spent = Spent::default();
        if let Some(checkpoint) = store.latest_checkpoint(&self.parent).await? {
            spent.add(&checkpoint.header.core.counters);
            spent.elapsed_ms = checkpoint.header.core.elapsed_ms;
        }
        for child in store.runs().await?.iter().filter(|r| r.parent_run_id.as_deref() == Some(&self.parent)) {
            if let Some(checkpoint) = store.latest_checkpoint(&child.run_id).await? {
                spent.add(&checkpoint.header.core.counters);
            }
        }
        Ok(spent)
    }

    /// Runs (or picks up, after a crash of the parent) the child `child_id`.
    async fn child_outcome(&self, child_id: &str, task: &str, cx: &ToolContext) -> Result<Outcome, String> {
        let store = self.runner.store();
        let existing = store.run(child_id).await.map_err(|e| e.to_string())?;
        let config = match existing {
            Some(_) => self.runner.loop_config().clone(),
            None => {
                carve(self.runner.loop_config(), &self.spent().await.map_err(|e| e.to_string())?, self.share)?
            }
        };
        let cancel = cx.cancel.clone();
        let end = match existing.map(|r| r.status) {
            None => {
                let spec = RunSpec {
                    run_id: child_id.to_owned(),
                    lane: format!("conversation:{child_id}"),
                    input: task.to_owned(),
                    parent_run_id: Some(self.parent.clone()),
                    depth: self.depth + 1,
                    recipe: None,
                };
                self.runner.start_child(&spec, config, cancel).await
            }
            // The parent was interrupted while its child ran: pick the child up.
            Some(RunStatus::Interrupted | RunStatus::TimedOut | RunStatus::Running) => {
                self.runner.resume_child(child_id, config, cancel).await
            }
            Some(status) => {
                self.runner.finished_child(child_id, status).await.map(|o| ChildEnd::Ran(Box::new(o)))
            }
        };
        match end.map_err(|e| e.to_string())? {
            ChildEnd::Ran(outcome) => Ok(*outcome),
            ChildEnd::LaneBusy => Err("the sub-task's lane is busy".into()),
            ChildEnd::Halted(halt) => Err(format!("the sub-task {child_id} halted for a human ({halt})")),
        }
    }
}

#[async_trait]
impl<R: ChildRunner> Tool for Delegate<R> {
    fn definition(&self) -> ToolDefinition {
        ToolDefinition::new(
            DELEGATE_TOOL,
            "Hand a self-contained sub-task to a helper agent that has the same tools and a fresh \
             context; returns the helper's final answer. Say everything it needs in `task`.",
            serde_json::json!({
                "type": "object",
                "properties": {"task": {"type": "string", "description": "The sub-task, self-contained."}},
                "required": ["task"]
            }),
        )
    }

    /// Safe to call again for the same call id: the child's id is derived from it, so a
    /// repeated call picks up the same child instead of starting another.
    fn idempotent(&self) -> bool {
        true
    }

    async fn call(&self, args: serde_json::Value, cx: ToolContext) -> Result<ToolOutput, ToolError> {
        let task = args.get("task").and_then(serde_json::Value::as_str).map(str::trim).unwrap_or_default();
        if task.is_empty() {
            return Err(ToolError::invalid_arguments("`task` must be a non-empty string"));
        }
        let child_id = format!("{}.{}", self.parent, cx.call_id);
        let outcome = self.child_outcome(&child_id, task, &cx).await.map_err(ToolError::failed)?;
        match outcome.state {
            RunState::Completed => Ok(outcome.final_text.into()),
            RunState::Cancelled => {
                let _ = self.runner.store().set_status(&child_id, RunStatus::Cancelled).await;
                Err(ToolError::failed(format!("the sub-task {child_id} was cancelled")))
            }
            RunState::WaitingOnHuman | RunState::WaitingForInput => Err(ToolError::failed(format!(
                "the sub-task {child_id} waits on a human: {}",
                outcome.final_text
            ))),
            state => Err(ToolError::failed(format!(
                "the sub-task {child_id} ended {state:?}; its last words: {}",
                outcome.final_text
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_child_gets_its_share_of_what_is_left_and_nothing_when_nothing_is() {
        let mut parent = LoopConfig::default();
        parent.budget.max_turns = Some(20);
        parent.budget.token_budget = Some(10_000);
        parent.budget.tool_call_budget = Some(10);
        parent.budget.cost_limit = Some(1.0);
        let spent = Spent { turns: 4, tokens: 2_000, tool_calls: 2, cost: 0.5, elapsed_ms: 200_000 };
        let child = carve(&parent, &spent, 0.5).unwrap();
        assert_eq!(child.budget.max_turns, Some(8));
        assert_eq!(child.budget.token_budget, Some(4_000));
        assert_eq!(child.budget.tool_call_budget, Some(4));
        assert!((child.budget.cost_limit.unwrap() - 0.25).abs() < 1e-12);
        assert_eq!(child.budget.hard_time_limit_secs, 1_000, "1200 s less the 200 s spent");
        assert!(child.validate().is_ok());
        let broke = Spent { tool_calls: 10, ..spent };
        assert!(carve(&parent, &broke, 0.5).unwrap_err().contains("tool calls"));
        // Unset budgets stay unset.
        assert_eq!(carve(&LoopConfig::default(), &spent, 0.5).unwrap().budget.token_budget, None);
    }
}
