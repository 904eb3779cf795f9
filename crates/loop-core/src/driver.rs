//! The thin async driver: performs the I/O a [`Run`] asks for (model calls, tool batches,
//! checkpoints, events) with tokio, and observes cancellation at the engine's boundaries.

use std::sync::Arc;
use tracing::Instrument;

use tokio_util::sync::CancellationToken;

use crate::context::SummaryRequest;
use crate::engine::{Action, Effect, EngineError, Input, MaxIterationsHandler, Run, StopAtCap, Tick};
use crate::event::{Event, EventSink};
use crate::executor::{ExecContext, ParallelExecutor, ToolExecutor};
use crate::finalize::Finalizer;
use crate::outcome::Outcome;
use crate::provider::{CallPurpose, ModelRequest, ModelResponse, Provider, ProviderError, ProviderErrorKind};
use crate::state::RunState;
use crate::store::{CheckpointStore, StoreError};
use crate::tool::{ToolChoice, ToolSet};
use crate::watch::WatchReplies;

/// Why driving a run failed (the run itself stays consistent and can be driven again).
#[derive(Debug, thiserror::Error)]
pub enum DriverError {
    /// The engine refused an input (a bug) or the run could not continue.
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// A checkpoint could not be saved; the run stopped so no progress goes unrecorded.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Drives [`Run`]s against a provider and tools.
pub struct Driver {
    provider: Arc<dyn Provider>,
    tools: ToolSet,
    executor: Arc<dyn ToolExecutor>,
    cancel: CancellationToken,
    iteration_handler: Arc<dyn MaxIterationsHandler>,
    store: Option<(Arc<dyn CheckpointStore>, String)>,
    events: EventSink,
    streaming: bool,
    finalizer: Option<Arc<Finalizer>>,
    summarizer: Option<Arc<dyn Provider>>,
    summary_timeout: std::time::Duration,
    watcher: Option<Arc<dyn WatchReplies>>,
}

impl std::fmt::Debug for Driver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Driver")
            .field("model", &self.provider.model())
            .field("tools", &self.tools)
            .field("streaming", &self.streaming)
            .finish()
    }
}

impl Driver {
    /// A driver with the parallel executor, the stop-at-cap handler, no store and no sink.
    pub fn new(provider: Arc<dyn Provider>, tools: ToolSet) -> Self {
        Self {
            provider,
            tools,
            executor: Arc::new(ParallelExecutor),
            cancel: CancellationToken::new(),
            iteration_handler: Arc::new(StopAtCap),
            store: None,
            events: EventSink::none(),
            streaming: false,
            finalizer: None,
            summarizer: None,
            summary_timeout: std::time::Duration::from_secs(60),
            watcher: None,
        }
    }

    /// Reads every reply with a watch from `watcher` (B14): a reply that degenerates into
    /// repeating itself is cut there, its stream dropped (see [`watch`](crate::watch)).
    #[must_use]
    pub fn with_reply_watch(mut self, watcher: Arc<dyn WatchReplies>) -> Self {
        self.watcher = Some(watcher);
        self
    }

    /// Uses this token for cooperative cancellation (F7).
    #[must_use]
    pub fn with_cancel(mut self, token: CancellationToken) -> Self {
        self.cancel = token;
        self
    }

    /// Publishes events here.
    #[must_use]
    pub fn with_events(mut self, sink: EventSink) -> Self {
        self.events = sink;
        self
    }

    /// Saves checkpoints of `run_id` to `store`.
    #[must_use]
    pub fn with_store(mut self, store: Arc<dyn CheckpointStore>, run_id: impl Into<String>) -> Self {
        self.store = Some((store, run_id.into()));
        self
    }

    /// Uses another tool executor (retries, idempotency envelope).
    #[must_use]
    pub fn with_executor(mut self, executor: Arc<dyn ToolExecutor>) -> Self {
        self.executor = executor;
        self
    }

    /// Uses another max-iterations handler (F11).
    #[must_use]
    pub fn with_iteration_handler(mut self, handler: Arc<dyn MaxIterationsHandler>) -> Self {
        self.iteration_handler = handler;
        self
    }

