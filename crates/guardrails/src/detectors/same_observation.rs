//! Same action, same observation (B3), with volatile numbers masked (B4).

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use crate::detection::{Detection, Detector, Observed, serde_state};
use crate::ladder::Level;

/// Fires when the same (call, observation fingerprint) pair occurs `threshold` times within
/// the last `window` calls: the model keeps doing the same thing and keeps getting the same
/// answer, even if the answer's line numbers or timestamps changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SameObservation {
    window: usize,
    threshold: usize,
    recent: VecDeque<(u64, (u64, u64))>,
}

impl SameObservation {
    /// A detector with the given window and threshold.
    pub fn new(window: u32, threshold: u32) -> Self {
        let window = window as usize;
        Self { window, threshold: threshold as usize, recent: VecDeque::with_capacity(window) }
    }
}

impl Detector for SameObservation {
    fn name(&self) -> &'static str {
        "same_observation"
    }

    fn observe(&mut self, call: &Observed<'_>) -> Option<Detection> {
        if self.recent.len() == self.window {
            self.recent.pop_front();
        }
        let pair = (call.signature.call, call.observation);
        let earlier: Vec<u64> = self.recent.iter().filter(|(_, p)| *p == pair).map(|(i, _)| *i).collect();
        self.recent.push_back((call.index, pair));
        (earlier.len() + 1 >= self.threshold).then_some(Detection {
            detector: "same_observation",
            tier: "same_observation",
            cap: Level::AskHuman,
            evidence: earlier,
        })
    }

    fn reset(&mut self) {
        self.recent.clear();
    }

    serde_state!("same_observation");
}
