//! The transitions of [`Run`]: one turn as data flows (ARCHITECTURE.md). How a run ends is
//! [`stop`](super::stop).

use std::time::Duration;

use crate::context::ContextView;
use crate::engine::io::{Action, CallSpec, Input, Tick};
use crate::engine::iterations::IterationDecision;
use crate::engine::run::{CALL_ID_PREFIX, EngineError, Phase, Run};
use crate::event::Event;
use crate::guard::{Decision, Guard, TurnView};
use crate::message::Message;
use crate::outcome::{LimitReason, StopCause};
use crate::provider::{CallPurpose, ModelResponse, ProviderError, ProviderErrorKind, StopReason};
use crate::store::CheckpointKind;

/// The internal continuation prompt of F12.
const CONTINUATION_PROMPT: &str = "Your last reply was cut off by the output limit. Continue exactly where you left off, \
     without repeating what you already wrote.";

impl Phase {
    fn label(&self) -> &'static str {
        match self {
            Phase::Ready => "ready",
            Phase::AwaitingModel { .. } => "awaiting_model",
            Phase::AwaitingTools { .. } => "awaiting_tools",
            Phase::AwaitingSummary { .. } => "awaiting_summary",
            Phase::AwaitingIterationDecision { .. } => "awaiting_iteration_decision",
            Phase::AwaitingHuman { .. } => "awaiting_human",
            Phase::Finished { .. } => "finished",
        }
    }
}

impl Input {
    fn label(&self) -> &'static str {
        match self {
            Input::Start => "start",
            Input::ModelReply(_) => "model_reply",
            Input::ModelFailed(_) => "model_failed",
            Input::ToolsDone(_) => "tools_done",
            Input::IterationDecision(_) => "iteration_decision",
            Input::SummaryDone(_) => "summary_done",
        }
    }
}

impl Run {
    /// Feeds one input and returns what to do next. See [`Run`] for the protocol.
    pub fn step(&mut self, input: Input, tick: Tick) -> Result<Action, EngineError> {
        self.core.elapsed_ms = u64::try_from(tick.elapsed.as_millis()).unwrap_or(u64::MAX);
        self.core.counters.mark_stretch_time(self.core.elapsed_ms);
        let phase = std::mem::replace(&mut self.core.phase, Phase::Ready);
        match (phase, input) {
            (Phase::Ready, Input::Start) => self.begin_turn(tick),
            // Picking up a restored run: repeat the pending request.
            (Phase::AwaitingModel { spec }, Input::Start) => {
                let action = Action::CallModel(spec.clone());
                self.core.phase = Phase::AwaitingModel { spec };
                Ok(action)
            }
            (Phase::AwaitingTools { batch, dispatched, prefilled, human_call, deferred }, Input::Start) => {
                let action = Action::RunTools(dispatched.clone());
                self.core.phase = Phase::AwaitingTools { batch, dispatched, prefilled, human_call, deferred };
                Ok(action)
            }
            (Phase::AwaitingSummary { request, retry }, Input::Start) => {
                let action = Action::Summarize(request.clone());
                self.core.phase = Phase::AwaitingSummary { request, retry };
                Ok(action)
            }
            (Phase::AwaitingSummary { request, retry }, Input::SummaryDone(summary)) => {
                self.on_summary(summary, &request.messages, retry)
            }
            (Phase::AwaitingIterationDecision { count }, Input::Start) => {
                self.core.phase = Phase::AwaitingIterationDecision { count };
                Ok(Action::MaxIterationsReached { count })
            }
            (Phase::AwaitingHuman { call_id, question }, Input::Start) => {
                let outcome = self.outcome(
                    StopCause::HandedToHuman { question: question.clone() },
                    question.clone(),
                    None,
                );
                self.core.phase = Phase::AwaitingHuman { call_id, question };
                Ok(Action::Finish(outcome))
            }
            (Phase::Finished { outcome }, Input::Start) => {
                let action = Action::Finish(outcome.clone());
                self.core.phase = Phase::Finished { outcome };
                Ok(action)
            }
            (Phase::AwaitingModel { spec }, Input::ModelReply(response)) => {
                self.on_reply(spec, response, tick)
            }
            (Phase::AwaitingModel { spec }, Input::ModelFailed(error)) => self.on_failure(spec, error, tick),
            (
                Phase::AwaitingTools { batch, prefilled, human_call, deferred, .. },
                Input::ToolsDone(results),
            ) => self.on_tools_done(batch, prefilled, human_call, deferred, results, tick),
            (Phase::AwaitingIterationDecision { .. }, Input::IterationDecision(decision)) => {
                self.on_iteration_decision(decision, tick)
            }
            (phase, input) => {
                let error = EngineError::UnexpectedInput { phase: phase.label(), input: input.label() };
                self.core.phase = phase;
                Err(error)
            }
        }
    }

