//! Degenerate replies (B14): the same text again and again inside ONE reply, found while it
//! streams.
//!
//! A model sometimes falls into repeating a sentence or a block until its token limit. No call
//! repeats, so the loop detectors see nothing, and every token is billed. The
//! [`RepetitionDetector`] reads a reply's text as it arrives and fires once the text has become
//! periodic: the same block of `period` bytes (1 to `max_period`) `repeat_count` times in a row,
//! over at least `repeat_count × chunk_bytes` bytes.
//!
//! How, in O(1) amortised per byte with bounded memory:
//! - a rolling (gear) hash over the last `chunk_bytes` bytes marks *anchors*: content-defined
//!   ones (about one every 32 bytes; past 256 bytes without one, one in 8, so a long block
//!   whose chunks hold none still has some), and the chunk ending every block of 16 positions
//!   (a short period's few chunks may hold no content anchor, but it brings a block's last
//!   chunk back a multiple of the period later); an anchor whose chunk was seen `d` bytes
//!   earlier (within `max_period`) proposes the period `d`. The sightings are kept two to a
//!   bucket, so the few anchors of a short period never keep evicting each other;
//! - each proposed period (a few at a time) is then *verified* byte by byte against the text `d`
//!   bytes back, kept in a buffer of at most `2 × max_period` bytes: only text that really is
//!   periodic counts, never a hash match alone;
//! - the repetition starts where the text began to equal itself `d` bytes back; the reply is
//!   cut there, one copy of the block kept.
//!
//! Ordinary documents repeat structure, not text: a markdown table's rows, a list's bullets and
//! a code block's indentation differ from one line to the next, and short repeats (a divider of
//! dashes) are far below the minimum. Code blocks and tables, where identical lines are more
//! common, need four times as many repeats, as do tool-call arguments (code and data).
//!
//! ```
//! use looprail_guardrails::repetition::{RepetitionConfig, RepetitionDetector};
//!
//! let mut detector = RepetitionDetector::new(&RepetitionConfig::default(), false);
//! let block = "The answer is in the report, section two, which I will now quote again. ";
//! let reply = format!("Let me check. {}", block.repeat(40));
//! let found = reply
//!     .as_bytes()
//!     .chunks(16) // as a stream delivers it
//!     .find_map(|delta| detector.feed(std::str::from_utf8(delta).unwrap_or_default()))
//!     .expect("a chanting reply is found");
//! assert_eq!(found.period as usize, block.len());
//! // Cut where the text began to repeat itself: the ". " before the block already matched
//! // the block's end, so one copy of the block is kept, that ". " standing for its end.
//! assert_eq!(&reply[..found.keep as usize], "Let me check. The answer is in the report, section two, which I will now quote again");
//! // Found within ten copies of the block, and the 128 bytes small pieces are read by.
//! assert!(found.seen <= ("Let me check. ".len() + 10 * block.len() + 128) as u64);
//! ```

use serde::{Deserialize, Serialize};

mod config;
mod gear;
mod lines;

pub use config::RepetitionConfig;
use gear::GEAR;
use lines::LineState;

/// A degenerate stretch of a reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Repetition {
    /// Bytes of the reply to keep: up to the end of the first copy of the block. A character
    /// boundary when it is within the last `2 × max_period` bytes fed; a caller holding more
    /// rounds it down to one ([`floor_boundary`]).
    pub keep: u64,
    /// The repeated block's length in bytes.
    pub period: u32,
    /// Whole copies of the block seen when it was found.
    pub repeats: u32,
    /// Bytes of the reply read when it was found.
    pub seen: u64,
}

