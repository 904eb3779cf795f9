//! The strategies, each usable alone as a [`ContextPolicy`](looprail_loop_core::context::ContextPolicy).

mod auto;
mod keep_ends;
mod sliding_window;

pub use auto::{AutoCompaction, AutoCompactionConfig, RecoveryState};
pub use keep_ends::KeepEnds;
pub use sliding_window::SlidingWindow;
