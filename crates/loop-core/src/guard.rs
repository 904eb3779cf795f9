//! The guard seam: hooks at the loop's boundaries that return [`Decision`]s.
//!
//! Budgets, time limits, loop detectors, the escalation ladder and the todo nudge are all
//! guards; the engine knows none of them by name. Guards do no I/O, and their state is plain
//! serde data ([`Guard::save_state`]) saved with the run, so a resumed run continues where it was
//! (F20).

use std::time::Duration;

use crate::config::LoopConfig;
pub use crate::counters::Counters;
use crate::event::Event;
use crate::message::{Message, ToolCall, ToolResult};
use crate::outcome::StopCause;
use crate::provider::ModelResponse;
use crate::tool::ToolChoice;

/// What a guard sees at a boundary.
#[derive(Debug, Clone, Copy)]
pub struct TurnView<'a> {
    /// The engine's counters.
    pub counters: &'a Counters,
    /// The conversation so far.
    pub messages: &'a [Message],
    /// The loop configuration.
    pub config: &'a LoopConfig,
    /// Wall-clock time since the run started.
    pub elapsed: Duration,
}

/// What a guard wants the engine to do.
#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    /// Add this message to the conversation (tag it internal unless a human should see it).
    Inject(Message),
    /// Use this tool choice on the next model call; a provider without tool choice gets an
    /// injected instruction instead.
    ForceToolChoice(ToolChoice),
    /// `before_tools` only: do not run this call, use this result instead.
    ReplaceResult(ToolResult),
    /// Stop the loop.
    Stop(StopCause),
    /// Publish an event.
    Emit(Event),
    /// Save a checkpoint of this kind now (the run journal asks for `journal_update`).
    Checkpoint(crate::store::CheckpointKind),
}

/// A failure to restore a guard's saved state.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot restore state of guard `{guard}`: {message}")]
pub struct GuardStateError {
    /// The guard.
    pub guard: String,
    /// Why.
    pub message: String,
}

impl GuardStateError {
    /// Builds the error from a serde failure.
    pub fn from_serde(guard: &str, err: impl std::fmt::Display) -> Self {
        Self { guard: guard.to_owned(), message: err.to_string() }
    }
}

/// A guard's state as serde data (for [`Guard::save_state`] of guards that are plain data).
pub fn state_to_value<T: serde::Serialize>(state: &T) -> serde_json::Value {
    serde_json::to_value(state).unwrap_or_default()
}

/// Restores what [`state_to_value`] produced, naming the guard on failure.
pub fn state_from_value<T: serde::de::DeserializeOwned>(
    guard: &str,
    state: serde_json::Value,
) -> Result<T, GuardStateError> {
    serde_json::from_value(state).map_err(|e| GuardStateError::from_serde(guard, e))
}

/// A policy that watches the loop at its boundaries. Every hook defaults to "no decision".
///
/// Decisions are applied in the order the guards were registered, and within a guard in the
/// order returned. At `before_turn` the first [`Decision::Stop`] of any guard wins (F1).
pub trait Guard: Send {
    /// A name unique within the run; its state is saved under it.
    fn name(&self) -> &str;

    /// Before each model call of the loop, after cancellation was checked.
    fn before_turn(&mut self, _view: &TurnView<'_>) -> Vec<Decision> {
        Vec::new()
    }

    /// After each model response of the loop.
    fn after_response(&mut self, _view: &TurnView<'_>, _response: &ModelResponse) -> Vec<Decision> {
        Vec::new()
    }

    /// Before a tool batch runs; the calls are valid (known tools, JSON-object arguments).
    fn before_tools(&mut self, _view: &TurnView<'_>, _calls: &[ToolCall]) -> Vec<Decision> {
        Vec::new()
    }

    /// After a tool batch, with every result of the batch in call order (rejected and replaced
    /// calls included).
    fn after_tools(
        &mut self,
        _view: &TurnView<'_>,
        _calls: &[ToolCall],
        _results: &[ToolResult],
    ) -> Vec<Decision> {
        Vec::new()
    }

    /// When the model says it is done. [`Decision::Inject`] keeps the loop going.
    fn at_finish(&mut self, _view: &TurnView<'_>, _text: &str) -> Vec<Decision> {
        Vec::new()
    }

    /// A new user message starts a new user turn: reset per-turn state here.
    fn on_user_turn(&mut self) {}

    /// Messages to place right after a history summary each time one replaces the history,
    /// in place of any earlier messages with the same tags (the run journal's pair, as the
    /// journal is now). Tag them with [`Message::tagged`] or build them internal.
    ///
    /// [`Message::tagged`]: crate::message::Message::tagged
    fn after_summary(&self) -> Vec<crate::message::Message> {
        Vec::new()
    }

    /// The guard's state as serde data.
    fn save_state(&self) -> serde_json::Value {
        serde_json::Value::Null
    }

    /// Restores what [`Guard::save_state`] produced.
    fn load_state(&mut self, _state: serde_json::Value) -> Result<(), GuardStateError> {
        Ok(())
    }
}
