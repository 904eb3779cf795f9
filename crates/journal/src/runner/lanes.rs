//! Lanes: submitting a run (and draining its lane), waiting for a queued run's turn, reading a
//! finished run's outcome, and the reconciler with this runner's settings.

use std::time::Duration;

use looprail_loop_core::outcome::Outcome;

use super::{Runner, Started};
use crate::error::JournalError;
use crate::store::{RunSpec, RunStatus, Submitted, now_ms};

impl Runner {
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

    /// Executes a run this worker took over from a holder that stopped
    /// ([`RunStore::take_over`](crate::RunStore::take_over)). A run whose latest checkpoint
    /// already records its end is closed with that outcome, never run again; one with a
    /// resumable checkpoint goes on from it through the envelope (completed calls replayed, an
    /// interrupted side-effecting call halts it for a human); one that never checkpointed
    /// starts from its input.
    pub async fn execute_taken_over(&self, run_id: &str) -> Result<Outcome, JournalError> {
        if let Some(outcome) = self.store.final_outcome(run_id).await? {
            self.store.set_status(run_id, super::status_of(outcome.state)).await?;
            return Ok(outcome);
        }
        self.execute(run_id).await
    }

    /// The outcome a finished (or paused) run recorded in its last checkpoint.
    pub async fn stored_outcome(&self, run_id: &str, status: RunStatus) -> Result<Outcome, JournalError> {
        self.store
            .final_outcome(run_id)
            .await?
            .ok_or_else(|| JournalError::Finished { run_id: run_id.to_owned(), status })
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
}
