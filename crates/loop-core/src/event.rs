//! The run's event stream (F9, F38): one typed [`Event`] enum whose every variant is also a
//! `tracing` event named by its stable string ([`Event::name`]).
//!
//! The library prints nothing; consumers subscribe with an [`EventSink`].

use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::outcome::LimitReason;
use crate::provider::{CallPurpose, Usage};
use crate::state::RunState;

/// The name a unit enum value is written under in events, reports and stores: its serde name
/// (`snake_case` for looprail's enums); `None` for a value that does not serialise to a string.
///
/// ```
/// use looprail_loop_core::event::wire_name;
/// use looprail_loop_core::outcome::LimitReason;
///
/// assert_eq!(wire_name(&LimitReason::MaxTurns).as_deref(), Some("max_turns"));
/// assert_eq!(wire_name(&42), None);
/// ```
pub fn wire_name<T: Serialize>(value: &T) -> Option<String> {
    match serde_json::to_value(value).ok()? {
        serde_json::Value::String(name) => Some(name),
        _ => None,
    }
}

/// Something that happened in a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    /// A turn began: `turn` of `cap` (for progress bars).
    TurnStarted {
        /// 1-based turn number since the last counter reset.
        turn: u32,
        /// The iteration cap in force.
        cap: u32,
    },
    /// A budget or cap stopped the loop (S0 `limits_reached`).
    LimitsReached {
        /// Which one.
        reason: LimitReason,
    },
    /// Remaining tokens or cost fell inside the configured reserve (F5); fired once per run.
    NearBudget {
        /// Tokens left before the token budget, if one is set.
        remaining_tokens: Option<u64>,
        /// Cost left before the cost limit, if one is set.
        remaining_cost: Option<f64>,
    },
    /// The run changed state.
    StateChanged {
        /// Old state.
        from: RunState,
        /// New state.
        to: RunState,
    },
    /// A model call returned.
    ModelResponded {
        /// The model that answered.
        model: String,
        /// Why the call was made.
        purpose: CallPurpose,
        /// Its usage, when reported.
        usage: Option<Usage>,
    },
    /// A piece of streamed text.
    TextDelta {
        /// The text.
        text: String,
    },
    /// A reply degenerated into repeating itself and was cut (B14; see
    /// [`watch`](crate::watch)).
    DegenerateReply {
        /// What degenerated: `text`, or `arguments` of a call.
        part: String,
        /// The repeated block's length in bytes.
        period: u32,
        /// Copies of it seen.
        repeats: u32,
        /// Bytes of the part kept.
        kept_bytes: u64,
        /// Bytes of the part read before it was cut.
        read_bytes: u64,
    },
    /// A truncated reply is being continued (F12).
    MaxTokensContinuation {
        /// 1-based continuation number.
        attempt: u32,
    },
    /// A tool call was rejected before running (unknown tool, invalid arguments).
    ToolCallRejected {
        /// The tool name the model used.
        tool: String,
        /// Why.
        reason: String,
    },
    /// A tool call is retried (F22).
    ToolRetry {
        /// The tool.
        tool: String,
        /// The call id.
        call_id: String,
        /// 1-based attempt about to start.
        attempt: u32,
        /// Wait before it, in milliseconds.
        delay_ms: u64,
        /// The error that caused it.
        cause: String,
    },
    /// A model call is retried after a transient failure (F21).
    ModelRetry {
        /// The model.
        model: String,
        /// 1-based attempt about to start.
        attempt: u32,
        /// Wait before it, in milliseconds.
        delay_ms: u64,
        /// The error that caused it.
        cause: String,
    },
    /// A fallback chain moved to its next model (F23).
    ModelFallback {
        /// The model that failed.
        from: String,
        /// The model tried next.
        to: String,
        /// Why.
        cause: String,
    },
    /// A retrieval result was deduplicated (F30).
    ChunksDeduplicated {
        /// The tool call.
        call_id: String,
        /// Chunks passed on to the model.
        kept: u32,
        /// Chunks dropped because the model had already seen them.
        duplicates: u32,
    },
    /// A loop detector fired (F15–F18, B3).
    LoopDetected {
        /// 0-based index, over the whole run, of the tool call at which it fired.
        call_index: u64,
        /// Which detector.
        detector: String,
        /// Detector tier, such as `identical` or `pattern`.
        tier: String,
        /// The tool involved.
        tool: String,
        /// The ladder level it led to.
        level: String,
        /// The earlier calls (run-wide indices) it matched: why it fired.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        evidence: Vec<u64>,
    },
    /// A guard moved up its escalation ladder.
    GuardrailEscalated {
        /// The guard.
        guard: String,
        /// The new level.
        level: String,
    },
    /// A guard's saved state could not be restored whole, so none of it was: the guard starts
    /// afresh (a setting changed since it was saved, or the state was damaged).
    GuardStateDiscarded {
        /// The guard.
        guard: String,
        /// Why its state did not load.
        reason: String,
    },
    /// A guard intervened without a ladder (reflection, todo nudge, hint).
    GuardIntervened {
        /// The guard.
        guard: String,
        /// What it did.
        action: String,
    },
    /// Compaction ran (F27, R1).
    CompactionRun {
        /// Tokens before.
        before_tokens: u64,
        /// Tokens after.
        after_tokens: u64,
        /// Messages before.
        before_messages: u64,
        /// Messages after.
        after_messages: u64,
    },
    /// A deeper recovery stage fired (F28, R2/R3).
    RecoveryFired {
        /// `deep_prune` or `ask_human`.
        stage: String,
        /// Tokens before.
        before_tokens: u64,
        /// Tokens after.
        after_tokens: u64,
        /// Messages before.
        before_messages: u64,
        /// Messages after.
        after_messages: u64,
    },
    /// The soft time limit fired; a final summary turn follows (F6).
    SoftLimit {
        /// Elapsed run time in milliseconds.
        elapsed_ms: u64,
    },
    /// The loop stopped abnormally and a fallback reply was produced (F10).
    FallbackReply {
        /// True when built without a model call.
        deterministic: bool,
    },
    /// A run began executing.
    RunStarted {
        /// The run id.
        run_id: String,
    },
    /// A run completed.
    RunCompleted {
        /// The run id.
        run_id: String,
    },
    /// A run observed its cancel request and exited.
    RunCancelled {
        /// The run id.
        run_id: String,
    },
    /// A run ended in a failure state.
    RunFailed {
        /// The run id.
        run_id: String,
        /// The terminal state.
        state: RunState,
        /// Why.
        cause: String,
    },
    /// Resume halted because the next action could not be proved safe (F34).
    RunResumeUnsafe {
        /// The run id.
        run_id: String,
        /// The tool call that blocked resume; empty when something else did.
        call_id: String,
        /// Why resume halted (`side_effect_interrupted`, `system_prompt_changed`).
        #[serde(default)]
        reason: String,
    },
    /// The reconciler ran (F33).
    RunReconcile {
        /// Runs marked timed out.
        timed_out: u64,
        /// Runs offered for resume.
        resumable: u64,
        /// Runs cancelled after the cancel timeout.
        cancelled: u64,
    },
    /// A lane failed to start its next queued run (F31).
    DispatchNextFailed {
        /// The lane key.
        lane: String,
        /// Why.
        cause: String,
    },
}

