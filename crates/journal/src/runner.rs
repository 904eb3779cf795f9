//! [`Runner`]: drives runs against the SQLite store: lanes, heartbeats, cancel requests,
//! checkpoints through the idempotency envelope, and safe resume (F31–F36).

use std::sync::Arc;
use std::time::Duration;

use looprail_loop_core::Driver;
use looprail_loop_core::config::LoopConfig;
use looprail_loop_core::context::{ContextPolicy, KeepAll};
use looprail_loop_core::engine::{MaxIterationsHandler, Run, system_prompt_hash};
use looprail_loop_core::event::EventSink;
use looprail_loop_core::executor::{ParallelExecutor, ToolExecutor};
use looprail_loop_core::guard::Guard;
use looprail_loop_core::guards;
use looprail_loop_core::outcome::Outcome;
use looprail_loop_core::provider::Provider;
use looprail_loop_core::state::RunState;
use looprail_loop_core::tool::ToolSet;
use tokio_util::sync::CancellationToken;

use crate::delegate::{Delegate, DelegationConfig};
use crate::envelope::{EnvelopeExecutor, ResumeSafety};
use crate::error::{JournalError, ResumeHalt};
use crate::run_journal::{JournalHandle, RunJournal};
use crate::store::{RunSpec, RunStatus, SqliteStore, Submitted, now_ms};

type GuardFactory = Arc<dyn Fn() -> Vec<Box<dyn Guard>> + Send + Sync>;
type PolicyFactory = Arc<dyn Fn() -> Box<dyn ContextPolicy> + Send + Sync>;

/// What [`Runner::start`] did.
// One value per run, never stored in bulk: boxing the outcome would only add an allocation.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum Started {
    /// The run ran (to its end or to a human pause).
    Ran(Outcome),
    /// Its lane was busy; it starts when the active run ends.
    Queued {
        /// Runs before it.
        ahead: i64,
    },
}

/// What [`Runner::resume`] did.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum Resumed {
    /// The run continued from its checkpoint.
    Ran(Outcome),
    /// It was not resumed and now waits on a human.
    Halted(ResumeHalt),
}

/// Executes runs durably. Everything a run needs to be rebuilt after a crash (provider, tools,
/// guards, policy, system prompt) is code, given here; everything it did is in the store.
#[derive(Clone)]
pub struct Runner {
    pub(crate) store: SqliteStore,
    provider: Arc<dyn Provider>,
    tools: ToolSet,
    pub(crate) config: LoopConfig,
    system_prompt: String,
    guards: GuardFactory,
    pub(crate) policy: PolicyFactory,
    executor: Arc<dyn ToolExecutor>,
    heartbeat_every: Duration,
    stale_after: Duration,
    cancel_timeout: Duration,
    drain_lane: bool,
    pub(crate) events: EventSink,
    streaming: bool,
    summarizer: Option<(Arc<dyn Provider>, Duration)>,
    shutdown: CancellationToken,
    delegation: DelegationConfig,
    iteration_handler: Option<Arc<dyn MaxIterationsHandler>>,
}

impl std::fmt::Debug for Runner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runner").field("model", &self.provider.model()).field("tools", &self.tools).finish()
    }
}

fn status_of(state: RunState) -> RunStatus {
    match state {
        RunState::Completed => RunStatus::Completed,
        RunState::Cancelled => RunStatus::Cancelled,
        RunState::WaitingOnHuman | RunState::WaitingForInput => RunStatus::WaitingOnHuman,
        RunState::TimedOut => RunStatus::TimedOut,
        RunState::Running | RunState::WaitingForTool => RunStatus::Running,
        RunState::MaxSteps | RunState::BudgetExceeded | RunState::Error => RunStatus::Failed,
    }
}

impl Runner {
    /// A runner with the default guards, no context policy, the parallel executor and a
    /// heartbeat every 10 s.
    pub fn new(
        store: SqliteStore,
        provider: Arc<dyn Provider>,
        tools: ToolSet,
        system_prompt: impl Into<String>,
    ) -> Self {
        Self {
            store,
            provider,
            tools,
            config: LoopConfig::default(),
            system_prompt: system_prompt.into(),
            guards: Arc::new(Vec::new),
            policy: Arc::new(|| Box::new(KeepAll)),
            executor: Arc::new(ParallelExecutor),
            heartbeat_every: Duration::from_secs(10),
            stale_after: Duration::from_secs(60),
            cancel_timeout: Duration::from_secs(180),
            drain_lane: true,
            events: EventSink::none(),
            streaming: false,
            summarizer: None,
            shutdown: CancellationToken::new(),
            delegation: DelegationConfig::default(),
            iteration_handler: None,
        }
    }

