//! The tool phase of a turn: the model's calls checked and handed to the driver, their results
//! taken back through the guards, and the pause when the model asks a human.

use crate::engine::io::{Action, Tick};
use crate::engine::run::{EngineError, Phase, Run};
use crate::engine::tool_calls::{truncate_output, validate_call};
use crate::event::Event;
use crate::guard::Decision;
use crate::message::{Message, ToolCall, ToolResult};
use crate::outcome::StopCause;
use crate::state::RunState;
use crate::store::CheckpointKind;

impl Run {
    pub(super) fn dispatch_tools(&mut self, calls: Vec<ToolCall>, tick: Tick) -> Result<Action, EngineError> {
        let counters = &mut self.core.counters;
        counters.tool_calls =
            counters.tool_calls.saturating_add(u32::try_from(calls.len()).unwrap_or(u32::MAX));
        let human_tool = self.core.config.guardrails.ask_human_tool.clone();
        let mut prefilled = Vec::new();
        let mut runnable = Vec::new();
        let mut human_call = None;
        for call in &calls {
            if human_tool.as_deref() == Some(call.name.as_str()) && human_call.is_none() {
                human_call = Some(call.clone());
                continue;
            }
            match validate_call(call, &self.core.tools) {
                Ok(()) => runnable.push(call.clone()),
                Err(result) => {
                    let reason = result.flag.clone().unwrap_or_default();
                    self.emit(Event::ToolCallRejected { tool: call.name.clone(), reason });
                    prefilled.push(result);
                }
            }
        }
        let decisions = self.view_guards(|g, v| g.before_tools(v, &runnable));
        let mut deferred = Vec::new();
        let mut other = Vec::new();
        for decision in decisions {
            match decision {
                Decision::ReplaceResult(result) => {
                    runnable.retain(|c| c.id != result.call_id);
                    prefilled.retain(|r| r.call_id != result.call_id);
                    prefilled.push(result);
                }
                decision => other.push(decision),
            }
        }
        if let Some(cause) = self.apply(other, Some(&mut deferred)) {
            return self.stop(cause);
        }
        self.set_state(RunState::WaitingForTool)?;
        if runnable.is_empty() {
            return self.on_tools_done(calls, prefilled, human_call, deferred, Vec::new(), tick);
        }
        let dispatched = runnable.clone();
        self.core.phase = Phase::AwaitingTools { batch: calls, dispatched, prefilled, human_call, deferred };
        Ok(Action::RunTools(runnable))
    }

    pub(super) fn on_tools_done(
        &mut self,
        batch: Vec<ToolCall>,
        mut prefilled: Vec<ToolResult>,
        human_call: Option<ToolCall>,
        deferred: Vec<Message>,
        mut results: Vec<ToolResult>,
        tick: Tick,
    ) -> Result<Action, EngineError> {
        self.set_state(RunState::Running)?;
        let max_bytes = self.core.config.limits.max_tool_output_bytes;
        let human_id = human_call.as_ref().map(|c| c.id.as_str());
        let mut ordered_calls = Vec::with_capacity(batch.len());
        let mut ordered = Vec::with_capacity(batch.len());
        for call in batch {
            if Some(call.id.as_str()) == human_id {
                continue;
            }
            let found = prefilled
                .iter()
                .position(|r| r.call_id == call.id)
                .map(|i| prefilled.swap_remove(i))
                .or_else(|| {
                    results.iter().position(|r| r.call_id == call.id).map(|i| results.swap_remove(i))
                });
            let mut result = found.unwrap_or_else(|| {
                ToolResult::error(&call.id, "Error: the tool produced no result for this call.")
            });
            truncate_output(&mut result.content, max_bytes);
            self.messages.push(Message::tool_result(result.clone()));
            ordered.push(result);
            ordered_calls.push(call);
        }
        if !results.is_empty() {
            tracing::warn!(extra = results.len(), "tool results for unknown call ids were dropped");
        }
        self.checkpoint(CheckpointKind::ToolResult);
        self.messages.extend(deferred);
        let decisions = self.view_guards(|g, v| g.after_tools(v, &ordered_calls, &ordered));
        if let Some(cause) = self.apply(decisions, None) {
            return self.stop(cause);
        }
        if let Some(call) = human_call {
            return self.pause_for_human(call);
        }
        if tick.cancel_requested {
            return self.stop(StopCause::Cancelled);
        }
        self.begin_turn(tick)
    }

    pub(super) fn pause_for_human(&mut self, call: ToolCall) -> Result<Action, EngineError> {
        let question = serde_json::from_str::<serde_json::Value>(&call.arguments)
            .ok()
            .and_then(|v| v.get("question").and_then(|q| q.as_str()).map(str::to_owned))
            .unwrap_or_else(|| call.arguments.clone());
        self.set_state(RunState::WaitingOnHuman)?;
        self.checkpoint(CheckpointKind::HumanPause);
        let outcome =
            self.outcome(StopCause::HandedToHuman { question: question.clone() }, question.clone(), None);
        self.core.phase = Phase::AwaitingHuman { call_id: call.id, question };
        Ok(Action::Finish(outcome))
    }
}