    /// Streams model calls, publishing text deltas as events.
    #[must_use]
    pub fn streaming(mut self, on: bool) -> Self {
        self.streaming = on;
        self
    }

    /// Runs output checks, structured output and citations once on every final outcome (F13).
    #[must_use]
    pub fn with_finalizer(mut self, finalizer: Arc<Finalizer>) -> Self {
        self.finalizer = Some(finalizer);
        self
    }

    /// Writes compaction summaries with this (cheaper) provider instead of the main one, giving
    /// up after `timeout` (the policy then truncates deterministically).
    #[must_use]
    pub fn with_summarizer(mut self, provider: Arc<dyn Provider>, timeout: std::time::Duration) -> Self {
        self.summarizer = Some(provider);
        self.summary_timeout = timeout;
        self
    }

    /// The cancellation token.
    pub fn cancel_token(&self) -> &CancellationToken {
        &self.cancel
    }

    fn run_id(&self) -> String {
        self.store.as_ref().map_or_else(|| "run".to_owned(), |(_, id)| id.clone())
    }

    /// Drives `run` until it finishes or waits on a human. Safe to call again on a restored
    /// run or after [`Run::provide_human_reply`].
    pub async fn drive(&self, run: &mut Run) -> Result<Outcome, DriverError> {
        let span = crate::telemetry::agent_span(&self.run_id());
        let result = self.drive_inner(run).instrument(span.clone()).await;
        match &result {
            Ok(outcome) if !outcome.state.is_terminal() || outcome.state == RunState::Completed => {}
            Ok(outcome) => {
                crate::telemetry::record_error(&span, &format!("{:?}", outcome.state).to_lowercase())
            }
            Err(_) => crate::telemetry::record_error(&span, "driver_error"),
        }
        result
    }

    async fn drive_inner(&self, run: &mut Run) -> Result<Outcome, DriverError> {
        let base = run.elapsed();
        let start = tokio::time::Instant::now();
        let tick = |cancel: &CancellationToken| Tick {
            elapsed: base + start.elapsed(),
            cancel_requested: cancel.is_cancelled(),
        };
        self.events.emit(&Event::RunStarted { run_id: self.run_id() });
        let mut input = Input::Start;
        loop {
            let action = run.step(input, tick(&self.cancel))?;
            self.flush(run).await?;
            input = match action {
                Action::CallModel(spec) => {
                    let mut request = run.model_request(&spec);
                    let note;
                    if !self.provider.supports_tool_choice()
                        && let ToolChoice::Named(name) = &request.tool_choice
                    {
                        note = format!(
                            "{}\nYou must call the `{name}` tool now.",
                            request.instruction.unwrap_or_default()
                        );
                        request.instruction = Some(note.trim_start());
                    }
                    let hard = run.config().budget.hard_time_limit_secs;
                    let span = crate::telemetry::chat_span(
                        self.provider.provider_name(),
                        self.provider.model(),
                        request.purpose,
                    );
                    let result = self
                        .interruptible(hard, self.call_model(&request), base, start)
                        .instrument(span.clone())
                        .await;
                    crate::telemetry::record_model_result(&span, &result);
                    match result {
                        Ok(response) => Input::ModelReply(response),
                        Err(error) => Input::ModelFailed(error),
                    }
                }
                Action::RunTools(calls) => {
                    let secs = run.config().limits.tool_timeout_secs;
                    let cx = ExecContext {
                        cancel: self.cancel.clone(),
                        events: self.events.clone(),
                        tool_timeout: (secs > 0).then(|| std::time::Duration::from_secs(secs)),
                    };
                    Input::ToolsDone(self.executor.execute(&calls, &self.tools, &cx).await)
                }
                Action::Summarize(request) => Input::SummaryDone(self.summarize(&request).await),
                Action::MaxIterationsReached { count } => Input::IterationDecision(
                    self.iteration_handler.on_max_iterations(count, run.messages()).await,
                ),
                Action::Finish(mut outcome) => {
                    // F13: once, after the loop; a rejection never re-enters it.
                    if let Some(finalizer) = &self.finalizer {
                        finalizer.finalize(&mut outcome);
                    }
                    self.announce_end(&outcome);
                    return Ok(outcome);
                }
            };
        }
    }