    /// The loop configuration.
    #[must_use]
    pub fn with_config(mut self, config: LoopConfig) -> Self {
        self.config = config;
        self
    }

    /// Guards added to every run (built fresh for each, their state restored on resume).
    #[must_use]
    pub fn with_guards(mut self, guards: impl Fn() -> Vec<Box<dyn Guard>> + Send + Sync + 'static) -> Self {
        self.guards = Arc::new(guards);
        self
    }

    /// The context policy of every run.
    #[must_use]
    pub fn with_policy(
        mut self,
        policy: impl Fn() -> Box<dyn ContextPolicy> + Send + Sync + 'static,
    ) -> Self {
        self.policy = Arc::new(policy);
        self
    }

    /// The executor inside the envelope (a retrying one, say).
    #[must_use]
    pub fn with_executor(mut self, executor: Arc<dyn ToolExecutor>) -> Self {
        self.executor = executor;
        self
    }

    /// How often a running run records its heartbeat and checks for a cancel request.
    #[must_use]
    pub fn with_heartbeat(mut self, every: Duration) -> Self {
        self.heartbeat_every = every;
        self
    }

    /// Heartbeat, staleness and cancel timeout from the config file's `[journal]` section.
    #[must_use]
    pub fn with_journal_config(mut self, config: &crate::JournalConfig) -> Self {
        self.heartbeat_every = config.heartbeat();
        self.stale_after = config.stale_after();
        self.cancel_timeout = config.cancel_timeout();
        self
    }

    /// Whether [`Runner::start`] also executes the other runs of its lane that become due when
    /// a run ends (the default, for a worker that owns every run it sees). A process that only
    /// runs its own submissions (`looprail run`) turns it off: the next run of the lane is then
    /// started for its owner, who waits for it with [`Runner::wait_and_execute`], and executes
    /// it with its own provider and tools.
    #[must_use]
    pub fn with_lane_draining(mut self, on: bool) -> Self {
        self.drain_lane = on;
        self
    }

    /// Runs the reconciler (F33) with this runner's staleness and cancel timeout and publishes
    /// `agent_run.reconcile` on the event stream.
    pub async fn reconcile(&self) -> Result<crate::ReconcileReport, JournalError> {
        let report = self.store.reconcile(now_ms(), self.stale_after, self.cancel_timeout).await?;
        self.events.emit(&looprail_loop_core::event::Event::RunReconcile {
            timed_out: report.timed_out,
            resumable: report.resumable,
            cancelled: report.cancelled,
        });
        Ok(report)
    }

    /// Waits until the queued run `run_id` is due on its lane (polling every `poll`), claims it
    /// and executes it. A run another process took meanwhile (a worker executing it from its
    /// recipe) is awaited instead, and a run that ended is [`JournalError::Finished`]. A
    /// shutdown while waiting cancels the queued run.
    pub async fn wait_and_execute(&self, run_id: &str, poll: Duration) -> Result<Outcome, JournalError> {
        loop {
            if self.store.claim_run(run_id).await? {
                return self.execute(run_id).await;
            }
            let row =
                self.store.run(run_id).await?.ok_or_else(|| JournalError::UnknownRun(run_id.to_owned()))?;
            match row.status {
                RunStatus::Queued | RunStatus::Running => {
                    tokio::select! {
                        () = tokio::time::sleep(poll) => {}
                        () = self.shutdown.cancelled() => {
                            if row.status == RunStatus::Queued {
                                self.store.set_status(run_id, RunStatus::Cancelled).await?;
                            }
                            return Err(JournalError::Finished { run_id: run_id.to_owned(), status: RunStatus::Cancelled });
                        }
                    }
                }
                status => return self.stored_outcome(run_id, status).await,
            }
        }
    }

