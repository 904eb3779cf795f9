//! Alternating cycles (B3): A-B-A-B-A-B, A-B-C-A-B-C-A-B-C, ...

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use crate::detection::{Detection, Detector, Observed, serde_state};
use crate::ladder::Level;

/// Fires when the last `period × repetitions` calls are one block of `period` calls (2 to
/// `max_period`, at least two distinct calls in it) repeated `repetitions` times.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CycleDetector {
    max_period: usize,
    repetitions: usize,
    recent: VecDeque<(u64, u64)>,
}

impl CycleDetector {
    /// A detector for cycles of length 2 to `max_period` repeated `repetitions` times.
    pub fn new(max_period: u32, repetitions: u32) -> Self {
        let max_period = max_period as usize;
        let repetitions = repetitions as usize;
        Self { max_period, repetitions, recent: VecDeque::with_capacity(max_period * repetitions) }
    }

    fn periodic(&self, period: usize) -> bool {
        let span = period * self.repetitions;
        let len = self.recent.len();
        if len < span {
            return false;
        }
        let start = len - span;
        let first = self.recent[len - 1].1;
        let block_has_two = (len - period..len).any(|i| self.recent[i].1 != first);
        block_has_two && (start..len - period).all(|i| self.recent[i].1 == self.recent[i + period].1)
    }
}

impl Detector for CycleDetector {
    fn name(&self) -> &'static str {
        "cycle"
    }

    fn observe(&mut self, call: &Observed<'_>) -> Option<Detection> {
        if self.recent.len() == self.max_period * self.repetitions {
            self.recent.pop_front();
        }
        self.recent.push_back((call.index, call.signature.call));
        let period = (2..=self.max_period).find(|period| self.periodic(*period))?;
        let span = period * self.repetitions;
        let evidence = self.recent.iter().skip(self.recent.len() - span).map(|(i, _)| *i);
        Some(Detection {
            detector: "cycle",
            tier: "alternating",
            cap: Level::AskHuman,
            evidence: evidence.take(span - 1).collect(),
        })
    }

    fn reset(&mut self) {
        self.recent.clear();
    }

    serde_state!("cycle");
}
