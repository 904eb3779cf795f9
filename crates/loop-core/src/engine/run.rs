//! [`Run`]: the loop as a state machine that does no I/O, and its serde form (its builder is
//! [`RunBuilder`](super::RunBuilder)).

use std::collections::{BTreeMap, VecDeque};
use std::time::Duration;

use serde::{Deserialize, Serialize};

pub use super::error::EngineError;
use crate::config::LoopConfig;
use crate::context::ContextPolicy;
use crate::engine::io::{CallSpec, Effect};
use crate::event::Event;
use crate::guard::{Counters, Guard};
use crate::message::{Message, Role, ToolCall, ToolResult};
use crate::outcome::{Outcome, StopCause};
use crate::provider::ModelRequest;
use crate::state::RunState;
use crate::store::CheckpointKind;
use crate::tool::{ToolChoice, ToolDefinition};

/// Where the engine is between steps.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "phase", rename_all = "snake_case")]
pub enum Phase {
    /// At a turn boundary; the next step starts a turn.
    Ready,
    /// A model call is out.
    AwaitingModel {
        /// The call.
        spec: CallSpec,
    },
    /// A tool batch is out.
    AwaitingTools {
        /// Every call of the batch, in the model's order.
        batch: Vec<ToolCall>,
        /// The calls sent to the driver.
        dispatched: Vec<ToolCall>,
        /// Results decided without running (rejected or replaced calls).
        prefilled: Vec<ToolResult>,
        /// An `ask_human` call in the batch, answered by a person after the batch.
        human_call: Option<ToolCall>,
        /// Messages guards asked to add once the results are in.
        deferred: Vec<Message>,
    },
    /// A summary for the context policy is being written.
    AwaitingSummary {
        /// The request (kept so a restored run can ask again).
        request: crate::context::SummaryRequest,
        /// The call to retry after it, when the summary answers a context overflow.
        retry: Option<CallSpec>,
    },
    /// The max-iterations handler is being asked.
    AwaitingIterationDecision {
        /// Iterations consumed.
        count: u32,
    },
    /// Waiting for a human's answer to an `ask_human` call.
    AwaitingHuman {
        /// The call being answered.
        call_id: String,
        /// The question.
        question: String,
    },
    /// Done; the outcome is kept so a repeated `Start` returns it again.
    Finished {
        /// The outcome.
        outcome: Outcome,
    },
}

/// Everything about a run except its messages, guards and policy, as plain serde data.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunCore {
    /// The configuration the run was built with.
    pub config: LoopConfig,
    /// The run state (F8).
    pub state: RunState,
    /// The engine phase.
    pub phase: Phase,
    /// Counters.
    pub counters: Counters,
    /// Tool definitions sent to the model (`ask_human` included when on).
    pub tools: Vec<ToolDefinition>,
    /// Delegation depth: 0 for a top-level run.
    pub depth: u32,
    /// The iteration cap in force for this run (a per-run override of `limits.max_iterations`).
    pub iteration_cap: u32,
    /// Elapsed run time at the last step, in milliseconds.
    pub elapsed_ms: u64,
    /// A tool choice a guard forced for the next call.
    pub pending_choice: Option<ToolChoice>,
    /// Text of truncated replies being continued (F12).
    pub partial_text: String,
    /// The stop being answered by a fallback call.
    pub pending_stop: Option<StopCause>,
    /// True once `NearBudget` was emitted.
    pub near_budget_emitted: bool,
    /// True once this turn's call was retried after a context overflow.
    #[serde(default)]
    pub overflow_retried: bool,
    /// A stable hash of the system prompt (F34: resume halts if it changed).
    pub system_prompt_hash: Option<String>,
    /// Tool-call ids the engine has handed out (`lr-0`, `lr-1`, ...): the next call's number.
    #[serde(default)]
    pub calls_assigned: u64,
}

/// The serde form of a run without its messages: what a checkpoint stores beside them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunHeader {
    /// Engine data.
    pub core: RunCore,
    /// Number of messages at the checkpoint (the message cursor).
    pub message_count: usize,
    /// Guard states by guard name.
    pub guards: BTreeMap<String, serde_json::Value>,
    /// The context policy's state.
    pub policy: serde_json::Value,
}

/// An agent loop as a state machine that does no I/O (quinn-proto style).
///
/// Feed it [`Input`](crate::engine::Input)s with [`Run::step`]; it answers with the next
/// [`Action`](crate::engine::Action) and queues [`Effect`]s (events, checkpoints) to drain with
/// [`Run::poll_effect`]. The [`Driver`](crate::driver::Driver) does this with real I/O; tests and
/// simulations do it by hand.
///
/// ```
/// use std::time::Duration;
/// use looprail_loop_core::prelude::*;
///
/// let mut run = Run::builder(LoopConfig::default()).user("What is 2 + 2?").build().unwrap();
/// let action = run.step(Input::Start, Tick::at(Duration::ZERO)).unwrap();
/// assert!(matches!(action, Action::CallModel(_)));
///
/// let reply = ModelResponse::text("demo-model", "4");
/// match run.step(Input::ModelReply(reply), Tick::at(Duration::from_secs(1))).unwrap() {
///     Action::Finish(outcome) => {
///         assert_eq!(outcome.final_text, "4");
///         assert_eq!(outcome.state, RunState::Completed);
///     }
///     other => panic!("unexpected {other:?}"),
/// }
/// ```
pub struct Run {
    pub(crate) core: RunCore,
    pub(crate) messages: Vec<Message>,
    pub(crate) guards: Vec<Box<dyn Guard>>,
    pub(crate) policy: Box<dyn ContextPolicy>,
    pub(crate) effects: VecDeque<Effect>,
}

