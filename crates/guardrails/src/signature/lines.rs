//! [`OutputLines`]: a tool result as its lines (volatile numbers masked), kept small enough
//! to compare the next output of the same call with it.
//!
//! Two outputs of one call are compared in two ways, both in O(lines) and with a bounded
//! summary of the earlier output rather than its text:
//! - their *change*: the sum of the masked lines' 64-bit hashes is a sketch of the output's
//!   multiset of lines, so the difference of two sums is a fingerprint of the lines added
//!   minus the lines removed. Two changes with the same difference (and the same line-count
//!   difference) are the same change: the same block inserted again, the same line appended
//!   again, wherever it landed;
//! - their *new content*: the lines of the later output that the earlier one did not show.

use super::observation::{mask_into, mask_with_fingerprint};

/// Bytes of an output read for its lines: a longer output is summarised by its start.
pub const LINES_MAX_BYTES: usize = 64 * 1024;
/// Lines whose hashes are kept for the new-content test; an output with more lines keeps
/// only its change sketch.
pub const LINES_KEPT: usize = 256;

/// An output's masked lines: their count, the wrapping sum of their hashes (the change
/// sketch) and the short hashes of the first [`LINES_KEPT`] lines.
///
/// ```
/// use looprail_guardrails::signature::OutputLines;
///
/// let before = OutputLines::of("[File: a.java (3 lines total)]\n1:class A {}\n2:}\n");
/// let after = OutputLines::of("[File: a.java (4 lines total)]\n1:class A {}\n2:class A {}\n3:}\n");
/// let again = OutputLines::of("[File: a.java (5 lines total)]\n1:class A {}\n2:class A {}\n3:class A {}\n4:}\n");
/// // Line numbers are masked: each output grew by the same line, already shown.
/// assert_eq!(after.new_lines_since(&before), Some(0));
/// assert_eq!(after.change_since(&before), again.change_since(&after));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct OutputLines {
    /// Lines read (at most [`LINES_MAX_BYTES`] of the output).
    pub count: u32,
    /// The wrapping sum of the lines' 64-bit hashes.
    pub sum: u64,
    /// The high 32 bits of each of the first [`LINES_KEPT`] lines' hashes, in order.
    pub hashes: Vec<u32>,
    /// False when the output had more lines, or more bytes, than are read whole.
    pub complete: bool,
}

/// What changed between two outputs of one call: the sketch difference and the line-count
/// difference. Equal changes are the same lines added and removed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct LineChange {
    /// The difference of the two sums (wrapping).
    pub sketch: u64,
    /// Lines added minus lines removed.
    pub lines: i64,
}

impl LineChange {
    /// True when nothing changed: the same lines, in any order.
    pub fn is_none(self) -> bool {
        self.sketch == 0 && self.lines == 0
    }
}

impl OutputLines {
    /// The lines of `text`: split at `\n`, every word that holds a digit masked as in
    /// [`observation_fingerprint`](super::observation_fingerprint).
    pub fn of(text: &str) -> Self {
        let all = text.as_bytes();
        let end = read_end(all);
        let mut normal = Vec::with_capacity(end + 16);
        mask_into(&all[..end], &mut normal);
        Self::from_masked(&normal, end == all.len())
    }

    fn from_masked(normal: &[u8], whole: bool) -> Self {
        let body = normal.strip_suffix(b"\n").unwrap_or(normal);
        let mut lines = Self { hashes: Vec::with_capacity(64), ..Self::default() };
        for_each_line_hash(body, |hash| {
            lines.count = lines.count.saturating_add(1);
            lines.sum = lines.sum.wrapping_add(hash);
            if lines.hashes.len() < LINES_KEPT {
                lines.hashes.push((hash >> 32) as u32);
            }
        });
        lines.complete = whole && lines.count as usize <= LINES_KEPT;
        lines
    }