    /// The outcome a finished (or paused) run recorded in its last checkpoint.
    pub async fn stored_outcome(&self, run_id: &str, status: RunStatus) -> Result<Outcome, JournalError> {
        let checkpoint = self.store.latest_checkpoint(run_id).await?;
        match checkpoint.map(|c| c.header.core.phase) {
            Some(looprail_loop_core::engine::Phase::Finished { outcome }) => Ok(outcome),
            _ => Err(JournalError::Finished { run_id: run_id.to_owned(), status }),
        }
    }

    /// How old a heartbeat must be before the run counts as abandoned (60 s by default): a
    /// run with a fresher one is held by a live process and is not resumed.
    #[must_use]
    pub fn with_stale_after(mut self, stale_after: Duration) -> Self {
        self.stale_after = stale_after;
        self
    }

    /// Stops every run this runner drives at its next safe boundary when `token` is cancelled
    /// (a SIGINT or SIGTERM handler cancels it). Such a run is checkpointed and left
    /// `interrupted`, which [`Runner::resume`] continues.
    #[must_use]
    pub fn with_shutdown(mut self, token: CancellationToken) -> Self {
        self.shutdown = token;
        self
    }

    /// Offers the `delegate` tool (F37) when `config.enabled`: a run shallower than
    /// `limits.max_delegation_depth` can hand a sub-task to a child run.
    #[must_use]
    pub fn with_delegation(mut self, config: DelegationConfig) -> Self {
        self.delegation = config;
        self
    }

    /// Asks `handler` what to do when a run reaches its iteration cap (F11).
    #[must_use]
    pub fn with_iteration_handler(mut self, handler: Arc<dyn MaxIterationsHandler>) -> Self {
        self.iteration_handler = Some(handler);
        self
    }

    /// This runner for a child run: its configuration, stopped when `cancel` (the parent's)
    /// fires.
    pub(crate) fn child(&self, config: LoopConfig, cancel: CancellationToken) -> Runner {
        let mut child = self.clone();
        child.config = config;
        child.shutdown = cancel;
        child
    }

    /// Where events go.
    #[must_use]
    pub fn with_events(mut self, events: EventSink) -> Self {
        self.events = events;
        self
    }

    /// Streams model calls (text deltas become events).
    #[must_use]
    pub fn with_streaming(mut self, on: bool) -> Self {
        self.streaming = on;
        self
    }

    /// Writes compaction summaries with this (cheaper) provider, giving up after `timeout`
    /// (F27; the policy then truncates deterministically).
    #[must_use]
    pub fn with_summarizer(mut self, provider: Arc<dyn Provider>, timeout: Duration) -> Self {
        self.summarizer = Some((provider, timeout));
        self
    }

    /// The store.
    pub fn store(&self) -> &SqliteStore {
        &self.store
    }

    fn conversation(lane: &str) -> &str {
        lane.strip_prefix("conversation:").unwrap_or(lane)
    }

    pub(crate) async fn journal(&self, lane: &str) -> Result<JournalHandle, JournalError> {
        let stored = self.store.load_journal(Self::conversation(lane)).await?;
        let journal = match stored {
            Some(value) => serde_json::from_value(value).map_err(|e| JournalError::corrupt("journals", e))?,
            None => RunJournal::default(),
        };
        Ok(JournalHandle::new(journal))
    }

    pub(crate) fn guards_for(&self, run_id: &str, journal: &JournalHandle) -> Vec<Box<dyn Guard>> {
        let mut all = guards::defaults(&self.config);
        all.extend((self.guards)());
        all.push(Box::new(ResumeSafety::new(run_id)));
        all.push(Box::new(journal.guard()));
        all
    }

    fn tools_for(&self, run_id: &str, depth: u32, journal: &JournalHandle) -> ToolSet {
        let (get, update, append) = journal.tools();
        let tools = self.tools.clone().with(get).with(update).with(append);
        if self.delegation.enabled && depth < self.config.limits.max_delegation_depth {
            tools.with(Delegate {
                runner: self.clone(),
                parent: run_id.to_owned(),
                depth,
                share: self.delegation.budget_share,
            })
        } else {
            tools
        }
    }

