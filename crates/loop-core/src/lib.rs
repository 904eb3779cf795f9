//! The vocabulary, the trait seams and the loop engine of looprail.
//!
//! An agent loop (model call → tool calls → observations → repeat) is modelled as [`Run`], a
//! state machine that does no I/O: it is fed what happened and answers with what to do next.
//! [`Driver`] is the thin async layer that performs those actions with a [`Provider`], a
//! [`ToolSet`] and an optional [`CheckpointStore`](store::CheckpointStore). Everything that
//! decides when to stop (budgets, time limits, loop detectors, nudges) is a [`Guard`]; what the
//! model sees of the history is a [`ContextPolicy`](context::ContextPolicy).
//!
//! The engine guarantees: termination checks before every model call, hard caps with no
//! configuration, a reply on every abnormal stop except cancellation, budgets
//! that never cut a turn in flight, cooperative cancellation at safe boundaries,
//! checked state transitions, truncated replies continued, unknown tools or
//! invalid arguments answered with error results the model sees instead of ending the run, and
//! no call run from a reply the provider refused.
//!
//! ```
//! use std::sync::Arc;
//! use looprail_loop_core::prelude::*;
//! use looprail_loop_core::testkit::{RecordingTool, ScriptedProvider};
//!
//! let provider = ScriptedProvider::new("scripted")
//!     .call_tool("lookup", r#"{"q": "rust"}"#)
//!     .reply_text("Rust is a systems programming language.");
//! let lookup = RecordingTool::new("lookup").idempotent(true).output("a systems language");
//! let tools = ToolSet::new().with(lookup.clone());
//!
//! let mut run = Run::builder(LoopConfig::default())
//!     .system("You answer briefly.")
//!     .user("What is Rust?")
//!     .tools(tools.definitions())
//!     .build()?;
//! let driver = Driver::new(Arc::new(provider), tools);
//! let runtime = tokio::runtime::Builder::new_current_thread().enable_time().build()?;
//! let outcome = runtime.block_on(driver.drive(&mut run))?;
//!
//! assert_eq!(outcome.state, RunState::Completed);
//! assert_eq!(outcome.final_text, "Rust is a systems programming language.");
//! assert_eq!(lookup.call_count(), 1);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod config;
pub mod context;
pub mod counters;
pub mod driver;
pub mod engine;
pub mod event;
pub mod executor;
pub mod finalize;
pub mod guard;
pub mod guards;
pub mod json_text;
pub mod message;
pub mod outcome;
pub mod price;
pub mod profile;
pub mod provider;
pub mod state;
pub mod store;
pub mod telemetry;
#[cfg(feature = "testkit")]
pub mod testkit;
pub mod tool;
pub mod transcript;
pub mod watch;

pub use driver::{Driver, DriverError};
pub use engine::Run;
pub use guard::Guard;
pub use provider::Provider;
pub use tool::{Tool, ToolSet};

/// The types most programs need, in one import.
pub mod prelude {
    pub use crate::config::LoopConfig;
    pub use crate::driver::{Driver, DriverError};
    pub use crate::engine::{Action, Effect, Input, IterationDecision, Run, Tick};
    pub use crate::event::{Event, EventSink};
    pub use crate::guard::{Decision, Guard, TurnView};
    pub use crate::message::{ContentPart, Message, Role, ToolCall, ToolResult};
    pub use crate::outcome::{FallbackKind, LimitReason, Outcome, StopCause};
    pub use crate::provider::{
        ModelRequest, ModelResponse, Provider, ProviderError, ProviderErrorKind, StopReason, Usage,
    };
    pub use crate::state::RunState;
    pub use crate::tool::{Tool, ToolChoice, ToolDefinition, ToolError, ToolSet};
}