    /// The change from `earlier` to `self`.
    pub fn change_since(&self, earlier: &OutputLines) -> LineChange {
        LineChange {
            sketch: self.sum.wrapping_sub(earlier.sum),
            lines: i64::from(self.count) - i64::from(earlier.count),
        }
    }

    /// Lines of `self` that `earlier` did not hold (numbers masked), or `None` when either
    /// output was too long to be kept whole.
    pub fn new_lines_since(&self, earlier: &OutputLines) -> Option<u32> {
        if !self.complete || !earlier.complete {
            return None;
        }
        let mut shown = earlier.hashes.clone();
        shown.sort_unstable();
        let new = self.hashes.iter().filter(|h| shown.binary_search(h).is_err()).count();
        Some(u32::try_from(new).unwrap_or(u32::MAX))
    }
}

/// A tool result's [`observation_fingerprint`](super::observation_fingerprint) and its
/// [`OutputLines`], masked once for both.
///
/// ```
/// use looprail_guardrails::signature::{observation_fingerprint, observe_output, OutputLines};
///
/// let text = "Ran 12 tests in 0.31s\nFAILED (failures=2)";
/// assert_eq!(observe_output(text), (observation_fingerprint(text), OutputLines::of(text)));
/// ```
pub fn observe_output(text: &str) -> (u64, OutputLines) {
    let all = text.as_bytes();
    if all.len() > LINES_MAX_BYTES {
        return (super::observation_fingerprint(text), OutputLines::of(text));
    }
    thread_local! {
        static NORMAL: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    NORMAL.with(|cell| {
        let mut normal = cell.borrow_mut();
        let fingerprint = mask_with_fingerprint(all, &mut normal);
        let lines = OutputLines::from_masked(&normal, true);
        if normal.capacity() > 2 * LINES_MAX_BYTES {
            *normal = Vec::new();
        }
        (fingerprint, lines)
    })
}

/// Where the bytes read for lines end: all of them, or the last whole line within
/// [`LINES_MAX_BYTES`].
fn read_end(all: &[u8]) -> usize {
    if all.len() <= LINES_MAX_BYTES {
        return all.len();
    }
    memchr::memrchr(b'\n', &all[..LINES_MAX_BYTES]).map_or(LINES_MAX_BYTES, |i| i + 1)
}

/// Calls `f` with the stable 64-bit hash of each line of `body` (split at `\n`).
fn for_each_line_hash(body: &[u8], mut f: impl FnMut(u64)) {
    let mut start = 0;
    for end in memchr::memchr_iter(b'\n', body) {
        f(hash_line(&body[start..end]));
        start = end + 1;
    }
    f(hash_line(&body[start..]));
}

/// A line's stable 64-bit hash, eight bytes at a time (lines are short: one multiply chain),
/// with a full avalanche so that sums of hashes stay uniform.
fn hash_line(line: &[u8]) -> u64 {
    const K: u64 = 0x9e37_79b9_7f4a_7c15;
    let absorb = |h: u64, word: u64| (h ^ word).wrapping_mul(K).rotate_left(31);
    let mut h = (line.len() as u64).wrapping_mul(K) ^ 0x2545_f491_4f6c_dd1d;
    let mut words = line.chunks_exact(8);
    for word in &mut words {
        let mut bytes = [0u8; 8];
        bytes.copy_from_slice(word);
        h = absorb(h, u64::from_le_bytes(bytes));
    }
    let rest = words.remainder();
    if !rest.is_empty() {
        let mut bytes = [0u8; 8];
        bytes[..rest.len()].copy_from_slice(rest);
        h = absorb(h, u64::from_le_bytes(bytes));
    }
    h = (h ^ (h >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    h = (h ^ (h >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    h ^ (h >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn an_appended_line_is_a_change_and_new_content_once() {
        let one = OutputLines::of("building...\nstill running");
        let two = OutputLines::of("building...\nstill running\nstill running");
        let three = OutputLines::of("building...\nstill running\nstill running\nstill running");
        assert_eq!(two.new_lines_since(&one), Some(0));
        assert_eq!(two.change_since(&one), three.change_since(&two));
        assert_eq!(two.change_since(&one).lines, 1);
        let moved = OutputLines::of("building...\nstill running\nstill running\ndone: 3 passed");
        assert_eq!(moved.new_lines_since(&two), Some(1));
        assert_ne!(moved.change_since(&two), three.change_since(&two));
    }

    #[test]
    fn long_outputs_keep_their_sketch_but_not_their_lines() {
        let long: String =
            (0..400).map(|i| format!("line {i} of a listing {}\n", "x".repeat(i % 7))).collect();
        let lines = OutputLines::of(&long);
        assert!(!lines.complete);
        assert_eq!(lines.count, 400);
        assert_eq!(lines.hashes.len(), LINES_KEPT);
        assert_eq!(lines.new_lines_since(&lines), None);
        assert!(lines.change_since(&lines).is_none());
        let huge = "y".repeat(LINES_MAX_BYTES + 10);
        assert!(!OutputLines::of(&huge).complete);
    }

    proptest! {
        /// Reordering lines, changing their numbers, or ending the output with a line break
        /// changes neither the sketch nor the new content.
        #[test]
        fn order_and_numbers_do_not_count(
            lines in prop::collection::vec(("[a-z .:]{0,12}", 0u32..100_000), 1..40),
            seed in any::<u64>(),
        ) {
            let text: Vec<String> = lines.iter().map(|(w, n)| format!("{w}{n}:{w}")).collect();
            let mut shuffled: Vec<String> =
                lines.iter().map(|(w, n)| format!("{w}{}:{w}", n.wrapping_mul(7) + 1)).collect();
            let len = shuffled.len();
            for i in (1..len).rev() {
                shuffled.swap(i, (seed as usize).wrapping_mul(i + 31) % (i + 1));
            }
            let a = OutputLines::of(&text.join("\n"));
            let b = OutputLines::of(&format!("{}\n", shuffled.join("\n")));
            prop_assert!(b.change_since(&a).is_none());
            prop_assert_eq!(b.new_lines_since(&a), Some(0));
        }

        /// Lines hash the same wherever they stand, and different lines differently.
        #[test]
        fn a_line_hashes_alike_wherever_it_stands(
            lines in prop::collection::vec("[a-z\r ]{0,30}", 1..12),
            prefix in "[a-z]{0,9}",
        ) {
            let hashes = |text: &str| {
                let mut out = Vec::new();
                for_each_line_hash(text.as_bytes(), |h| out.push(h));
                out
            };
            let alone: Vec<u64> = lines.iter().flat_map(|l| hashes(l)).collect();
            let together = hashes(&format!("{prefix}\n{}", lines.join("\n")));
            prop_assert_eq!(&together[1..], &alone[..]);
            for (i, a) in lines.iter().enumerate() {
                for (j, b) in lines.iter().enumerate() {
                    prop_assert_eq!(a == b, alone[i] == alone[j]);
                }
            }
        }

        /// The same block inserted anywhere, twice in a row, is the same change twice.
        #[test]
        fn the_same_block_inserted_again_is_the_same_change(
            base in prop::collection::vec("[a-z]{1,10}", 1..30),
            block in prop::collection::vec("[a-z]{1,10}", 1..8),
            at in any::<prop::sample::Index>(),
            again in any::<prop::sample::Index>(),
        ) {
            let insert = |lines: &[String], at: usize| -> Vec<String> {
                let mut out = lines[..at].to_vec();
                out.extend(block.iter().cloned());
                out.extend(lines[at..].iter().cloned());
                out
            };
            let once = insert(&base, at.index(base.len() + 1));
            let twice = insert(&once, again.index(once.len() + 1));
            let (a, b, c) =
                (OutputLines::of(&base.join("\n")), OutputLines::of(&once.join("\n")), OutputLines::of(&twice.join("\n")));
            prop_assert_eq!(b.change_since(&a), c.change_since(&b));
            prop_assert_eq!(c.new_lines_since(&b), Some(0));
        }
    }
}