    /// Submits a run to its lane and, when the lane is free, runs it now; this worker then also
    /// runs the lane's queued runs, in submission order, until the lane is empty. When the
    /// submission started an older queued run instead (its worker had finished in between), this
    /// worker runs that chain, which reaches this run in its turn.
    pub async fn start(&self, spec: &RunSpec) -> Result<Started, JournalError> {
        // A child too deep is refused before it is stored, so it never holds a lane.
        let max = self.config.limits.max_delegation_depth;
        if spec.depth > max {
            return Err(looprail_loop_core::engine::EngineError::DelegationTooDeep {
                depth: spec.depth,
                max,
            }
            .into());
        }
        let first = match self.store.submit(spec).await? {
            Submitted::Started => spec.run_id.clone(),
            Submitted::Queued { dispatched: Some(other), .. } => other,
            Submitted::Queued { ahead, dispatched: None } => return Ok(Started::Queued { ahead }),
        };
        if !self.drain_lane {
            if first != spec.run_id {
                // An older queued run became due: its owner waits for it and runs it.
                return Ok(Started::Queued { ahead: 0 });
            }
            let (outcome, _) = self.execute_one(&spec.run_id).await?;
            return Ok(Started::Ran(outcome));
        }
        let mut mine = None;
        let mut next = Some(first);
        while let Some(run_id) = next {
            next = match self.execute_one(&run_id).await {
                Ok((outcome, next)) => {
                    if run_id == spec.run_id {
                        mine = Some(outcome);
                    }
                    next
                }
                Err(error) if run_id == spec.run_id => return Err(error),
                Err(error) => {
                    tracing::warn!(name: "agent_run.dispatch_next_failed", %run_id, %error, "a queued run failed to start");
                    self.events.emit(&looprail_loop_core::event::Event::DispatchNextFailed {
                        lane: spec.lane.clone(),
                        cause: format!("run {run_id}: {error}"),
                    });
                    None
                }
            };
        }
        Ok(match mine {
            Some(outcome) => Started::Ran(outcome),
            None => Started::Queued { ahead: 0 },
        })
    }

    /// Executes a run this worker claimed (its status is `running`).
    ///
    /// A run that already has a resumable checkpoint (one a human answered and queued) goes on
    /// from it instead of starting over.
    pub async fn execute(&self, run_id: &str) -> Result<Outcome, JournalError> {
        if self.store.latest_resumable(run_id).await?.is_some() {
            return match self.continue_run(run_id).await? {
                Resumed::Ran(outcome) => Ok(outcome),
                Resumed::Halted(halt) => Err(JournalError::WaitsOnHuman {
                    run_id: run_id.to_owned(),
                    what: format!("a decision ({halt:?})"),
                }),
            };
        }
        self.execute_one(run_id).await.map(|(outcome, _)| outcome)
    }

    async fn execute_one(&self, run_id: &str) -> Result<(Outcome, Option<String>), JournalError> {
        let row = self.store.run(run_id).await?.ok_or_else(|| JournalError::UnknownRun(run_id.to_owned()))?;
        let journal = self.journal(&row.lane).await?;
        let snapshot = journal.snapshot();
        let mut builder = Run::builder(self.config.clone())
            .system(snapshot.system_prompt(&self.system_prompt))
            .depth(u32::try_from(row.depth).unwrap_or(u32::MAX))
            .tools(
                self.tools_for(run_id, u32::try_from(row.depth).unwrap_or(u32::MAX), &journal).definitions(),
            )
            .policy(PolicyBox((self.policy)()));
        if !snapshot.is_empty() {
            builder = builder.history(snapshot.messages().to_vec());
        }
        for guard in self.guards_for(run_id, &journal) {
            builder = builder.boxed_guard(guard);
        }
        // Default guards were added by hand above (their state must be restorable by name).
        let run = builder.without_default_guards().user(row.input.clone()).build()?;
        // The driver announces `agent_run.started` itself (once per drive).
        self.drive(run_id, &row.lane, run, journal).await
    }

