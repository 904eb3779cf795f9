//! Deterministic stand-ins for the seams, for tests, simulations and the demo (feature
//! `testkit`): [`ScriptedProvider`] answers from a script or a seed, and [`RecordingTool`]
//! counts its calls and fails on command. With the `proptest` feature, [`strategies`] gives
//! random model replies, scripts and run limits for property tests.

mod rng;
mod scripted;
#[cfg(feature = "proptest")]
pub mod strategies;
mod tools;

pub use rng::SplitMix64;
pub use scripted::{CallRecord, ScriptStep, ScriptedProvider};
pub use tools::RecordingTool;
