//! A human's word on a run that waits for one: [`Runner::answer`] for a question (the ladder's
//! ask-human step, compaction's last resort, the model's own `ask_human` call) and
//! [`Runner::resolve`] for a side-effecting tool call a resume could not prove safe.
//! [`Runner::waiting_for`] says which of the two a run needs.

use looprail_loop_core::engine::{Phase, Run};
use looprail_loop_core::outcome::{Outcome, StopCause};
use looprail_loop_core::store::StoredCheckpoint;

use crate::error::JournalError;
use crate::runner::{Resumed, Runner};
use crate::store::RunStatus;

/// What a run in `waiting_on_human` waits for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Waiting {
    /// An answer to this question ([`Runner::answer`]).
    Question {
        /// The question.
        question: String,
    },
    /// A verdict on a side-effecting call that started before a crash and may or may not have
    /// taken effect ([`Runner::resolve`]).
    UnsafeCall {
        /// The engine's id of the call.
        call_id: String,
        /// The tool.
        tool: String,
    },
    /// The system prompt changed since the checkpoint; the run cannot go on as it was.
    SystemPromptChanged,
}

impl std::fmt::Display for Waiting {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Waiting::Question { question } => write!(f, "the question \"{question}\" (answer it)"),
            Waiting::UnsafeCall { call_id, tool } => write!(
                f,
                "call {call_id} of `{tool}`, which started before a crash and may or may not have taken effect (resolve it: done, retry or skip)"
            ),
            Waiting::SystemPromptChanged => {
                f.write_str("a decision: the system prompt changed since its checkpoint (start a new run)")
            }
        }
    }
}

/// A human's verdict on an unsafe call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resolution {
    /// It did take effect; this is its result, handed to the model as the call's output.
    Done(String),
    /// It did not take effect: run it again.
    Retry,
    /// Do not run it; the model is told it was skipped.
    Skip,
}

/// What a waiting run waits for, from its latest checkpoint and its unfinished tool calls
/// (as [`RunStore::latest_checkpoint`](crate::RunStore::latest_checkpoint) and
/// [`RunStore::unfinished_tool_calls`](crate::RunStore::unfinished_tool_calls) give them).
pub fn waiting_from(checkpoint: Option<&StoredCheckpoint>, unfinished: &[(String, String)]) -> Waiting {
    if let Some((call_id, tool)) = unfinished.first() {
        return Waiting::UnsafeCall { call_id: call_id.clone(), tool: tool.clone() };
    }
    let Some(checkpoint) = checkpoint else { return Waiting::SystemPromptChanged };
    match &checkpoint.header.core.phase {
        Phase::AwaitingHuman { question, .. } => Waiting::Question { question: question.clone() },
        Phase::Finished { outcome } => match &outcome.stop {
            StopCause::HandedToHuman { question } => Waiting::Question { question: question.clone() },
            StopCause::ResumeUnsafe { call_id, tool } => {
                Waiting::UnsafeCall { call_id: call_id.clone(), tool: tool.clone() }
            }
            _ => Waiting::SystemPromptChanged,
        },
        _ => Waiting::SystemPromptChanged,
    }
}

/// The result the model sees for a skipped call.
pub const SKIPPED: &str = "Not executed: a human chose to skip this call after the run was interrupted.";

impl Runner {
    /// What a run waiting on a human waits for.
    pub async fn waiting_for(&self, run_id: &str) -> Result<Waiting, JournalError> {
        let unfinished = self.store.unfinished_tool_calls(run_id).await?;
        let checkpoint = self.store.latest_checkpoint(run_id).await?;
        Ok(waiting_from(checkpoint.as_ref(), &unfinished))
    }

    /// Answers the question a waiting run asked and drives it on from its pause, in this
    /// process: the answer becomes the `ask_human` result (or the next user message when a
    /// guard asked), and the run starts a fresh user turn (iteration counter and escalation
    /// state reset).
    pub async fn answer(&self, run_id: &str, text: &str) -> Result<Outcome, JournalError> {
        let question = match self.waiting(run_id).await? {
            Waiting::Question { question } => question,
            other => {
                return Err(JournalError::NotWaiting {
                    run_id: run_id.to_owned(),
                    reason: format!("waits for {other}, not for an answer"),
                });
            }
        };
        let checkpoint = self.store.latest_checkpoint(run_id).await?.ok_or_else(|| {
            JournalError::NotResumable { run_id: run_id.to_owned(), reason: "it has no checkpoint".into() }
        })?;
        self.take_over(run_id).await?;
        tracing::info!(%run_id, %question, "a human answered");
        let policy = (self.policy)();
        self.drive_restored(run_id, move |guards| {
            let mut run = Run::restore(checkpoint.header, checkpoint.messages, guards, policy)?;
            run.provide_human_reply(text)?;
            Ok(run)
        })
        .await
    }