impl std::fmt::Debug for Run {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Run")
            .field("state", &self.core.state)
            .field("phase", &self.core.phase)
            .field("messages", &self.messages.len())
            .field("guards", &self.guards.iter().map(|g| g.name().to_owned()).collect::<Vec<_>>())
            .finish()
    }
}

/// Capacity for a history of `len` messages that is about to grow.
pub(super) fn headroom(len: usize) -> usize {
    len + len / 2 + 16
}

/// A stable 64-bit FNV-1a hash of a system prompt, as hex.
pub fn system_prompt_hash(text: &str) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in text.as_bytes() {
        hash ^= u64::from(*byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{hash:016x}")
}

pub(super) fn system_hash_of(messages: &[Message]) -> Option<String> {
    messages
        .iter()
        .find(|m| m.role == Role::System)
        .and_then(Message::joined_text)
        .map(|t| system_prompt_hash(&t))
}

/// The prefix of the tool-call ids the engine hands out (`lr-0`, `lr-1`, ...).
pub const CALL_ID_PREFIX: &str = "lr-";

/// The first call number no call in `messages` uses (a history may come from an earlier run).
pub(super) fn next_call_number(messages: &[Message]) -> u64 {
    messages
        .iter()
        .flat_map(Message::tool_calls)
        .filter_map(|c| c.id.strip_prefix(CALL_ID_PREFIX)?.parse::<u64>().ok())
        .max()
        .map_or(0, |n| n.saturating_add(1))
}

impl Run {
    /// The conversation.
    pub fn messages(&self) -> &[Message] {
        &self.messages
    }

    /// The conversation without runtime-internal messages (what a UI shows).
    pub fn visible_messages(&self) -> impl Iterator<Item = &Message> {
        self.messages.iter().filter(|m| !m.is_internal())
    }

    /// The run state.
    pub fn state(&self) -> RunState {
        self.core.state
    }

    /// The engine phase.
    pub fn phase(&self) -> &Phase {
        &self.core.phase
    }

    /// The counters.
    pub fn counters(&self) -> &Counters {
        &self.core.counters
    }

    /// The configuration.
    pub fn config(&self) -> &LoopConfig {
        &self.core.config
    }

    /// The delegation depth.
    pub fn depth(&self) -> u32 {
        self.core.depth
    }

    /// The tool definitions sent to the model.
    pub fn tool_definitions(&self) -> &[ToolDefinition] {
        &self.core.tools
    }

    /// Elapsed run time at the last step (carried across restarts).
    pub fn elapsed(&self) -> Duration {
        Duration::from_millis(self.core.elapsed_ms)
    }

    /// The system prompt's hash at build time.
    pub fn system_prompt_hash(&self) -> Option<&str> {
        self.core.system_prompt_hash.as_deref()
    }

    /// The next queued side effect, in order.
    pub fn poll_effect(&mut self) -> Option<Effect> {
        self.effects.pop_front()
    }

    /// The request for a [`CallSpec`], borrowing the history (no copy).
    pub fn model_request<'a>(&'a self, spec: &'a CallSpec) -> ModelRequest<'a> {
        ModelRequest {
            messages: &self.messages,
            tools: &self.core.tools,
            tool_choice: spec.tool_choice.clone(),
            max_output_tokens: self.core.config.limits.max_output_tokens,
            instruction: spec.instruction.as_deref(),
            purpose: spec.purpose,
        }
    }

    /// True when the remaining tokens or cost are inside the configured reserve (F5).
    pub fn near_budget(&self) -> bool {
        let config = &self.core.config;
        let counters = &self.core.counters;
        let tokens_near = config.budget.token_budget.is_some_and(|budget| {
            budget.saturating_sub(counters.usage.total()) <= config.guardrails.reserve_tokens
        });
        let cost_near = config
            .budget
            .cost_limit
            .is_some_and(|limit| limit - counters.cost <= limit * config.guardrails.reserve_cost_fraction);
        tokens_near || cost_near
    }

    /// The run's serde form without messages (a checkpoint header).
    pub fn header(&self) -> RunHeader {
        RunHeader {
            core: self.core.clone(),
            message_count: self.messages.len(),
            guards: self.guards.iter().map(|g| (g.name().to_owned(), g.save_state())).collect(),
            policy: self.policy.save_state(),
        }
    }

    /// Rebuilds a run from a checkpoint. Guards and the policy are built by the caller (they
    /// are code) and get their saved state back by name; a guard without saved state starts
    /// fresh.
    pub fn restore(
        header: RunHeader,
        messages: Vec<Message>,
        mut guards: Vec<Box<dyn Guard>>,
        mut policy: Box<dyn ContextPolicy>,
    ) -> Result<Run, EngineError> {
        if header.message_count != messages.len() {
            return Err(EngineError::CorruptSnapshot(format!(
                "header counts {} messages, {} were stored",
                header.message_count,
                messages.len()
            )));
        }
        let mut states = header.guards;
        for guard in &mut guards {
            if let Some(state) = states.remove(guard.name()) {
                guard.load_state(state)?;
            }
        }
        policy.load_state(header.policy)?;
        let mut messages = messages;
        messages.reserve(headroom(messages.len()) - messages.len());
        Ok(Run { core: header.core, messages, guards, policy, effects: VecDeque::new() })
    }

    pub(crate) fn emit(&mut self, event: Event) {
        self.effects.push_back(Effect::Emit(event));
    }

    pub(crate) fn checkpoint(&mut self, kind: CheckpointKind) {
        self.effects.push_back(Effect::Checkpoint(kind));
    }

    pub(crate) fn set_state(&mut self, to: RunState) -> Result<(), EngineError> {
        let from = self.core.state;
        if from == to {
            return Ok(());
        }
        self.core.state.transition(to)?;
        self.emit(Event::StateChanged { from, to });
        Ok(())
    }
}