/// `at` rounded down to a character boundary of `text` (and to its length).
pub fn floor_boundary(text: &str, at: u64) -> usize {
    let mut at = usize::try_from(at).unwrap_or(usize::MAX).min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// Periods verified at once.
const CANDIDATES: usize = 4;
/// Anchor table buckets (a power of two), of two entries each.
const BUCKETS: usize = 128;
/// The anchor table: in each bucket, two (key, position where it was last seen) entries.
type Sightings = [[(u64, u64); 2]; BUCKETS];
/// Content anchors are about one in 2^ANCHOR_BITS positions.
const ANCHOR_BITS: u32 = 5;
/// Past SPARSE_GAP bytes without a content anchor, a chunk is an anchor one in 2^SPARSE_BITS.
const SPARSE_BITS: u32 = 3;
/// See [`SPARSE_BITS`]: eight times the mean distance between content anchors.
const SPARSE_GAP: u64 = 256;
/// Positions of the aligned blocks whose last chunk is an anchor too.
const BLOCK: u64 = 16;
/// Keeps a block's last chunk apart from the same chunk as a content anchor in the table.
const BLOCK_SALT: u64 = 0x5bd1_e995_0000_0001;
/// Bytes read at a time from a stream of small pieces.
const BATCH: u64 = 128;
/// Code blocks, tables and tool arguments need this many times the repeats.
const RELAXED: u64 = 4;

#[derive(Debug, Clone, Copy, Default)]
struct Candidate {
    /// 0: free.
    period: u64,
    /// Where the text began to equal itself `period` bytes back.
    run_start: u64,
    /// Proposed inside a code block or a table row: needs more repeats.
    relaxed: bool,
    /// Its run has been extended back to where the repetition began.
    extended: bool,
}

/// Finds periodic repetition in a stream of text (see the module docs).
#[derive(Debug, Clone)]
pub struct RepetitionDetector {
    chunk: u32,
    repeat_count: u64,
    max_period: u64,
    /// Arguments (code and data): always relaxed.
    arguments: bool,
    /// The text from `base` on (at most `2 × max_period` bytes are kept).
    buffer: Vec<u8>,
    base: u64,
    gear: u64,
    /// Where sparse anchors start: [`SPARSE_GAP`] bytes after the last content anchor ended.
    sparse_from: u64,
    /// Bytes the hash has read (the rest waits for a batch).
    scanned: u64,
    /// The anchors of the batch being read.
    pending: Vec<(u64, u64, bool)>,
    /// The last sightings of anchor keys, two in each of [`BUCKETS`], made at the first anchor
    /// (most replies a gateway watches are too short to have one).
    anchors: Option<Box<Sightings>>,
    candidates: [Candidate; CANDIDATES],
    /// Line structure: code fences and table rows.
    lines: LineState,
    fired: bool,
}

impl RepetitionDetector {
    /// A detector with `config`; `arguments` for a tool call's arguments (relaxed, as code).
    pub fn new(config: &RepetitionConfig, arguments: bool) -> Self {
        let max_period = u64::from(config.max_period.clamp(64, 65_536));
        Self {
            chunk: config.chunk_bytes.clamp(16, 64),
            repeat_count: u64::from(config.repeat_count.max(2)),
            max_period,
            arguments,
            buffer: Vec::new(),
            base: 0,
            gear: 0,
            sparse_from: SPARSE_GAP,
            scanned: 0,
            pending: Vec::new(),
            anchors: None,
            candidates: [Candidate::default(); CANDIDATES],
            lines: LineState::default(),
            fired: false,
        }
    }

    /// Bytes fed so far.
    pub fn seen(&self) -> u64 {
        self.base + self.buffer.len() as u64
    }

    /// Feeds the next piece of the text; the repetition once the text has degenerated (once:
    /// later calls return `None`).
    pub fn feed(&mut self, text: &str) -> Option<Repetition> {
        if self.fired || text.is_empty() {
            return None;
        }
        self.buffer.extend_from_slice(text.as_bytes());
        // Small pieces (a stream's deltas are a few bytes) are read BATCH bytes at a time: the
        // work per piece stays small, and a repetition is found at most BATCH bytes later.
        if self.seen() - self.scanned < BATCH {
            return None;
        }
        self.read_pending()
    }

    /// Reads what is still pending of a text that has ended (a complete reply): the repetition,
    /// if the text degenerated in its last bytes.
    pub fn finish(&mut self) -> Option<Repetition> {
        if self.fired || self.seen() == self.scanned {
            return None;
        }
        self.read_pending()
    }

    fn read_pending(&mut self) -> Option<Repetition> {
        let start = self.scanned;
        self.lines.track(&self.buffer[(start - self.base) as usize..]);
        self.scan(start);
        self.scanned = self.seen();
        let found = self.verify(start);
        if let Some(found) = &found {
            self.fired = true;
            // Cut on a character boundary of what was fed.
            let mut keep = found.keep;
            while keep > self.base && !self.is_boundary(keep) {
                keep -= 1;
            }
            return Some(Repetition { keep, ..*found });
        }
        self.trim();
        None
    }

    /// Runs the rolling hash over the bytes from `start` on, proposing a period at each anchor.
    fn scan(&mut self, start: u64) {
        let chunk_mask = if self.chunk == 64 { u64::MAX } else { (1u64 << self.chunk) - 1 };
        let anchor_shift = self.chunk - ANCHOR_BITS;
        let anchor_mask = (1u64 << ANCHOR_BITS) - 1;
        let sparse_mask = (1u64 << SPARSE_BITS) - 1;
        // The anchors are gathered first (the buffer is read meanwhile), then proposed. The hash
        // lives in a local; the text is taken block by block, aligned on BLOCK positions, so no
        // position is counted per byte.
        let mut anchors = std::mem::take(&mut self.pending);
        anchors.clear();
        let bytes = &self.buffer[(start - self.base) as usize..];
        let (mut gear, mut sparse_from) = (self.gear, self.sparse_from);
        let mut i = 0;
        while i < bytes.len() {
            let position = start + i as u64;
            let block_end = (i + (BLOCK - position % BLOCK) as usize).min(bytes.len());
            // Content-defined anchors: one position in 2^ANCHOR_BITS, by the chunk's content;
            // past SPARSE_GAP bytes without one, one in 2^SPARSE_BITS (the same bits, fewer of
            // them). In periodic text the distance to the last content anchor is periodic too
            // (or grows without end), so the sparse anchors come back a period later. Blocks
            // that end before sparse anchors could start skip their test.
            let sparse = start + block_end as u64 > sparse_from;
            for (k, &b) in bytes[i..block_end].iter().enumerate() {
                gear = (gear << 1).wrapping_add(GEAR[b as usize]);
                let hit = (gear >> anchor_shift) & anchor_mask;
                if hit == 0 {
                    sparse_from = position + k as u64 + 1 + SPARSE_GAP;
                    anchors.push((gear & chunk_mask, position + k as u64 + 1, false));
                } else if sparse && hit & sparse_mask == 0 && position + k as u64 >= sparse_from {
                    anchors.push((gear & chunk_mask, position + k as u64 + 1, false));
                }
            }
            i = block_end;
            // And the chunk ending each block: a short period (whose few chunks may hold no
            // content anchor) brings the same chunk back at a block's end a multiple of the
            // period later (their least common multiple).
            let position = start + i as u64;
            if position.is_multiple_of(BLOCK) {
                anchors.push(((gear & chunk_mask) ^ BLOCK_SALT, position, true));
            }
        }
        (self.gear, self.sparse_from) = (gear, sparse_from);
        for &(key, position, block_end) in &anchors {
            self.anchor(key, position, block_end);
        }
        self.pending = anchors;
    }

    fn byte(&self, at: u64) -> u8 {
        self.buffer[(at - self.base) as usize]
    }

    fn is_boundary(&self, at: u64) -> bool {
        at >= self.seen() || (self.byte(at) & 0xC0) != 0x80
    }

    /// An anchor chunk ending at `position` (at a block's end, or by its content): proposes the
    /// period since its last sighting.
    fn anchor(&mut self, key: u64, position: u64, block_end: bool) {
        let table = self.anchors.get_or_insert_with(|| Box::new([[(0, 0); 2]; BUCKETS]));
        let bucket =
            &mut table[(key.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - BUCKETS.trailing_zeros())) as usize];
        // The entry holding `key`, else the one it replaces, chosen by `position`. Periodic
        // text brings the same few keys back in turn: two sharing a bucket soon both stay, and
        // of three or more each is still there at its next sighting now and then (the older
        // one always replaced, they would evict each other forever and the period would never
        // be proposed).
        let way = if bucket[0].0 == key {
            0
        } else if bucket[1].0 == key {
            1
        } else {
            (position.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 63) as usize
        };
        let (last_key, last_position) = std::mem::replace(&mut bucket[way], (key, position));
        if last_key != key || last_position == 0 {
            return;
        }
        let mut period = position - last_position;
        if period == 0 || period > self.max_period {
            return;
        }
        if block_end {
            // A block's last chunk comes back a multiple (the least common multiple with the
            // block) of a short period later: the period is the smallest the last `period`
            // bytes follow.
            period = self.smallest_period(period, position - period, position).0;
        }
        if self.candidates.iter().any(|c| c.period == period) {
            return;
        }
        // The run starts here for now; once it has held for a whole period, how far back it
        // already went is looked up (most proposals in ordinary text die before that).
        let run_start = position;
        let free = self.candidates.iter().position(|c| c.period == 0);
        // Else replace the candidate with the shortest run.
        let slot = free
            .unwrap_or_else(|| (0..CANDIDATES).max_by_key(|&i| self.candidates[i].run_start).unwrap_or(0));
        let relaxed = self.arguments || self.lines.in_fence || self.lines.table_line;
        self.candidates[slot] = Candidate { period, run_start, relaxed, extended: false };
    }

    /// How many bytes before `position` equal the bytes `period` before them (at most
    /// `limit`, and within the buffer): eight bytes at a time, then one by one.
    fn matching_back(&self, position: u64, period: u64, limit: u64) -> u64 {
        let end = (position - self.base) as usize;
        let period = period as usize;
        if end <= period {
            return 0;
        }
        let limit = (limit as usize).min(end - period);
        let (text, mut n) = (&self.buffer[..end], 0usize);
        while n + 8 <= limit && text[end - n - 8..end - n] == text[end - n - 8 - period..end - n - period] {
            n += 8;
        }
        while n < limit && text[end - n - 1] == text[end - n - 1 - period] {
            n += 1;
        }
        n as u64
    }

    /// Bytes of periodic text that make it degenerate (four times more in code and tables).
    fn needed_as(&self, period: u64, relaxed: bool) -> u64 {
        let factor = if relaxed { RELAXED } else { 1 };
        ((self.repeat_count - 1) * period).max(self.repeat_count * u64::from(self.chunk)) * factor
    }

    /// The smallest period of the text `[from, end)` that divides `period` (a block's smallest
    /// chunk proposes a multiple of a short period), and where the text began to follow it.
    fn smallest_period(&self, period: u64, run_start: u64, end: u64) -> (u64, u64) {
        let from = run_start.max(self.base);
        // The divisors below `period`, smallest first: up to its square root, then their
        // co-divisors.
        let root = period.isqrt();
        let small = (1..=root).filter(|d| period.is_multiple_of(*d));
        let large = (1..=root).rev().filter(|d| period.is_multiple_of(*d)).map(|d| period / d);
        for d in small.chain(large).filter(|d| *d < period) {
            if from < self.base + d || (from..end).any(|i| self.byte(i) != self.byte(i - d)) {
                continue;
            }
            return (d, from - self.matching_back(from, d, u64::MAX));
        }
        (period, run_start)
    }

    /// Checks each candidate period over the bytes from `from` on.
    fn verify(&mut self, from: u64) -> Option<Repetition> {
        let end = self.seen();
        for i in 0..CANDIDATES {
            let Candidate { mut period, mut run_start, relaxed, mut extended } = self.candidates[i];
            if period == 0 {
                continue;
            }
            let mut needed = self.needed_as(period, relaxed);
            // Compare each new byte with the byte one period back.
            let mut at = from.max(run_start).max(self.base + period);
            while at < end {
                // Eight bytes at a time while they match.
                let (a, b) = ((at - self.base) as usize, (at - period - self.base) as usize);
                if at + 8 <= end && self.buffer[a..a + 8] == self.buffer[b..b + 8] {
                    at += 8;
                } else if self.buffer[a] == self.buffer[b] {
                    at += 1;
                } else {
                    // The text stopped repeating: the period is dropped (an anchor proposes it
                    // again if the text goes back to it).
                    run_start = u64::MAX;
                    break;
                }
                if !extended && at - run_start >= period {
                    // Held for a whole period: its smallest period (a block's last chunk comes
                    // back a multiple of a short period later), and where it began.
                    extended = true;
                    (period, run_start) = self.smallest_period(period, run_start, at);
                    needed = self.needed_as(period, relaxed);
                    let back = needed.min(run_start.saturating_sub(self.base));
                    run_start -= self.matching_back(run_start, period, back);
                }
                if at - run_start >= needed {
                    let (period, run_start) = self.smallest_period(period, run_start, at);
                    // Where the repetition began, however far back (within the buffer).
                    let run_start = run_start - self.matching_back(run_start, period, u64::MAX);
                    let repeats = ((at - run_start) / period + 1) as u32;
                    return Some(Repetition { keep: run_start, period: period as u32, repeats, seen: end });
                }
            }
            self.candidates[i] = if run_start == u64::MAX {
                Candidate::default()
            } else {
                Candidate { period, run_start, relaxed, extended }
            };
        }
        None
    }

    /// Keeps at most `2 × max_period` bytes (amortised: half is dropped at a time).
    fn trim(&mut self) {
        let keep = 2 * self.max_period as usize;
        if self.buffer.len() > 2 * keep {
            let drop = self.buffer.len() - keep;
            self.buffer.drain(..drop);
            self.base += drop as u64;
        }
    }
}

#[cfg(test)]
mod tests;
