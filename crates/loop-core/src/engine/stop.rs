//! How a run ends: the open calls closed, the stop's reply (none, built here, or asked of the
//! model with tools off: F10) and the [`Outcome`] with its final checkpoint.

use crate::engine::fallback::{deterministic_reply, fallback_instruction};
use crate::engine::io::{Action, CallSpec};
use crate::engine::run::{EngineError, Phase, Run};
use crate::engine::tool_calls::FLAG_NOT_EXECUTED;
use crate::event::Event;
use crate::message::{Message, Role, ToolResult};
use crate::outcome::{FallbackKind, LimitReason, Outcome, ReplyMode, StopCause};
use crate::provider::CallPurpose;
use crate::state::RunState;
use crate::store::CheckpointKind;
use crate::tool::ToolChoice;

impl Run {
    /// Adds error results for tool calls of the last assistant message that have none, so
    /// the history stays valid for providers (every call answered).
    pub(super) fn close_open_calls(&mut self) {
        let mut answered = Vec::new();
        let mut index = self.messages.len();
        while index > 0 && self.messages[index - 1].role == Role::Tool {
            index -= 1;
            answered.extend(self.messages[index].tool_results().map(|r| r.call_id.clone()));
        }
        let Some(assistant) = index.checked_sub(1).map(|i| &self.messages[i]) else {
            return;
        };
        if assistant.role != Role::Assistant {
            return;
        }
        let missing: Vec<ToolResult> = assistant
            .tool_calls()
            .filter(|c| !answered.contains(&c.id))
            .map(|c| {
                ToolResult::error(&c.id, "Not executed: the run stopped before this call ran.")
                    .with_flag(FLAG_NOT_EXECUTED)
            })
            .collect();
        self.messages.extend(missing.into_iter().map(Message::tool_result));
    }

    pub(super) fn stop(&mut self, cause: StopCause) -> Result<Action, EngineError> {
        if self.core.state == RunState::WaitingForTool {
            self.set_state(RunState::Running)?;
        }
        self.close_open_calls();
        if let StopCause::Limit { reason } = &cause {
            self.emit(Event::LimitsReached { reason: *reason });
        }
        if let StopCause::Limit { reason: LimitReason::SoftTimeLimit } = &cause {
            self.emit(Event::SoftLimit { elapsed_ms: self.core.elapsed_ms });
        }
        match cause.reply_mode() {
            ReplyMode::Silent => self.finish(cause, String::new(), None),
            ReplyMode::Deterministic => {
                let text = deterministic_reply(&cause, &self.messages);
                self.emit(Event::FallbackReply { deterministic: true });
                self.messages.push(Message::assistant(text.clone()));
                self.finish(cause, text, Some(FallbackKind::Deterministic))
            }
            ReplyMode::ModelText | ReplyMode::FallbackCall => {
                let purpose = match cause {
                    StopCause::Limit { reason: LimitReason::SoftTimeLimit } => CallPurpose::SoftLimitSummary,
                    _ => CallPurpose::Fallback,
                };
                let spec = CallSpec {
                    purpose,
                    tool_choice: ToolChoice::None,
                    instruction: Some(fallback_instruction(&cause)),
                };
                self.core.pending_stop = Some(cause);
                self.core.phase = Phase::AwaitingModel { spec: spec.clone() };
                Ok(Action::CallModel(spec))
            }
        }
    }

    pub(super) fn finish_fallback(&mut self, text: Option<String>) -> Result<Action, EngineError> {
        let cause = self
            .core
            .pending_stop
            .take()
            .unwrap_or(StopCause::Guard { guard: "engine".into(), detail: "fallback without a stop".into() });
        let (text, kind) = match text {
            Some(text) => (text, FallbackKind::ModelCall),
            None => (deterministic_reply(&cause, &self.messages), FallbackKind::Deterministic),
        };
        self.emit(Event::FallbackReply { deterministic: kind == FallbackKind::Deterministic });
        self.messages.push(Message::assistant(text.clone()));
        self.finish(cause, text, Some(kind))
    }

    pub(super) fn finish(
        &mut self,
        cause: StopCause,
        text: String,
        fallback: Option<FallbackKind>,
    ) -> Result<Action, EngineError> {
        self.set_state(cause.terminal_state())?;
        let kind = if self.core.state == RunState::WaitingOnHuman {
            CheckpointKind::HumanPause
        } else {
            CheckpointKind::Final
        };
        self.checkpoint(kind);
        let outcome = self.outcome(cause, text, fallback);
        self.core.phase = Phase::Finished { outcome: outcome.clone() };
        Ok(Action::Finish(outcome))
    }

    pub(super) fn outcome(
        &self,
        stop: StopCause,
        final_text: String,
        fallback: Option<FallbackKind>,
    ) -> Outcome {
        let counters = &self.core.counters;
        Outcome {
            state: self.core.state,
            stop,
            final_text,
            fallback,
            usage: counters.usage,
            cost: counters.cost,
            turns: counters.turns,
            tool_calls: counters.tool_calls,
            moderated: None,
            structured: None,
            citations: Vec::new(),
        }
    }
}
