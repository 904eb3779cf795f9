//! One exit code per outcome class, the same for `run` and `resume` (documented in
//! docs/cli.md).

use looprail::core::outcome::{Outcome, StopCause};

/// The run completed (the model finished, or an empty reply got its fallback).
pub const COMPLETED: u8 = 0;
/// The run failed (provider error, a loop or guard stop), or the command itself failed.
pub const FAILED: u8 = 1;
/// The command line was wrong (clap's own code).
pub const USAGE: u8 = 2;
/// A budget or cap stopped the run (it still got its fallback reply).
pub const LIMIT: u8 = 3;
/// The run waits for a human: a question, or an unsafe call to resolve.
pub const WAITING_ON_HUMAN: u8 = 4;
/// The run was cancelled.
pub const CANCELLED: u8 = 5;

/// The exit code for how a run ended.
pub fn for_outcome(outcome: &Outcome) -> u8 {
    for_stop(&outcome.stop)
}

/// The exit code for a stop cause.
pub fn for_stop(stop: &StopCause) -> u8 {
    match stop {
        StopCause::Finished | StopCause::EmptyReply => COMPLETED,
        StopCause::Limit { .. } => LIMIT,
        StopCause::HandedToHuman { .. } | StopCause::ResumeUnsafe { .. } => WAITING_ON_HUMAN,
        StopCause::Cancelled => CANCELLED,
        StopCause::LoopDetected { .. } | StopCause::Guard { .. } | StopCause::ProviderFailed { .. } => FAILED,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use looprail::core::outcome::LimitReason;

    #[test]
    fn every_stop_cause_has_its_class() {
        let code = |stop: StopCause| for_stop(&stop);
        assert_eq!(code(StopCause::Finished), COMPLETED);
        assert_eq!(code(StopCause::Limit { reason: LimitReason::MaxTurns }), LIMIT);
        assert_eq!(code(StopCause::Cancelled), CANCELLED);
        assert_eq!(code(StopCause::HandedToHuman { question: "?".into() }), WAITING_ON_HUMAN);
        assert_eq!(
            code(StopCause::ResumeUnsafe { call_id: "lr-0".into(), tool: "t".into() }),
            WAITING_ON_HUMAN
        );
        assert_eq!(code(StopCause::ProviderFailed { message: "401".into() }), FAILED);
        let distinct: std::collections::BTreeSet<u8> =
            [COMPLETED, FAILED, USAGE, LIMIT, WAITING_ON_HUMAN, CANCELLED].into();
        assert_eq!(distinct.len(), 6);
    }
}