    pub(super) fn view_guards(
        &mut self,
        mut hook: impl FnMut(&mut dyn Guard, &TurnView<'_>) -> Vec<Decision>,
    ) -> Vec<Decision> {
        let view = TurnView {
            counters: &self.core.counters,
            messages: &self.messages,
            config: &self.core.config,
            elapsed: Duration::from_millis(self.core.elapsed_ms),
        };
        let mut decisions = Vec::new();
        for guard in &mut self.guards {
            decisions.extend(hook(guard.as_mut(), &view));
        }
        decisions
    }

    /// Applies decisions in order; returns the first stop. `deferred` receives injected
    /// messages when they cannot be added yet (between tool calls and their results).
    pub(super) fn apply(
        &mut self,
        decisions: Vec<Decision>,
        mut deferred: Option<&mut Vec<Message>>,
    ) -> Option<StopCause> {
        for decision in decisions {
            match decision {
                Decision::Emit(event) => self.emit(event),
                Decision::Inject(message) => match deferred.as_deref_mut() {
                    Some(queue) => queue.push(message),
                    None => self.messages.push(message),
                },
                Decision::ForceToolChoice(choice) => self.core.pending_choice = Some(choice),
                Decision::Checkpoint(kind) => self.checkpoint(kind),
                Decision::Stop(cause) => return Some(cause),
                Decision::ReplaceResult(result) => {
                    tracing::warn!(call_id = %result.call_id, "ReplaceResult is only honoured in before_tools; ignored");
                }
            }
        }
        None
    }

    pub(super) fn begin_turn(&mut self, tick: Tick) -> Result<Action, EngineError> {
        // F1: the first matching check wins: cancellation, then guards in order (time limits,
        // budgets, ...), then the iteration ceiling.
        if tick.cancel_requested {
            return self.stop(StopCause::Cancelled);
        }
        let decisions = self.view_guards(|g, v| g.before_turn(v));
        if let Some(cause) = self.apply(decisions, None) {
            return self.stop(cause);
        }
        if self.core.counters.iterations >= self.core.iteration_cap {
            let count = self.core.counters.iterations;
            self.core.phase = Phase::AwaitingIterationDecision { count };
            return Ok(Action::MaxIterationsReached { count });
        }
        let view = ContextView::new(&self.core.counters, &self.core.config);
        let step = self.policy.prepare(&mut self.messages, &view);
        match self.context_step(step, None)? {
            Some(action) => Ok(action),
            None => self.call_turn(),
        }
    }

    /// The last part of a turn start: budget proximity, the turn event and the model call.
    pub(super) fn call_turn(&mut self) -> Result<Action, EngineError> {
        self.core.overflow_retried = false;
        if !self.core.near_budget_emitted && self.near_budget() {
            self.core.near_budget_emitted = true;
            let budget = &self.core.config.budget;
            let counters = &self.core.counters;
            let event = Event::NearBudget {
                remaining_tokens: budget.token_budget.map(|b| b.saturating_sub(counters.usage.total())),
                remaining_cost: budget.cost_limit.map(|l| l - counters.cost),
            };
            self.emit(event);
        }
        let counters = &mut self.core.counters;
        counters.iterations = counters.iterations.saturating_add(1);
        counters.turns = counters.turns.saturating_add(1);
        let event = Event::TurnStarted { turn: counters.iterations, cap: self.core.iteration_cap };
        self.emit(event);
        let spec = CallSpec {
            purpose: CallPurpose::Turn,
            tool_choice: self.core.pending_choice.take().unwrap_or_default(),
            instruction: None,
        };
        self.core.phase = Phase::AwaitingModel { spec: spec.clone() };
        Ok(Action::CallModel(spec))
    }

    /// Gives every tool call of a response its own run-unique id (the provider's id may repeat
    /// across turns, within one batch, or be empty); the provider's id is kept as `wire_id`.
    fn assign_call_ids(&mut self, mut response: ModelResponse) -> ModelResponse {
        for call in &mut response.tool_calls {
            let id = format!("{CALL_ID_PREFIX}{}", self.core.calls_assigned);
            self.core.calls_assigned += 1;
            let wire = std::mem::replace(&mut call.id, id);
            call.wire_id = Some(wire);
        }
        response
    }

    /// Charges a call's usage; when the provider reported none, the policy's estimate (marked
    /// as such) is charged instead. `sent` is what a summary call was given; other calls were
    /// given the conversation.
    pub(super) fn account(
        &mut self,
        response: &ModelResponse,
        purpose: CallPurpose,
        sent: Option<&[Message]>,
    ) {
        let usage = match response.usage {
            Some(usage) => usage,
            None => self.policy.estimate_usage(sent.unwrap_or(&self.messages), response),
        };
        let cost = self.core.config.prices.cost(&response.model, &usage);
        let counters = &mut self.core.counters;
        counters.usage.add(&usage);
        counters.cost += cost;
        self.emit(Event::ModelResponded { model: response.model.clone(), purpose, usage: Some(usage) });
    }

    fn on_reply(
        &mut self,
        spec: CallSpec,
        mut response: ModelResponse,
        tick: Tick,
    ) -> Result<Action, EngineError> {
        self.account(&response, spec.purpose, None);
        if spec.purpose != CallPurpose::Turn {
            return self.finish_fallback(response.text.filter(|t| !t.trim().is_empty()));
        }
        if response.stop_reason == StopReason::Refusal {
            // A reply the provider's safety system cut short: what it started is not acted
            // on (its calls may be partial, and the provider refused to go on with them).
            for call in std::mem::take(&mut response.tool_calls) {
                let reason = "the reply was refused; its calls are not run".to_owned();
                self.emit(Event::ToolCallRejected { tool: call.name, reason });
            }
        }
        if response.is_empty() {
            return self.stop(StopCause::EmptyReply);
        }
        let response = self.assign_call_ids(response);
        let ModelResponse { text, tool_calls, stop_reason, .. } = response.clone();
        self.messages.push(Message::assistant_with_calls(text.clone(), tool_calls.clone()));
        self.checkpoint(CheckpointKind::LlmResponse);
        let replied = self.messages.len();
        let decisions = self.view_guards(|g, v| g.after_response(v, &response));
        if let Some(cause) = self.apply(decisions, None) {
            return self.stop(cause);
        }
        if !tool_calls.is_empty() {
            return self.dispatch_tools(tool_calls, tick);
        }
        // A reply cut for repeating itself (B14) is no answer: when a guard spoke to it (the
        // ladder's nudge), the model gets another turn; it is never continued (F12).
        if stop_reason == StopReason::Degenerate && self.messages.len() > replied {
            return self.begin_turn(tick);
        }
        let text = text.unwrap_or_default();
        let recoveries = &mut self.core.counters.max_tokens_recoveries;
        if stop_reason == StopReason::MaxTokens
            && *recoveries < self.core.config.guardrails.max_tokens_recoveries
        {
            *recoveries += 1;
            let attempt = *recoveries;
            self.core.partial_text.push_str(&text);
            self.messages.push(Message::internal_user("max_tokens_recovery", CONTINUATION_PROMPT));
            self.emit(Event::MaxTokensContinuation { attempt });
            return self.begin_turn(tick);
        }
        let mut final_text = std::mem::take(&mut self.core.partial_text);
        final_text.push_str(&text);
        let decisions = self.view_guards(|g, v| g.at_finish(v, &final_text));
        let before = self.messages.len();
        // Stops at finish are ignored: the model's answer stands.
        let _ = self.apply(decisions, None);
        if self.messages.len() > before {
            return self.begin_turn(tick);
        }
        self.finish(StopCause::Finished, final_text, None)
    }

    fn on_iteration_decision(
        &mut self,
        decision: IterationDecision,
        tick: Tick,
    ) -> Result<Action, EngineError> {
        match decision {
            IterationDecision::Continue => {
                self.core.counters.iterations = 0;
                self.begin_turn(tick)
            }
            IterationDecision::NewInstruction(text) => {
                self.messages.push(Message::internal_user("max_iterations_instruction", text));
                self.core.counters.iterations = 0;
                self.begin_turn(tick)
            }
            IterationDecision::Stop => self.stop(StopCause::Limit { reason: LimitReason::MaxIterations }),
        }
    }

    fn on_failure(
        &mut self,
        spec: CallSpec,
        error: ProviderError,
        tick: Tick,
    ) -> Result<Action, EngineError> {
        // A call cut short by a cancel request or the hard time limit (the driver interrupts
        // it, F6/F7) ends the run the way the next turn boundary would, not as a provider
        // failure.
        let hard = self.core.config.budget.hard_time_limit_secs;
        let past_hard_limit = hard > 0 && tick.elapsed.as_secs() >= hard;
        if spec.purpose == CallPurpose::Turn && (tick.cancel_requested || past_hard_limit) {
            tracing::info!(%error, "the model call was interrupted at a stop boundary");
            return self.begin_turn(tick);
        }
        if spec.purpose != CallPurpose::Turn {
            tracing::warn!(%error, "fallback call failed; building the reply deterministically");
            return self.finish_fallback(None);
        }
        // A prompt that does not fit: compact and try the same call once more.
        if error.kind == ProviderErrorKind::ContextWindowExceeded && !self.core.overflow_retried {
            self.core.overflow_retried = true;
            let view = ContextView::new(&self.core.counters, &self.core.config);
            let step = self.policy.on_overflow(&mut self.messages, &view);
            return match self.context_step(step, Some(spec.clone()))? {
                Some(action) => Ok(action),
                None => {
                    self.core.phase = Phase::AwaitingModel { spec: spec.clone() };
                    Ok(Action::CallModel(spec))
                }
            };
        }
        self.stop(StopCause::ProviderFailed { message: error.to_string() })
    }
}
