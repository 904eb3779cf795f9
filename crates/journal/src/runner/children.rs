//! The runner as the `delegate` tool's [`ChildRunner`]: a child run started, or picked up,
//! with the budget carved for it.

use looprail_loop_core::config::LoopConfig;
use looprail_loop_core::outcome::Outcome;
use tokio_util::sync::CancellationToken;

use super::{Resumed, Runner, Started};
use crate::delegate::{ChildEnd, ChildRunner};
use crate::error::JournalError;
use crate::store::{RunSpec, RunStatus, SharedStore};

/// The runner runs the `delegate` tool's children.
#[async_trait::async_trait]
impl ChildRunner for Runner {
    fn store(&self) -> &SharedStore {
        &self.store
    }

    fn loop_config(&self) -> &LoopConfig {
        &self.config
    }

    async fn start_child(
        &self,
        spec: &RunSpec,
        config: LoopConfig,
        cancel: CancellationToken,
    ) -> Result<ChildEnd, JournalError> {
        Ok(match self.child(config, cancel).start(spec).await? {
            Started::Ran(outcome) => ChildEnd::Ran(Box::new(outcome)),
            Started::Queued { .. } => ChildEnd::LaneBusy,
        })
    }

    async fn resume_child(
        &self,
        run_id: &str,
        config: LoopConfig,
        cancel: CancellationToken,
    ) -> Result<ChildEnd, JournalError> {
        Ok(match self.child(config, cancel).resume(run_id).await? {
            Resumed::Ran(outcome) => ChildEnd::Ran(Box::new(outcome)),
            Resumed::Halted(halt) => ChildEnd::Halted(format!("{halt:?}")),
        })
    }

    async fn finished_child(&self, run_id: &str, status: RunStatus) -> Result<Outcome, JournalError> {
        self.stored_outcome(run_id, status).await
    }
}