impl Event {
    /// The stable name of this event (F38), also used as the `tracing` event name.
    pub fn name(&self) -> &'static str {
        match self {
            Event::TurnStarted { .. } => "agent.turn.started",
            Event::LimitsReached { .. } => "limits_reached",
            Event::NearBudget { .. } => "agent.budget.near",
            Event::StateChanged { .. } => "agent.state.changed",
            Event::ModelResponded { .. } => "agent.model.responded",
            Event::TextDelta { .. } => "agent.text.delta",
            Event::DegenerateReply { .. } => "agent.reply.degenerate",
            Event::MaxTokensContinuation { .. } => "agent.max_tokens.continuation",
            Event::ToolCallRejected { .. } => "agent.tool.rejected",
            Event::ToolRetry { .. } => "agent.tool.retry",
            Event::ModelRetry { .. } => "agent.model.retry",
            Event::ModelFallback { .. } => "agent.model.fallback",
            Event::ChunksDeduplicated { .. } => "agent.rag.dedup",
            Event::LoopDetected { .. } => "agent.loop.detected",
            Event::GuardrailEscalated { .. } => "agent.guardrail.escalated",
            Event::GuardIntervened { .. } => "agent.guardrail.intervened",
            Event::GuardStateDiscarded { .. } => "agent.guardrail.state_discarded",
            Event::CompactionRun { .. } => "agent.compaction.run",
            Event::RecoveryFired { .. } => "agent.recovery.fired",
            Event::SoftLimit { .. } => "agent.exhaustion.soft_limit",
            Event::FallbackReply { .. } => "agent.fallback.reply",
            Event::RunStarted { .. } => "agent_run.started",
            Event::RunCompleted { .. } => "agent_run.completed",
            Event::RunCancelled { .. } => "agent_run.cancelled",
            Event::RunFailed { .. } => "agent_run.failed",
            Event::RunResumeUnsafe { .. } => "agent_run.resume_unsafe",
            Event::RunReconcile { .. } => "agent_run.reconcile",
            Event::DispatchNextFailed { .. } => "agent_run.dispatch_next_failed",
        }
    }

    /// Emits this event through `tracing` under its stable name, with the payload as JSON.
    pub fn trace(&self) {
        macro_rules! named {
            ($($name:literal),*) => {
                match self.name() {
                    $($name => tracing::info!(name: $name, target: "looprail", payload = %self),)*
                    _ => tracing::info!(target: "looprail", event = self.name(), payload = %self),
                }
            };
        }
        if matches!(self, Event::TextDelta { .. }) {
            return; // far too chatty for logs; stream consumers get it from the sink
        }
        named!(
            "agent.turn.started",
            "limits_reached",
            "agent.budget.near",
            "agent.state.changed",
            "agent.model.responded",
            "agent.reply.degenerate",
            "agent.max_tokens.continuation",
            "agent.tool.rejected",
            "agent.tool.retry",
            "agent.model.retry",
            "agent.model.fallback",
            "agent.rag.dedup",
            "agent.loop.detected",
            "agent.guardrail.escalated",
            "agent.guardrail.intervened",
            "agent.guardrail.state_discarded",
            "agent.compaction.run",
            "agent.recovery.fired",
            "agent.exhaustion.soft_limit",
            "agent.fallback.reply",
            "agent_run.started",
            "agent_run.completed",
            "agent_run.cancelled",
            "agent_run.failed",
            "agent_run.resume_unsafe",
            "agent_run.reconcile",
            "agent_run.dispatch_next_failed"
        );
    }
}

impl fmt::Display for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match serde_json::to_string(self) {
            Ok(json) => f.write_str(&json),
            Err(_) => f.write_str(self.name()),
        }
    }
}

type EventCallback = Arc<dyn Fn(&Event) + Send + Sync>;

/// Where a run's events go. Cloning shares the destination. Every event is traced as well.
#[derive(Clone, Default)]
pub struct EventSink {
    target: Option<EventCallback>,
}

impl fmt::Debug for EventSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EventSink").field("attached", &self.target.is_some()).finish()
    }
}

impl EventSink {
    /// A sink that only traces.
    pub fn none() -> Self {
        Self::default()
    }

    /// A sink calling `f` for every event.
    pub fn new(f: impl Fn(&Event) + Send + Sync + 'static) -> Self {
        Self { target: Some(Arc::new(f)) }
    }

    /// A sink feeding an unbounded channel, and the receiving end.
    pub fn channel() -> (Self, tokio::sync::mpsc::UnboundedReceiver<Event>) {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        (Self::new(move |e| drop(tx.send(e.clone()))), rx)
    }

    /// Delivers one event.
    pub fn emit(&self, event: &Event) {
        event.trace();
        if let Some(target) = &self.target {
            target(event);
        }
    }
}
