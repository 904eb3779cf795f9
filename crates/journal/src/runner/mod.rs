//! [`Runner`]: drives runs against a run store: lanes, heartbeats, cancel requests,
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
use looprail_loop_core::watch::WatchReplies;
use tokio_util::sync::CancellationToken;

use crate::delegate::{Delegate, DelegationConfig};
use crate::envelope::{EnvelopeExecutor, ResumeSafety};
use crate::error::{JournalError, ResumeHalt};
use crate::run_journal::{JournalHandle, RunJournal};
use crate::store::{Checkpoints, RunStatus, SharedStore, now_ms};

mod builder;
mod children;
mod lanes;
mod support;

use support::{AbortOnDrop, PolicyBox};

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
    pub(crate) store: SharedStore,
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
    watcher: Option<Arc<dyn WatchReplies>>,
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
        store: impl Into<SharedStore>,
        provider: Arc<dyn Provider>,
        tools: ToolSet,
        system_prompt: impl Into<String>,
    ) -> Self {
        Self {
            store: store.into(),
            provider,
            tools,
            config: LoopConfig::default(),
            system_prompt: system_prompt.into(),
            guards: Arc::new(Vec::new),
            policy: Arc::new(|| Box::new(KeepAll::default())),
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
            watcher: None,
        }
    }

    /// The store.
    pub fn store(&self) -> &SharedStore {
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
                (Arc::clone(&self.store), run_id.to_owned(), cancel.clone(), self.heartbeat_every);
            tokio::spawn(async move {
                loop {
                    if let Ok(false) = store.heartbeat(&run_id, now_ms()).await {
                        // Another worker took the run over: stop at the next boundary (the
                        // store refuses this worker's writes to it meanwhile).
                        tracing::warn!(name: "agent_run.lease_lost", %run_id, "another worker holds the run now");
                        cancel.cancel();
                    }
                    if store.cancel_requested(&run_id).await.unwrap_or(false) {
                        cancel.cancel();
                    }
                    tokio::time::sleep(every).await;
                }
            })
        });
        let envelope =
            EnvelopeExecutor::new(Arc::clone(&self.store), run_id).with_inner(Arc::clone(&self.executor));
        let tools = self.tools_for(run_id, run.depth(), &journal);
        let driver = Driver::new(Arc::clone(&self.provider), tools)
            .with_store(Arc::new(Checkpoints(Arc::clone(&self.store))), run_id)
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
        let driver = match &self.watcher {
            Some(watcher) => driver.with_reply_watch(Arc::clone(watcher)),
            None => driver,
        };
        let result = driver.drive(&mut run).await;
        drop(_heartbeat);
        let outcome = result.map_err(|e| JournalError::Driver(e.to_string()))?;
        // A worker that lost the run to another (its heartbeats stopped reaching the store)
        // records nothing more: the new holder owns the run's state and end.
        let row = self.store.run(run_id).await?;
        if let Some(row) = &row
            && row.status == RunStatus::Running
            && let Some(holder) = row.worker.clone().filter(|w| w != self.store.worker())
        {
            return Err(JournalError::LeaseLost { run_id: run_id.to_owned(), holder });
        }
        self.store
            .save_journal(
                Self::conversation(lane),
                &serde_json::to_value(journal.snapshot()).unwrap_or_default(),
            )
            .await?;
        let cancel_requested = row.is_some_and(|r| r.cancel_requested_at.is_some());
        let status = match status_of(outcome.state) {
            // Stopped by a shutdown, not by a cancel request: resumable from its checkpoint.
            RunStatus::Cancelled if self.shutdown.is_cancelled() && !cancel_requested => {
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
