//! The detector seam: a [`Detector`] looks at one tool call at a time and may report a
//! [`Detection`]; the [`LoopGuard`](crate::LoopGuard) feeds detections to the ladder.

use looprail_loop_core::guard::GuardStateError;

use crate::ladder::Level;
use crate::signature::{CallSignature, OutputLines};

/// One tool call as detectors see it.
#[derive(Debug, Clone, Copy)]
pub struct Observed<'a> {
    /// 0-based index of the call over the whole run.
    pub index: u64,
    /// The tool name.
    pub tool: &'a str,
    /// Tool + canonical arguments (B1).
    pub signature: CallSignature,
    /// Fingerprint of the result with volatile numbers masked (B4).
    pub observation: u64,
    /// The result's masked lines, for detectors that compare outputs line by line.
    pub lines: &'a OutputLines,
    /// True when the result is an error.
    pub is_error: bool,
    /// True when the call waits on something outside the agent (a status poll; see
    /// [`is_waiting_call`](crate::is_waiting_call)): its repetition is waiting, not a loop.
    pub waiting: bool,
}

/// The tier of a finding that says only "the same call again", not "nothing new" (the
/// insurance of [`NoveltyStreak`](crate::NoveltyStreak)): the [`LoopGuard`](crate::LoopGuard)'s
/// backstop does not count such a call as stale.
pub const TIER_IDENTICAL_CALL: &str = "identical_call";

/// A detector's finding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Detection {
    /// The detector's name.
    pub detector: &'static str,
    /// Which kind of loop, such as `identical` or `pattern`.
    pub tier: &'static str,
    /// The highest ladder level this finding may lead to.
    pub cap: Level,
    /// The earlier calls (0-based run-wide indices) this call was found to repeat, oldest
    /// first: why the detector fired.
    pub evidence: Vec<u64>,
}

/// A loop detector: windows over recent calls, O(1) per call in the run's length.
pub trait Detector: Send {
    /// The detector's name, unique within a stack.
    fn name(&self) -> &'static str;

    /// Looks at the next call.
    fn observe(&mut self, call: &Observed<'_>) -> Option<Detection>;

    /// Whether the call [`Detector::observe`] saw last brought something new. The ladder steps
    /// down only after calls of progress, not after calls that repeated something without a
    /// detection yet. By default every call without a detection counts.
    fn progress(&self) -> bool {
        true
    }

    /// Forgets everything (a new user turn).
    fn reset(&mut self);

    /// The state as serde data.
    fn save_state(&self) -> serde_json::Value;

    /// Restores [`Detector::save_state`]'s output.
    fn load_state(&mut self, state: serde_json::Value) -> Result<(), GuardStateError>;
}

/// Implements state save/load for a detector whose whole self is serde data.
macro_rules! serde_state {
    ($name:literal) => {
        fn save_state(&self) -> serde_json::Value {
            serde_json::to_value(self).unwrap_or_default()
        }

        fn load_state(
            &mut self,
            state: serde_json::Value,
        ) -> Result<(), looprail_loop_core::guard::GuardStateError> {
            *self = serde_json::from_value(state)
                .map_err(|e| looprail_loop_core::guard::GuardStateError::from_serde($name, e))?;
            Ok(())
        }
    };
}
pub(crate) use serde_state;