    /// Runs a model call that a cancel request or the run's hard time limit (F6, F7) cuts
    /// short: a server that accepts the request and never answers cannot hold the run past
    /// either. (Tool calls are not interrupted: a half-done side effect is worse.)
    async fn interruptible(
        &self,
        hard_limit_secs: u64,
        call: impl std::future::Future<Output = Result<ModelResponse, ProviderError>>,
        base: std::time::Duration,
        start: tokio::time::Instant,
    ) -> Result<ModelResponse, ProviderError> {
        let left = if hard_limit_secs > 0 {
            std::time::Duration::from_secs(hard_limit_secs).saturating_sub(base + start.elapsed())
        } else {
            std::time::Duration::MAX
        };
        let deadline = tokio::time::Instant::now().checked_add(left);
        tokio::select! {
            result = call => result,
            () = self.cancel.cancelled() => {
                Err(ProviderError::new(ProviderErrorKind::Connection, "interrupted: the run was cancelled"))
            }
            () = async {
                match deadline {
                    Some(at) => tokio::time::sleep_until(at).await,
                    None => std::future::pending().await,
                }
            } => Err(ProviderError::new(ProviderErrorKind::Timeout, "interrupted: the hard time limit passed")),
        }
    }

    async fn summarize(&self, request: &SummaryRequest) -> Result<ModelResponse, String> {
        let provider = self.summarizer.as_ref().unwrap_or(&self.provider);
        let call = ModelRequest {
            messages: &request.messages,
            tools: &[],
            tool_choice: ToolChoice::None,
            max_output_tokens: request.max_output_tokens,
            instruction: Some(&request.instruction),
            purpose: CallPurpose::Summary,
        };
        let span =
            crate::telemetry::chat_span(provider.provider_name(), provider.model(), CallPurpose::Summary);
        let result = tokio::time::timeout(self.summary_timeout, provider.complete(&call))
            .instrument(span.clone())
            .await;
        match result {
            Ok(result) => {
                crate::telemetry::record_model_result(&span, &result);
                result.map_err(|error| error.to_string())
            }
            Err(_) => {
                crate::telemetry::record_error(&span, "timeout");
                Err(format!("the summary call timed out after {:?}", self.summary_timeout))
            }
        }
    }

    async fn call_model(&self, request: &ModelRequest<'_>) -> Result<ModelResponse, ProviderError> {
        let watch = self.watcher.as_ref().map(|w| w.watch());
        if !self.streaming {
            let response = self.provider.complete(request).await?;
            return Ok(match watch {
                Some(watch) => crate::watch::check_complete(response, watch, &self.events),
                None => response,
            });
        }
        let stream = self.provider.stream(request).await?;
        crate::watch::read_stream(stream, watch, &self.events, self.provider.model()).await
    }

    /// Publishes the step's events and saves one checkpoint for the step. A step ends at a safe
    /// boundary (before the next I/O); when it crossed several (tool results recorded, then a
    /// model call started), the state saved is the end of the step, under the last boundary's
    /// kind, so a resumed run picks up exactly the action the step ended on.
    async fn flush(&self, run: &mut Run) -> Result<(), DriverError> {
        let mut checkpoint = None;
        while let Some(effect) = run.poll_effect() {
            match effect {
                Effect::Emit(event) => self.events.emit(&event),
                Effect::Checkpoint(kind) => checkpoint = Some(kind),
            }
        }
        if let (Some(kind), Some((store, run_id))) = (checkpoint, &self.store) {
            store.save(run_id, kind, &run.header(), run.messages()).await?;
        }
        Ok(())
    }

    fn announce_end(&self, outcome: &Outcome) {
        let run_id = self.run_id();
        let event = match outcome.state {
            RunState::Completed => Event::RunCompleted { run_id },
            RunState::Cancelled => Event::RunCancelled { run_id },
            RunState::WaitingOnHuman | RunState::WaitingForInput => return,
            state => Event::RunFailed { run_id, state, cause: outcome.stop.describe() },
        };
        self.events.emit(&event);
    }
}
