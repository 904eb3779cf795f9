//! Counting a text piece by piece: the hot loop of every count.
//!
//! A piece goes through cheap steps before expensive ones: a per-thread table of the pieces
//! met last (direct-mapped, answers most pieces from the core's own cache: words follow Zipf's
//! law), the vocabulary (a piece that is a token counts 1), then tiktoken's merging. Pieces
//! longer than a packed word are remembered in a per-thread map.

use std::cell::RefCell;
use std::collections::HashMap;

use foldhash::fast::FixedState;

use crate::merge;
use crate::pretokenize::{Cut, for_each_piece};
use crate::shared_counts::{SharedCounts, remember};
use crate::vocabulary::{PACKED_MAX, Packed, RankTable, cl100k_tokens, mix, packed, packed_in};

/// A vocabulary with its pre-tokenizer.
pub(crate) struct Vocabulary {
    ranks: RankTable,
    split: Split,
    /// Merged pieces' counts, for every thread.
    shared: SharedCounts,
    /// Which of a thread's caches is this vocabulary's.
    slot: usize,
}

/// How a vocabulary cuts text into pieces.
enum Split {
    /// cl100k's pattern, written out ([`crate::pretokenize`]).
    Cl100k,
    /// The tokenizer's own regex (o200k_base's pattern).
    Regex(&'static bpe_openai::Tokenizer),
}

impl Vocabulary {
    /// cl100k_base, from the vocabulary embedded at build time (no encoder is deserialised).
    pub(crate) fn cl100k() -> Self {
        Self {
            ranks: RankTable::new(cl100k_tokens()),
            split: Split::Cl100k,
            shared: SharedCounts::default(),
            slot: 0,
        }
    }

    /// o200k_base, from bpe-openai's prebuilt tokenizer and its regex.
    pub(crate) fn o200k() -> Self {
        let tokenizer = bpe_openai::o200k_base();
        let bpe = &tokenizer.bpe;
        let tokens = (0..bpe.num_tokens() as u32).map(|id| bpe.token_bytes(id));
        Self {
            ranks: RankTable::new(tokens),
            split: Split::Regex(tokenizer),
            shared: SharedCounts::default(),
            slot: 1,
        }
    }

    /// The number of tokens in `text`.
    pub(crate) fn count(&self, text: &str) -> usize {
        CACHES.with(|caches| {
            let mut caches = caches.borrow_mut();
            let cache = &mut caches[self.slot];
            let bytes = text.as_bytes();
            let mut total = 0;
            match self.split {
                Split::Cl100k => {
                    let mut counting = Counting { vocabulary: self, cache, text: bytes, total: 0 };
                    for_each_piece(text, &mut counting);
                    total = counting.total;
                }
                Split::Regex(tokenizer) => {
                    for piece in tokenizer.split(text) {
                        let start = piece.as_ptr() as usize - text.as_ptr() as usize;
                        total += self.count_piece(cache, bytes, start, start + piece.len());
                    }
                }
            }
            total
        })
    }

    /// The count of the piece `text[start..end]`: the few instructions of a recent piece,
    /// everything else out of line (the loop this is inlined into stays small).
    #[inline(always)]
    fn count_piece(&self, cache: &mut PieceCache, text: &[u8], start: usize, end: usize) -> usize {
        debug_assert!(start < end, "pieces are never empty");
        if let Some(key) = packed_in(text, start, end) {
            let slot = cache.recent[(mix(key) >> (64 - RECENT_BITS)) as usize];
            if slot & !COUNT_BITS == key {
                return (slot >> COUNT_SHIFT) as usize;
            }
            return self.count_new(cache, key, &text[start..end]);
        }
        self.count_long(cache, &text[start..end])
    }

    /// A packed piece not met lately: 1 if it is a token, else its remembered count, else
    /// merged; kept in the recent table.
    #[inline(never)]
    fn count_new(&self, cache: &mut PieceCache, key: Packed, piece: &[u8]) -> usize {
        let count = match self.ranks.packed_rank(key) {
            Some(_) => 1,
            None => match cache.merged.get(&key) {
                Some(count) => usize::from(*count),
                None => {
                    let count = match self.shared.packed(key) {
                        Some(count) => count,
                        None => {
                            let spans = &mut cache.spans;
                            let count =
                                merge::count(piece, |bytes| span_rank(&self.ranks, spans, bytes)) as u8;
                            self.shared.remember_packed(key, count);
                            count
                        }
                    };
                    remember(&mut cache.merged, key, count, MERGED_KEPT);
                    usize::from(count)
                }
            },
        };
        // A piece of at most 15 bytes has at most 15 tokens: the count fits the spare bits.
        cache.recent[(mix(key) >> (64 - RECENT_BITS)) as usize] = key | (count as u128) << COUNT_SHIFT;
        count
    }

