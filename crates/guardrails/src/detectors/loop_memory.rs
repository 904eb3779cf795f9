//! A loop's memory across a short detour.
//!
//! An agent told to change its approach often changes one detail (another flag, the same edit
//! written differently, one extra command) and then goes back to the same calls. Counted from
//! zero again, every such detour would restart the ladder at its first rung, so a loop with a
//! detour every few calls would never reach `ask_human`. This memory keeps an interrupted
//! streak of stale calls *suspended* instead of forgetting it:
//!
//! - when the loop is back before the agent made sustained progress, the new run of stale
//!   calls *resumes* the suspended streak: the stale calls of both count, so the ladder
//!   continues from the rung it had reached. The loop is back when the new run repeats a call
//!   of its own, or when a streak already found to be a loop is interrupted and the call it
//!   ended on comes straight back. A test re-run once after each new edit (even a test and the
//!   command that quits its debugger) repeats nothing within its run, and resumes nothing;
//! - sustained progress is `forget_after` calls that brought something new since the
//!   interruption. Single stale calls in between (a test re-run after a different edit) neither
//!   resume nor refresh the memory, so edit → test → edit → test stays progress;
//! - a detour call whose output is what the loop's calls returned (the same multi-line output
//!   from a changed command) brought nothing new: it is judged by its effect, not its text, and
//!   counts as a stale call of the loop.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use crate::signature::OutputLines;

/// Observations of the loop's stale calls kept to recognise its outputs.
const OUTCOMES_KEPT: usize = 8;
/// Lines an output needs before "the same output as the loop" is evidence: a one-line answer
/// ("done", an empty result) is the same for too many different calls.
const OUTCOME_MIN_LINES: u32 = 2;

/// A streak interrupted by calls that brought something new.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Suspended {
    /// Its stale calls.
    pub(crate) len: u32,
    /// Calls that brought something new since it was interrupted.
    pub(crate) novel: u32,
    /// The signature of its last stale call.
    #[serde(default)]
    pub(crate) last: u64,
}

/// The suspended streak and the outputs of the loop's stale calls.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub(crate) struct LoopMemory {
    #[serde(default)]
    suspended: Option<Suspended>,
    /// (observation, call index) of the loop's latest stale calls, oldest first.
    #[serde(default)]
    outcomes: VecDeque<(u64, u64)>,
    /// The signatures of the current run of stale calls (its first few).
    #[serde(default)]
    run: Vec<u64>,
    /// The signature of the last stale call.
    #[serde(default)]
    last: u64,
}

impl LoopMemory {
    /// The call index of a stale call of the loop whose output was `observation`, when the
    /// output says enough for that to mean "the same effect".
    pub(crate) fn same_outcome(&self, observation: u64, lines: &OutputLines) -> Option<u64> {
        if lines.count < OUTCOME_MIN_LINES {
            return None;
        }
        self.outcomes.iter().rev().find(|(seen, _)| *seen == observation).map(|(_, index)| *index)
    }

    /// A stale call at `index` of the call `signature` with `observation`. Returns the
    /// suspended streak's length when this call resumes it: the current run of stale calls
    /// made this call before, or the suspended streak was already a loop (`detected_at` stale
    /// calls) whose last call this one repeats.
    pub(crate) fn on_stale(
        &mut self,
        index: u64,
        signature: u64,
        observation: u64,
        detected_at: u32,
    ) -> Option<u32> {
        if self.outcomes.len() == OUTCOMES_KEPT {
            self.outcomes.pop_front();
        }
        self.outcomes.push_back((observation, index));
        self.last = signature;
        let suspended = self.suspended?;
        let back = self.run.is_empty() && suspended.len >= detected_at && suspended.last == signature;
        if back || self.run.contains(&signature) {
            self.run.clear();
            return self.suspended.take().map(|s| s.len);
        }
        if self.run.len() < OUTCOMES_KEPT {
            self.run.push(signature);
        }
        None
    }

