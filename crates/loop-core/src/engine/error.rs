//! [`EngineError`]: a misuse of the engine, or a run that cannot be built or restored.

use crate::config::ConfigError;
use crate::guard::GuardStateError;
use crate::state::{IllegalTransition, RunState};

/// A misuse of the engine or a run that cannot be built or restored.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum EngineError {
    /// The configuration is invalid.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// A child run deeper than the delegation cap (F2).
    #[error("delegation depth {depth} exceeds the maximum of {max}")]
    DelegationTooDeep {
        /// The requested depth.
        depth: u32,
        /// The cap.
        max: u32,
    },
    /// A run needs at least one message.
    #[error("a run needs a user message or a history to start from")]
    NoInput,
    /// Two guards share a name, so their states would collide.
    #[error("two guards are named `{0}`")]
    DuplicateGuard(String),
    /// The input does not fit the phase (a driver bug).
    #[error("input {input} is not expected in phase {phase}")]
    UnexpectedInput {
        /// The phase.
        phase: &'static str,
        /// The input.
        input: &'static str,
    },
    /// An illegal state transition (an engine bug).
    #[error(transparent)]
    IllegalTransition(#[from] IllegalTransition),
    /// A guard or policy state could not be restored.
    #[error(transparent)]
    GuardState(#[from] GuardStateError),
    /// A stored run does not add up.
    #[error("corrupt run snapshot: {0}")]
    CorruptSnapshot(String),
    /// The operation needs another state.
    #[error("operation needs state {expected}, the run is {actual:?}")]
    WrongState {
        /// What was needed.
        expected: &'static str,
        /// What the run is in.
        actual: RunState,
    },
}
