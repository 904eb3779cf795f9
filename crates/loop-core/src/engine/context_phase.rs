//! The context policy's part of a turn: its decisions applied (a compaction or a recovery
//! step takes a checkpoint), a history summary asked of the model, and the summary applied.

use crate::context::{ContextStep, ContextView};
use crate::engine::io::{Action, CallSpec};
use crate::engine::run::{EngineError, Phase, Run};
use crate::event::Event;
use crate::guard::Decision;
use crate::message::Message;
use crate::outcome::StopCause;
use crate::provider::{CallPurpose, ModelResponse};
use crate::store::CheckpointKind;

impl Run {
    /// Applies a context step. `Ok(None)` means carry on with the call; `Ok(Some(action))` is
    /// what to do instead (write a summary, or the fallback after a stop).
    pub(super) fn context_step(
        &mut self,
        step: ContextStep,
        retry: Option<CallSpec>,
    ) -> Result<Option<Action>, EngineError> {
        let (decisions, summary) = match step {
            ContextStep::Ready(decisions) => (decisions, None),
            ContextStep::Summarize { request, decisions } => (decisions, Some(request)),
        };
        if let Some(cause) = self.apply_context(decisions) {
            return self.stop(cause).map(Some);
        }
        match summary {
            Some(request) => {
                self.core.phase = Phase::AwaitingSummary { request: request.clone(), retry };
                Ok(Some(Action::Summarize(request)))
            }
            None => Ok(None),
        }
    }

    /// Applies the policy's decisions; a compaction or recovery event also takes a checkpoint.
    fn apply_context(&mut self, decisions: Vec<Decision>) -> Option<StopCause> {
        let compacted = decisions
            .iter()
            .any(|d| matches!(d, Decision::Emit(Event::CompactionRun { .. } | Event::RecoveryFired { .. })));
        let stop = self.apply(decisions, None);
        if compacted {
            self.checkpoint(CheckpointKind::Compaction);
        }
        stop
    }

    pub(super) fn on_summary(
        &mut self,
        summary: Result<ModelResponse, String>,
        summarised: &[Message],
        retry: Option<CallSpec>,
    ) -> Result<Action, EngineError> {
        // A summary call costs tokens like any other.
        let summary = summary.and_then(|response| {
            self.account(&response, CallPurpose::Summary, Some(summarised));
            response
                .text
                .filter(|t| !t.trim().is_empty())
                .ok_or_else(|| "the summary came back empty".to_owned())
        });
        // What the guards keep after a summary, as it is now (the run journal's pair).
        let pinned: Vec<Message> = self.guards.iter().flat_map(|g| g.after_summary()).collect();
        let view = ContextView { counters: &self.core.counters, config: &self.core.config, pinned: &pinned };
        let decisions = self.policy.apply_summary(&mut self.messages, summary, &view);
        if let Some(cause) = self.apply_context(decisions) {
            return self.stop(cause);
        }
        match retry {
            Some(spec) => {
                self.core.phase = Phase::AwaitingModel { spec: spec.clone() };
                Ok(Action::CallModel(spec))
            }
            None => self.call_turn(),
        }
    }
}
