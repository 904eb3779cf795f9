//! The window detectors the [`LoopGuard`](crate::LoopGuard) runs after every tool call.

mod cycle;
mod effect;
mod loop_memory;
mod novelty;
mod same_observation;
mod thrash;
mod words;

pub use cycle::CycleDetector;
pub use novelty::NoveltyStreak;
pub use same_observation::SameObservation;
pub use thrash::ThrashWindow;