    /// Like [`Runner::answer`], but leaves the answered run `queued` for a worker instead of
    /// driving it here: the answer is checkpointed with the run, and whoever executes it goes
    /// on from there.
    pub async fn answer_queued(&self, run_id: &str, text: &str) -> Result<(), JournalError> {
        let Waiting::Question { .. } = self.waiting(run_id).await? else {
            return Err(JournalError::NotWaiting {
                run_id: run_id.to_owned(),
                reason: "waits for a verdict on a tool call, not for an answer".into(),
            });
        };
        let checkpoint = self.store.latest_checkpoint(run_id).await?.ok_or_else(|| {
            JournalError::NotResumable { run_id: run_id.to_owned(), reason: "it has no checkpoint".into() }
        })?;
        self.take_over(run_id).await?;
        let row = self.store.run(run_id).await?.ok_or_else(|| JournalError::UnknownRun(run_id.to_owned()))?;
        let journal = self.journal(&row.lane).await?;
        let guards = self.guards_for(run_id, &journal);
        let mut run = Run::restore(checkpoint.header, checkpoint.messages, guards, (self.policy)())?;
        run.provide_human_reply(text)?;
        self.store
            .save_checkpoint(
                run_id,
                looprail_loop_core::store::CheckpointKind::Input,
                &run.header(),
                run.messages(),
            )
            .await?;
        self.store.set_status(run_id, RunStatus::Queued).await
    }

    /// Like [`Runner::resolve`], but leaves the run `queued` for a worker.
    pub async fn resolve_queued(
        &self,
        run_id: &str,
        call_id: &str,
        resolution: Resolution,
    ) -> Result<(), JournalError> {
        self.record_verdict(run_id, call_id, &resolution).await?;
        self.take_over(run_id).await?;
        self.store.set_status(run_id, RunStatus::Queued).await
    }

    /// Records a human's verdict on the unsafe call `call_id` and resumes the run: a done call
    /// is replayed with the given result, a retried one runs again, a skipped one reports
    /// [`SKIPPED`] to the model.
    pub async fn resolve(
        &self,
        run_id: &str,
        call_id: &str,
        resolution: Resolution,
    ) -> Result<Resumed, JournalError> {
        self.record_verdict(run_id, call_id, &resolution).await?;
        self.take_over(run_id).await?;
        self.continue_run(run_id).await
    }

    /// Checks that the run waits for a verdict on `call_id` and records it.
    async fn record_verdict(
        &self,
        run_id: &str,
        call_id: &str,
        resolution: &Resolution,
    ) -> Result<(), JournalError> {
        match self.waiting(run_id).await? {
            Waiting::UnsafeCall { call_id: waiting, .. } if waiting == call_id => {}
            other => {
                return Err(JournalError::NotWaiting {
                    run_id: run_id.to_owned(),
                    reason: format!("waits for {other}, not for a verdict on call {call_id}"),
                });
            }
        }
        match resolution {
            Resolution::Done(result) => self.store.resolve_tool_call(run_id, call_id, result, false).await,
            Resolution::Skip => self.store.resolve_tool_call(run_id, call_id, SKIPPED, true).await,
            Resolution::Retry => self.store.forget_tool_call(run_id, call_id).await,
        }
    }

    /// What the run waits for; an error when it is not waiting on a human.
    async fn waiting(&self, run_id: &str) -> Result<Waiting, JournalError> {
        let row = self.store.run(run_id).await?.ok_or_else(|| JournalError::UnknownRun(run_id.to_owned()))?;
        if row.status != RunStatus::WaitingOnHuman {
            return Err(JournalError::NotWaiting {
                run_id: run_id.to_owned(),
                reason: format!("is {}, not waiting on a human", row.status),
            });
        }
        self.waiting_for(run_id).await
    }

    async fn take_over(&self, run_id: &str) -> Result<(), JournalError> {
        if self.store.claim(run_id, &[RunStatus::WaitingOnHuman]).await? {
            Ok(())
        } else {
            Err(JournalError::NotWaiting {
                run_id: run_id.to_owned(),
                reason: "was taken over by another process just now".into(),
            })
        }
    }
}
