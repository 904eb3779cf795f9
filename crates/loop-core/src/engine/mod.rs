//! The loop engine: [`Run`], a state machine that does no I/O, and its vocabulary.
//!
//! Protocol: call [`Run::step`] with [`Input::Start`], perform the returned [`Action`], feed
//! what happened back as the next [`Input`], and drain [`Run::poll_effect`] after every step
//! (events to publish, checkpoints to save). Repeat until [`Action::Finish`].

mod builder;
mod context_phase;
mod error;
pub mod fallback;
mod io;
pub mod iterations;
mod run;
mod step;
mod stop;
pub mod tool_calls;
mod tool_phase;
mod user_turn;

pub use builder::{RunBuilder, ask_human_definition};
pub use io::{Action, CallSpec, Effect, Input, Tick};
pub use iterations::{IterationDecision, MaxIterationsHandler, StopAtCap};
pub use run::{CALL_ID_PREFIX, EngineError, Phase, Run, RunCore, RunHeader, system_prompt_hash};