    /// Resumes a run from its latest resumable checkpoint (F34): completed tool calls are
    /// replayed from the envelope, interrupted idempotent ones run again, an interrupted
    /// side-effecting one halts the run for a human; a changed system prompt halts it too.
    ///
    /// Only a run that stopped without finishing is resumed: `interrupted`, `timed_out` with
    /// `resume_available` (the reconciler found it abandoned), or `running` with a stale
    /// heartbeat (its process died before a reconcile). A finished run is
    /// [`JournalError::Finished`], a waiting one [`JournalError::WaitsOnHuman`] (answer or
    /// resolve it instead), one with a fresh heartbeat [`JournalError::HeldByWorker`].
    pub async fn resume(&self, run_id: &str) -> Result<Resumed, JournalError> {
        let row = self.store.run(run_id).await?.ok_or_else(|| JournalError::UnknownRun(run_id.to_owned()))?;
        match row.status {
            RunStatus::Interrupted => {}
            RunStatus::TimedOut if row.resume_available => {}
            RunStatus::Running => {
                let age_ms = now_ms() - row.heartbeat_at.unwrap_or(0);
                if age_ms < self.stale_after.as_millis() as i64 {
                    return Err(JournalError::HeldByWorker { run_id: run_id.to_owned(), age_ms });
                }
            }
            RunStatus::WaitingOnHuman => {
                let what = self.waiting_for(run_id).await?.to_string();
                return Err(JournalError::WaitsOnHuman { run_id: run_id.to_owned(), what });
            }
            RunStatus::Queued => {
                return Err(JournalError::NotResumable {
                    run_id: run_id.to_owned(),
                    reason: "it is queued and has not started; a worker on its lane runs it".into(),
                });
            }
            status => return Err(JournalError::Finished { run_id: run_id.to_owned(), status }),
        }
        if !self.store.claim(run_id, &[row.status]).await? {
            return Err(JournalError::NotResumable {
                run_id: run_id.to_owned(),
                reason: "another process took it over just now".into(),
            });
        }
        self.continue_run(run_id).await
    }

    /// Drives a claimed run on from its latest resumable checkpoint.
    pub(crate) async fn continue_run(&self, run_id: &str) -> Result<Resumed, JournalError> {
        let row = self.store.run(run_id).await?.ok_or_else(|| JournalError::UnknownRun(run_id.to_owned()))?;
        let checkpoint =
            self.store.latest_resumable(run_id).await?.ok_or_else(|| JournalError::NotResumable {
                run_id: run_id.to_owned(),
                reason: "it has no resumable checkpoint".into(),
            })?;
        let journal = self.journal(&row.lane).await?;
        let expected = system_prompt_hash(&self.base_prompt_for(&checkpoint.messages));
        if checkpoint.header.core.system_prompt_hash.as_deref().is_some_and(|h| h != expected) {
            self.store.set_status(run_id, RunStatus::WaitingOnHuman).await?;
            self.events.emit(&looprail_loop_core::event::Event::RunResumeUnsafe {
                run_id: run_id.to_owned(),
                call_id: String::new(),
                reason: "system_prompt_changed".into(),
            });
            return Ok(Resumed::Halted(ResumeHalt::SystemPromptChanged));
        }
        let run = Run::restore(
            checkpoint.header,
            checkpoint.messages,
            self.guards_for(run_id, &journal),
            (self.policy)(),
        )?;
        self.drive(run_id, &row.lane, run, journal).await.map(|(outcome, _)| Resumed::Ran(outcome))
    }

    /// Drives a claimed run restored by the caller (a human's answer was added to it).
    pub(crate) async fn drive_restored(
        &self,
        run_id: &str,
        prepare: impl FnOnce(Vec<Box<dyn Guard>>) -> Result<Run, JournalError>,
    ) -> Result<Outcome, JournalError> {
        let row = self.store.run(run_id).await?.ok_or_else(|| JournalError::UnknownRun(run_id.to_owned()))?;
        let journal = self.journal(&row.lane).await?;
        let run = prepare(self.guards_for(run_id, &journal))?;
        self.drive(run_id, &row.lane, run, journal).await.map(|(outcome, _)| outcome)
    }

    /// The system prompt this runner would build for a run whose stored conversation is
    /// `messages` (the digest part comes from the journal at the time, so it is read back).
    fn base_prompt_for(&self, messages: &[looprail_loop_core::message::Message]) -> String {
        let stored = messages
            .iter()
            .find(|m| m.role == looprail_loop_core::message::Role::System)
            .and_then(|m| m.joined_text())
            .unwrap_or_default();
        match stored.strip_prefix(self.system_prompt.as_str()) {
            Some(rest) if rest.is_empty() || rest.starts_with("\n\nRun journal:") => stored.clone(),
            _ => self.system_prompt.clone(),
        }
    }