    /// A call that brought something new, ending a streak of `streak` stale calls (0: none).
    /// Returns true when the memory is cleared: the agent made sustained progress.
    pub(crate) fn on_novel(&mut self, streak: u32, forget_after: u32) -> bool {
        self.run.clear();
        if forget_after == 0 {
            self.clear();
            return true;
        }
        match &mut self.suspended {
            Some(s) if s.len >= streak => s.novel += 1,
            _ if streak > 0 => self.suspended = Some(Suspended { len: streak, novel: 1, last: self.last }),
            Some(s) => s.novel += 1,
            None => {}
        }
        let forgotten = match self.suspended {
            Some(s) => s.novel > forget_after,
            None => streak == 0,
        };
        if forgotten {
            self.clear();
        }
        forgotten
    }

    /// The suspended streak, if any.
    #[cfg(test)]
    pub(crate) fn suspended(&self) -> Option<Suspended> {
        self.suspended
    }

    pub(crate) fn clear(&mut self) {
        self.suspended = None;
        self.outcomes.clear();
        self.run.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_interrupted_streak_resumes_when_the_loop_comes_back() {
        let mut memory = LoopMemory::default();
        for i in 0..4 {
            assert_eq!(memory.on_stale(i, 3, 7, 9), None, "nothing suspended yet");
        }
        assert!(!memory.on_novel(4, 4), "one detour call");
        assert_eq!(memory.suspended(), Some(Suspended { len: 4, novel: 1, last: 3 }));
        assert_eq!(memory.on_stale(6, 3, 7, 9), None, "one stale call does not resume");
        assert_eq!(memory.on_stale(7, 3, 7, 9), Some(4), "the call again resumes the streak of four");
        assert_eq!(memory.suspended(), None);
        // A streak already found to be a loop resumes as soon as its last call is back.
        memory.on_stale(8, 3, 7, 2);
        assert!(!memory.on_novel(5, 4));
        assert_eq!(memory.on_stale(10, 4, 7, 2), None, "another call");
        assert!(!memory.on_novel(1, 4));
        assert_eq!(memory.on_stale(12, 3, 7, 2), Some(5), "the loop's call, straight back");
    }

    #[test]
    fn a_check_run_once_after_each_edit_resumes_nothing() {
        let mut memory = LoopMemory::default();
        memory.on_stale(0, 1, 7, 2);
        memory.on_stale(1, 2, 8, 2);
        assert!(!memory.on_novel(2, 8), "an edit");
        assert_eq!(memory.on_stale(3, 1, 7, 2), None, "the test again");
        assert_eq!(memory.on_stale(4, 2, 8, 2), None, "quitting its debugger again");
        assert!(!memory.on_novel(2, 8), "another edit");
        assert_eq!(memory.on_stale(6, 1, 7, 2), None);
        assert_eq!(memory.suspended(), Some(Suspended { len: 2, novel: 2, last: 2 }));
    }

    #[test]
    fn sustained_progress_forgets_and_single_stale_calls_do_not_refresh() {
        let mut memory = LoopMemory::default();
        memory.on_stale(0, 3, 7, 9);
        memory.on_stale(1, 3, 7, 9);
        assert!(!memory.on_novel(2, 3));
        // edit → test → edit → test: the tests are single stale calls.
        assert_eq!(memory.on_stale(3, 4, 9, 9), None);
        assert!(!memory.on_novel(1, 3));
        assert_eq!(memory.suspended(), Some(Suspended { len: 2, novel: 2, last: 3 }));
        assert!(!memory.on_novel(0, 3));
        assert!(memory.on_novel(0, 3), "the fourth new call is sustained progress");
        assert_eq!(memory.suspended(), None);
        assert_eq!(memory.same_outcome(7, &OutputLines::of("a\nb")), None, "its outputs are forgotten");
    }

    #[test]
    fn only_an_output_of_several_lines_is_the_same_outcome() {
        let mut memory = LoopMemory::default();
        memory.on_stale(4, 3, 11, 9);
        assert_eq!(memory.same_outcome(11, &OutputLines::of("error: x\nat line 3")), Some(4));
        assert_eq!(memory.same_outcome(11, &OutputLines::of("done")), None);
        assert_eq!(memory.same_outcome(12, &OutputLines::of("a\nb")), None);
    }
}
