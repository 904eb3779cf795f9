//! Run states (F8) and the transitions between them. An illegal transition is a bug: the
//! engine reports it as [`IllegalTransition`] instead of carrying on in a wrong state.

use serde::{Deserialize, Serialize};

/// Where a run is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunState {
    /// Deciding or waiting on the model.
    Running,
    /// A tool batch is executing.
    WaitingForTool,
    /// Waiting for the next user message (interactive transports).
    WaitingForInput,
    /// Paused until a human answers (`ask_human`, unsafe resume, changed system prompt).
    WaitingOnHuman,
    /// The model finished by itself.
    Completed,
    /// A cancel request was observed at a boundary.
    Cancelled,
    /// A time limit ended the run.
    TimedOut,
    /// The iteration ceiling or the max-turns budget ended the run.
    MaxSteps,
    /// A token, tool-call or cost budget ended the run.
    BudgetExceeded,
    /// A fatal error (provider failure after retries, loop abort).
    Error,
}

/// A transition the state machine does not allow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("illegal run state transition {from:?} -> {to:?}")]
pub struct IllegalTransition {
    /// The state the run was in.
    pub from: RunState,
    /// The state it was asked to enter.
    pub to: RunState,
}

impl RunState {
    /// True for states a run does not leave by itself. `Completed` may still start a new user
    /// turn through [`crate::engine::Run::begin_user_turn`].
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            RunState::Completed
                | RunState::Cancelled
                | RunState::TimedOut
                | RunState::MaxSteps
                | RunState::BudgetExceeded
                | RunState::Error
        )
    }

    /// True when `self -> to` is allowed.
    pub fn can_transition_to(self, to: RunState) -> bool {
        use RunState::*;
        match self {
            Running => to != Running,
            WaitingForTool => matches!(to, Running | Cancelled | TimedOut | Error),
            WaitingForInput => matches!(to, Running | Cancelled | TimedOut),
            WaitingOnHuman => matches!(to, Running | Cancelled | TimedOut),
            // A finished request may take the next user message of the conversation.
            Completed => to == Running,
            Cancelled | TimedOut | MaxSteps | BudgetExceeded | Error => false,
        }
    }

    /// Checks and performs a transition.
    pub fn transition(&mut self, to: RunState) -> Result<(), IllegalTransition> {
        if self.can_transition_to(to) {
            *self = to;
            Ok(())
        } else {
            Err(IllegalTransition { from: *self, to })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terminal_states_cannot_be_left_except_completed_for_a_new_turn() {
        for s in [RunState::Cancelled, RunState::TimedOut, RunState::MaxSteps, RunState::Error] {
            assert!(s.is_terminal());
            assert!(!s.can_transition_to(RunState::Running));
        }
        assert!(RunState::Completed.can_transition_to(RunState::Running));
        assert!(!RunState::Completed.can_transition_to(RunState::Error));
    }

    #[test]
    fn tools_in_flight_cannot_be_declared_budget_exceeded() {
        let mut s = RunState::WaitingForTool;
        let err = s.transition(RunState::BudgetExceeded).unwrap_err();
        assert_eq!(err.from, RunState::WaitingForTool);
        assert_eq!(s, RunState::WaitingForTool);
    }
}
