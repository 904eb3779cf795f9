//! The runner's builder methods: configuration, guards, policy, executor, liveness,
//! delegation, events and the cheaper summarizer.

use std::sync::Arc;
use std::time::Duration;

use looprail_loop_core::config::LoopConfig;
use looprail_loop_core::context::ContextPolicy;
use looprail_loop_core::engine::MaxIterationsHandler;
use looprail_loop_core::event::EventSink;
use looprail_loop_core::executor::ToolExecutor;
use looprail_loop_core::guard::Guard;
use looprail_loop_core::provider::Provider;
use tokio_util::sync::CancellationToken;

use super::Runner;
use crate::delegate::DelegationConfig;

impl Runner {
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

    /// Reads every model reply with a watch from `watcher` (B14: a reply that degenerates
    /// into repeating itself is cut while it streams).
    #[must_use]
    pub fn with_reply_watch(mut self, watcher: Arc<dyn looprail_loop_core::watch::WatchReplies>) -> Self {
        self.watcher = Some(watcher);
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
}
