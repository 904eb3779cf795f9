//! looprail: the runtime layer that keeps LLM agent loops safe, cheap and recoverable.
//!
//! **Status: early.** Today this facade re-exports [`looprail_loop_core`] as [`core`]; the
//! other crates join it as their issues land, and `Agent::builder()` with every default of
//! FEATURES.md switched on is tracked by issue 9.
//!
//! ```
//! use looprail::core::prelude::*;
//!
//! let config = LoopConfig::default();
//! assert_eq!(config.limits.max_iterations, 50);
//! ```

pub use looprail_loop_core as core;