    /// Drives a run; returns its outcome and the lane's next run if finishing it started one.
    async fn drive(
        &self,
        run_id: &str,
        lane: &str,
        mut run: Run,
        journal: JournalHandle,
    ) -> Result<(Outcome, Option<String>), JournalError> {
        let cancel = self.shutdown.child_token();
        // Aborted when this future ends or is dropped: a run that stops (or whose caller gives
        // up on it) must stop looking alive.
        let _heartbeat = AbortOnDrop({
            let (store, run_id, cancel, every) =
                (self.store.clone(), run_id.to_owned(), cancel.clone(), self.heartbeat_every);
            tokio::spawn(async move {
                loop {
                    let _ = store.heartbeat(&run_id, now_ms()).await;
                    if store.cancel_requested(&run_id).await.unwrap_or(false) {
                        cancel.cancel();
                    }
                    tokio::time::sleep(every).await;
                }
            })
        });
        let envelope =
            EnvelopeExecutor::new(self.store.clone(), run_id).with_inner(Arc::clone(&self.executor));
        let tools = self.tools_for(run_id, run.depth(), &journal);
        let driver = Driver::new(Arc::clone(&self.provider), tools)
            .with_store(Arc::new(self.store.clone()), run_id)
            .with_executor(Arc::new(envelope))
            .with_cancel(cancel)
            .with_events(self.events.clone())
            .streaming(self.streaming);
        let driver = match &self.summarizer {
            Some((provider, timeout)) => driver.with_summarizer(Arc::clone(provider), *timeout),
            None => driver,
        };
        let driver = match &self.iteration_handler {
            Some(handler) => driver.with_iteration_handler(Arc::clone(handler)),
            None => driver,
        };
        let result = driver.drive(&mut run).await;
        drop(_heartbeat);
        let outcome = result.map_err(|e| JournalError::Driver(e.to_string()))?;
        self.store
            .save_journal(
                Self::conversation(lane),
                &serde_json::to_value(journal.snapshot()).unwrap_or_default(),
            )
            .await?;
        let status = match status_of(outcome.state) {
            // Stopped by a shutdown, not by a cancel request: resumable from its checkpoint.
            RunStatus::Cancelled
                if self.shutdown.is_cancelled() && !self.store.cancel_requested(run_id).await? =>
            {
                RunStatus::Interrupted
            }
            status => status,
        };
        let next = if status.holds_lane() || !self.drain_lane {
            // Without draining, the lane's next run is claimed by whoever owns it.
            self.store.set_status(run_id, status).await?;
            None
        } else {
            self.store.finish(run_id, status).await?
        };
        Ok((outcome, next))
    }
}

/// Aborts a spawned task when dropped.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Adapts a boxed policy to the builder's `impl ContextPolicy`.
struct PolicyBox(Box<dyn ContextPolicy>);

impl ContextPolicy for PolicyBox {
    fn prepare(
        &mut self,
        messages: &mut Vec<looprail_loop_core::message::Message>,
        view: &looprail_loop_core::context::ContextView<'_>,
    ) -> looprail_loop_core::context::ContextStep {
        self.0.prepare(messages, view)
    }
    fn apply_summary(
        &mut self,
        messages: &mut Vec<looprail_loop_core::message::Message>,
        summary: Result<String, String>,
        view: &looprail_loop_core::context::ContextView<'_>,
    ) -> Vec<looprail_loop_core::guard::Decision> {
        self.0.apply_summary(messages, summary, view)
    }
    fn on_overflow(
        &mut self,
        messages: &mut Vec<looprail_loop_core::message::Message>,
        view: &looprail_loop_core::context::ContextView<'_>,
    ) -> looprail_loop_core::context::ContextStep {
        self.0.on_overflow(messages, view)
    }
    fn on_user_turn(&mut self) {
        self.0.on_user_turn();
    }
    fn estimate_usage(
        &mut self,
        sent: &[looprail_loop_core::message::Message],
        reply: &looprail_loop_core::provider::ModelResponse,
    ) -> looprail_loop_core::provider::Usage {
        self.0.estimate_usage(sent, reply)
    }
    fn save_state(&self) -> serde_json::Value {
        self.0.save_state()
    }
    fn load_state(
        &mut self,
        state: serde_json::Value,
    ) -> Result<(), looprail_loop_core::guard::GuardStateError> {
        self.0.load_state(state)
    }
}
