//! Windowed thrash (F16).

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use crate::detection::{Detection, Detector, Observed, serde_state};
use crate::ladder::Level;
use crate::signature::CallSignature;

/// Identical thrash: the same (tool, arguments) at least `identical` times in the last
/// `window` calls. Pattern thrash: the same tool at least `pattern` times in the window with
/// differing arguments (reported only when identical thrash is not).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThrashWindow {
    window: usize,
    identical: usize,
    pattern: usize,
    pattern_cap: Level,
    recent: VecDeque<CallSignature>,
}

impl ThrashWindow {
    /// A detector with the given window and thresholds; pattern thrash climbs at most to
    /// `pattern_cap`.
    pub fn new(window: u32, identical: u32, pattern: u32, pattern_cap: Level) -> Self {
        let window = window as usize;
        Self {
            window,
            identical: identical as usize,
            pattern: pattern as usize,
            pattern_cap,
            recent: VecDeque::with_capacity(window),
        }
    }
}

impl Detector for ThrashWindow {
    fn name(&self) -> &'static str {
        "thrash"
    }

    fn observe(&mut self, call: &Observed<'_>) -> Option<Detection> {
        if self.recent.len() == self.window {
            self.recent.pop_front();
        }
        self.recent.push_back(call.signature);
        let sig = call.signature;
        let same_call = self.recent.iter().filter(|s| s.call == sig.call).count();
        if same_call >= self.identical {
            return Some(Detection { detector: "thrash", tier: "identical", cap: Level::AskHuman });
        }
        let same_tool = self.recent.iter().filter(|s| s.tool == sig.tool).count();
        if same_tool >= self.pattern && same_tool > same_call {
            return Some(Detection { detector: "thrash", tier: "pattern", cap: self.pattern_cap });
        }
        None
    }

    fn reset(&mut self) {
        self.recent.clear();
    }

    serde_state!("thrash");
}