    /// A piece longer than a packed word: 1 if it is a token, else its remembered count, else
    /// merged.
    #[inline(never)]
    fn count_long(&self, cache: &mut PieceCache, piece: &[u8]) -> usize {
        if self.ranks.rank(piece).is_some() {
            return 1;
        }
        if let Some(count) = cache.longer.get(piece) {
            return *count as usize;
        }
        let count = match self.shared.longer(piece) {
            Some(count) => count,
            None => {
                let spans = &mut cache.spans;
                let count = merge::count(piece, |bytes| span_rank(&self.ranks, spans, bytes));
                let count = u32::try_from(count).unwrap_or(u32::MAX);
                self.shared.remember_longer(piece, count);
                count
            }
        };
        remember(&mut cache.longer, piece.into(), count, LONGER_KEPT);
        count as usize
    }
}

/// Counts the pieces a walk cuts.
struct Counting<'a> {
    vocabulary: &'a Vocabulary,
    cache: &'a mut PieceCache,
    text: &'a [u8],
    total: usize,
}

impl Cut for Counting<'_> {
    #[inline(always)]
    fn cut(&mut self, start: usize, end: usize) {
        self.total += self.vocabulary.count_piece(self.cache, self.text, start, end);
    }
}

/// The rank of `bytes`, from the thread's table of short spans met while merging when it is
/// there: merges of different pieces meet the same subwords, and a rank table probe mostly
/// misses the core's caches.
#[inline]
fn span_rank(ranks: &RankTable, spans: &mut [(u64, u32)], bytes: &[u8]) -> Option<u32> {
    if !(3..=7).contains(&bytes.len()) {
        return ranks.rank(bytes);
    }
    let key = packed(bytes).map_or(0, |key| key as u64 | (bytes.len() as u64) << 56);
    let slot = &mut spans[(key.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - SPAN_BITS)) as usize];
    if slot.0 != key {
        *slot = (key, ranks.rank(bytes).unwrap_or(u32::MAX));
    }
    (slot.1 != u32::MAX).then_some(slot.1)
}

/// How many spans a thread's span table holds, as a power of two (128 KB).
const SPAN_BITS: u32 = 13;

/// How many pieces a thread's recent table holds, as a power of two: 32,768 entries of 16
/// bytes stay in a core's level-2 cache.
const RECENT_BITS: u32 = 15;

/// Where a recent table's entry keeps its count: the packed word's spare top bits.
const COUNT_SHIFT: u32 = 124;
const COUNT_BITS: Packed = 0xf << COUNT_SHIFT;
const _: () = assert!(PACKED_MAX < 16, "a packed piece's count must fit four bits");

/// How many long pieces a thread remembers before it starts over.
const LONGER_KEPT: usize = 1 << 16;
/// How many merged packed pieces a thread remembers before it starts over.
const MERGED_KEPT: usize = 1 << 18;

/// A thread's memory of the pieces it counted, for one vocabulary.
struct PieceCache {
    /// Pieces met last, direct-mapped: a packed piece with its count in the top bits (an empty
    /// slot holds the empty piece, whose count is 0).
    recent: Box<[Packed]>,
    /// Packed pieces that are not single tokens, with their counts: the recent table forgets
    /// them when another piece takes their slot, and merging one again costs dozens of lookups.
    merged: HashMap<Packed, u8, FixedState>,
    /// Pieces longer than a packed word that are not single tokens.
    longer: HashMap<Box<[u8]>, u32, FixedState>,
    /// Spans of 3 to 7 bytes met while merging, with their ranks (`u32::MAX`: no token); an
    /// empty slot's key is 0, which no such span packs to.
    spans: Box<[(u64, u32)]>,
}

impl Default for PieceCache {
    fn default() -> Self {
        Self {
            recent: vec![0; 1 << RECENT_BITS].into_boxed_slice(),
            merged: HashMap::default(),
            longer: HashMap::default(),
            spans: vec![(0, 0); 1 << SPAN_BITS].into_boxed_slice(),
        }
    }
}

thread_local! {
    /// Per thread, so no lock is taken; one cache per vocabulary.
    static CACHES: RefCell<[PieceCache; 2]> = RefCell::new(Default::default());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_piece_of_one_or_two_bytes_counts_as_tiktoken_counts_it() {
        // Short pieces go through the recent table like the others (a shortcut for them cost
        // more in mispredicted branches than the lookup it saved): every one is counted right,
        // with room to read 16 bytes after it and without.
        let bpe = &bpe_openai::cl100k_base().bpe;
        let vocabulary = Vocabulary::cl100k();
        let mut cache = PieceCache::default();
        for first in 0..=255u8 {
            for second in 0..=255u8 {
                let padded = [first, second, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
                let pair = &padded[..2];
                for text in [pair, &padded[..]] {
                    assert_eq!(vocabulary.count_piece(&mut cache, text, 0, 1), 1);
                    assert_eq!(vocabulary.count_piece(&mut cache, text, 0, 2), bpe.count(pair), "{pair:?}");
                }
            }
        }
    }
}
