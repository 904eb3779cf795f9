//! Repeated effects: whether a call's output, compared with the output of the same call a few
//! calls earlier, brings anything new.
//!
//! An output that differs from the last one is not yet progress. It is repetition when
//! - nothing changed but the order of lines (numbers are masked already),
//! - it changed by the same change as last time: the same text inserted or appended again,
//!   wherever it landed (an agent sending the same edit while the file grows), or
//! - it grew only by lines the last output already showed;
//!
//! and it *holds* (neither progress nor repetition) when it grew mostly by such lines with one
//! new line at most, such as a pager's "(13 more lines below)" appearing once the file no longer
//! fits its window. Anything else is new content: a log tail with new lines, a status that
//! moved, a test whose result changed.
//!
//! Only the last [`CYCLE_MAX_PERIOD`] calls are kept, each as its [`OutputLines`] summary (a
//! bounded one: at most [`LINES_KEPT`](crate::signature::LINES_KEPT) short line hashes), so
//! a call costs O(its output) and the memory is bounded whatever the run's length.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use super::words::Words;
use crate::signature::{LineChange, OutputLines};

/// The furthest back (in calls) the same call is looked for: a short cycle of calls.
pub(crate) const CYCLE_MAX_PERIOD: usize = 5;

/// How an output compares with the same call's previous one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Effect {
    /// No recent output of this call, or the output brings new content.
    New,
    /// Nothing new: the previous output of the call was at `matched`.
    Repeated { matched: u64 },
    /// Mostly the previous output again, with one new line at most.
    Hold,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Kept {
    index: u64,
    call: u64,
    lines: OutputLines,
    change: Option<LineChange>,
}

/// The last few calls' output summaries.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct RecentOutputs {
    kept: VecDeque<Kept>,
}

impl RecentOutputs {
    /// Compares `output` with the last output of `call` among the recent calls, then keeps it.
    pub(crate) fn judge(&mut self, index: u64, call: u64, lines: &OutputLines) -> Effect {
        let previous = self
            .kept
            .iter()
            .rev()
            .find(|k| k.call == call && index.saturating_sub(k.index) <= CYCLE_MAX_PERIOD as u64);
        let (effect, change) = match previous {
            None => (Effect::New, None),
            Some(previous) => {
                let change = lines.change_since(&previous.lines);
                (judge_change(lines, previous, change), Some(change))
            }
        };
        // The oldest summary's buffer is reused for the newest (no allocation per call).
        let kept = match self.kept.len() == CYCLE_MAX_PERIOD {
            true => self.kept.pop_front().map(|mut oldest| {
                oldest.lines.hashes.clone_from(&lines.hashes);
                let lines = OutputLines { hashes: oldest.lines.hashes, ..*lines };
                Kept { index, call, lines, change }
            }),
            false => None,
        };
        self.kept.push_back(kept.unwrap_or_else(|| Kept { index, call, lines: lines.clone(), change }));
        effect
    }

    pub(crate) fn clear(&mut self) {
        self.kept.clear();
    }

    pub(crate) fn save(&self) -> Vec<SavedOutput> {
        self.kept.iter().map(SavedOutput::from).collect()
    }

    pub(crate) fn load(saved: Vec<SavedOutput>) -> Self {
        let skip = saved.len().saturating_sub(CYCLE_MAX_PERIOD);
        Self { kept: saved.into_iter().skip(skip).map(Kept::from).collect() }
    }
}

fn judge_change(lines: &OutputLines, previous: &Kept, change: LineChange) -> Effect {
    let repeated = Effect::Repeated { matched: previous.index };
    if change.is_none() || previous.change == Some(change) {
        return repeated;
    }
    match lines.new_lines_since(&previous.lines) {
        Some(0) if change.lines >= 0 => repeated,
        Some(1) if change.lines > 1 => Effect::Hold,
        _ => Effect::New,
    }
}

/// A kept summary in a detector's saved state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct SavedOutput {
    index: u64,
    call: u64,
    count: u32,
    sum: u64,
    complete: bool,
    /// The short line hashes, two to a word.
    hashes: Words,
    /// Their number (the last word may hold one).
    hashes_len: u32,
    change: Option<LineChange>,
}

