//! The loop engine: [`Run`], a state machine that does no I/O, and its vocabulary.
//!
//! Protocol: call [`Run::step`] with [`Input::Start`], perform the returned [`Action`], feed
//! what happened back as the next [`Input`], and drain [`Run::poll_effect`] after every step
//! (events to publish, checkpoints to save). Repeat until [`Action::Finish`].

pub mod fallback;
mod io;
pub mod iterations;
mod run;
mod step;
pub mod tool_calls;

pub use io::{Action, CallSpec, Effect, Input, Tick};
pub use iterations::{IterationDecision, MaxIterationsHandler, StopAtCap};
pub use run::{
    CALL_ID_PREFIX, EngineError, Phase, Run, RunBuilder, RunCore, RunHeader, ask_human_definition,
    system_prompt_hash,
};
