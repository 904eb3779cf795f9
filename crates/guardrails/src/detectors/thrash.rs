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
    recent: VecDeque<(u64, CallSignature)>,
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
        let sig = call.signature;
        let earlier = |same: &dyn Fn(&CallSignature) -> bool| -> Vec<u64> {
            self.recent.iter().filter(|(_, s)| same(s)).map(|(i, _)| *i).collect()
        };
        let same_call = earlier(&|s| s.call == sig.call);
        let same_tool = earlier(&|s| s.tool == sig.tool);
        self.recent.push_back((call.index, sig));
        if same_call.len() + 1 >= self.identical {
            return Some(Detection {
                detector: "thrash",
                tier: "identical",
                cap: Level::AskHuman,
                evidence: same_call,
            });
        }
        if same_tool.len() + 1 >= self.pattern && same_tool.len() > same_call.len() {
            return Some(Detection {
                detector: "thrash",
                tier: "pattern",
                cap: self.pattern_cap,
                evidence: same_tool,
            });
        }
        None
    }

    fn reset(&mut self) {
        self.recent.clear();
    }

    serde_state!("thrash");
}