impl From<&Kept> for SavedOutput {
    fn from(kept: &Kept) -> Self {
        let words = kept
            .lines
            .hashes
            .chunks(2)
            .map(|pair| (u64::from(pair[0]) << 32) | pair.get(1).map_or(0, |low| u64::from(*low)))
            .collect();
        Self {
            index: kept.index,
            call: kept.call,
            count: kept.lines.count,
            sum: kept.lines.sum,
            complete: kept.lines.complete,
            hashes: Words(words),
            hashes_len: u32::try_from(kept.lines.hashes.len()).unwrap_or(u32::MAX),
            change: kept.change,
        }
    }
}

impl From<SavedOutput> for Kept {
    fn from(saved: SavedOutput) -> Self {
        let mut hashes: Vec<u32> =
            saved.hashes.0.iter().flat_map(|w| [(w >> 32) as u32, *w as u32]).collect();
        hashes.truncate(saved.hashes_len as usize);
        // A state that lost hashes cannot answer the new-content test: it is not complete.
        let complete = saved.complete && hashes.len() == saved.hashes_len as usize;
        hashes.truncate(crate::signature::LINES_KEPT);
        Kept {
            index: saved.index,
            call: saved.call,
            lines: OutputLines { count: saved.count, sum: saved.sum, hashes, complete },
            change: saved.change,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(copies: usize) -> String {
        let mut text = format!("[File: Main.java ({} lines total)]\n", 3 + copies * 2);
        let mut n = 1;
        for _ in 0..copies {
            text.push_str(&format!("{n}:import java.util.List;\n{}:import java.util.Map;\n", n + 1));
            n += 2;
        }
        text.push_str(&format!("{n}:class Main {{}}\nFile updated."));
        text
    }

    #[test]
    fn the_same_insertion_again_is_repetition_and_new_lines_are_not() {
        let mut recent = RecentOutputs::default();
        assert_eq!(recent.judge(0, 7, &OutputLines::of(&file(1))), Effect::New);
        assert_eq!(
            recent.judge(1, 7, &OutputLines::of(&file(2))),
            Effect::Repeated { matched: 0 },
            "grew by lines shown"
        );
        assert_eq!(recent.judge(2, 7, &OutputLines::of(&file(3))), Effect::Repeated { matched: 1 });
        let other = format!("{}\n42:class Other {{}}", file(3));
        assert_eq!(recent.judge(3, 7, &OutputLines::of(&other)), Effect::New, "a line never shown");
        assert_eq!(recent.judge(4, 8, &OutputLines::of(&file(3))), Effect::New, "another call");
    }

    #[test]
    fn a_call_further_back_than_a_short_cycle_is_not_compared() {
        let mut recent = RecentOutputs::default();
        recent.judge(0, 7, &OutputLines::of("same"));
        for i in 1..=5 {
            recent.judge(i, 100 + i, &OutputLines::of("other"));
        }
        assert_eq!(recent.judge(6, 7, &OutputLines::of("same")), Effect::New);
    }

    #[test]
    fn one_new_line_among_repeated_ones_holds() {
        let mut recent = RecentOutputs::default();
        recent.judge(0, 7, &OutputLines::of("a\nb\nc"));
        assert_eq!(recent.judge(1, 7, &OutputLines::of("a\nb\nc\na\nb\n(3 more lines below)")), Effect::Hold);
        assert_eq!(
            recent.judge(2, 7, &OutputLines::of("a\nb\nc\na\nb\nX")),
            Effect::New,
            "a line replaced by a new one"
        );
    }

    #[test]
    fn the_summaries_survive_a_save_and_load() {
        let mut recent = RecentOutputs::default();
        recent.judge(0, 7, &OutputLines::of(&file(1)));
        recent.judge(1, 7, &OutputLines::of(&file(2)));
        let json = serde_json::to_string(&recent.save()).unwrap();
        let mut loaded = RecentOutputs::load(serde_json::from_str(&json).unwrap());
        assert_eq!(loaded, recent);
        assert_eq!(loaded.judge(2, 7, &OutputLines::of(&file(3))), Effect::Repeated { matched: 1 });
    }
}
