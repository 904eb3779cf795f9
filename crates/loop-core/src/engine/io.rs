//! What the driver feeds the engine ([`Input`], [`Tick`]) and what the engine asks for
//! ([`Action`]), plus the side effects it queues ([`Effect`]).

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::context::SummaryRequest;
use crate::engine::iterations::IterationDecision;
use crate::event::Event;
use crate::message::{ToolCall, ToolResult};
use crate::outcome::Outcome;
use crate::provider::{CallPurpose, ModelResponse, ProviderError};
use crate::store::CheckpointKind;
use crate::tool::ToolChoice;

/// What happened since the last step.
#[derive(Debug, Clone, PartialEq)]
pub enum Input {
    /// Begin, or pick up after a restore: the engine answers with the pending action.
    Start,
    /// The model call answered.
    ModelReply(ModelResponse),
    /// The model call failed for good (after any retries the provider wrapper made).
    ModelFailed(ProviderError),
    /// The tool batch finished; one result per call, in any order.
    ToolsDone(Vec<ToolResult>),
    /// The max-iterations handler's answer.
    IterationDecision(IterationDecision),
    /// The summary call's response to [`Action::Summarize`], or why there is none (failure,
    /// timeout).
    SummaryDone(Result<ModelResponse, String>),
}

/// The clock reading and cancel flag at the moment of a step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Tick {
    /// Wall-clock time since the run started (across restarts).
    pub elapsed: Duration,
    /// True once cancellation was requested.
    pub cancel_requested: bool,
}

impl Tick {
    /// A tick at `elapsed` without cancellation.
    pub fn at(elapsed: Duration) -> Self {
        Self { elapsed, cancel_requested: false }
    }
}

/// The parameters of one model call; the history itself is borrowed from the run by
/// [`crate::engine::Run::model_request`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallSpec {
    /// Why the call is made.
    pub purpose: CallPurpose,
    /// The tool choice for this call.
    pub tool_choice: ToolChoice,
    /// A system-level instruction for this call only.
    pub instruction: Option<String>,
}

/// What the driver must do next.
// One action exists per step and none is stored in bulk, so the large `Finish` variant costs
// nothing worth a box (and an allocation) on every finish.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Call the model; answer with [`Input::ModelReply`] or [`Input::ModelFailed`].
    CallModel(CallSpec),
    /// Run these tool calls (concurrently is fine); answer with [`Input::ToolsDone`].
    RunTools(Vec<ToolCall>),
    /// The iteration cap was hit: ask the max-iterations handler, answer with
    /// [`Input::IterationDecision`] (F11).
    MaxIterationsReached {
        /// Iterations consumed.
        count: u32,
    },
    /// Write this summary of old history with a (cheap) model; answer with
    /// [`Input::SummaryDone`] (F27).
    Summarize(SummaryRequest),
    /// The run is over (or waits on a human); nothing more to do.
    Finish(Outcome),
}

/// A side effect the driver performs between steps, in order.
#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    /// Publish an event.
    Emit(Event),
    /// The step crossed this safe boundary: save a checkpoint after the step (one per step,
    /// under the last boundary's kind, with the state the step ended in).
    Checkpoint(CheckpointKind),
}
