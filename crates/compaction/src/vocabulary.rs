//! A vocabulary's tokens and their ranks, looked up by a piece's bytes.
//!
//! Most pieces are short, so a piece of up to [`PACKED_MAX`] bytes is looked up as one
//! 128-bit [`Packed`] word (hashing and comparing it costs a few instructions, and nothing is
//! compared byte by byte); longer tokens sit in an ordinary map.

use std::collections::HashMap;

use foldhash::fast::FixedState;

/// The longest piece that is [`packed`] into a word.
pub(crate) const PACKED_MAX: usize = 15;

/// A piece of at most [`PACKED_MAX`] bytes as one word: its bytes little-endian in the low 15
/// bytes and its length in the low half of the top byte (so pieces of different lengths never
/// share a word). The top byte's high half is always zero: caches keep a count there.
pub(crate) type Packed = u128;

/// Where a packed word keeps its length.
const LENGTH_SHIFT: u32 = 120;

/// `bytes` as a [`Packed`] word, if it is short enough. Built from overlapping loads, without a
/// byte loop.
#[inline]
pub(crate) fn packed(bytes: &[u8]) -> Option<Packed> {
    let len = bytes.len();
    let (low, high) = match len {
        0 => (0, 0),
        1 => (u64::from(bytes[0]), 0),
        2 | 3 => {
            let first = u64::from(u16::from_le_bytes([bytes[0], bytes[1]]));
            let last = u64::from(u16::from_le_bytes([bytes[len - 2], bytes[len - 1]]));
            (first | last << ((len - 2) * 8), 0)
        }
        4..=7 => {
            let first = u64::from(load4(bytes, 0));
            let last = u64::from(load4(bytes, len - 4));
            (first | last << ((len - 4) * 8), 0)
        }
        8 => (load8(bytes, 0), 0),
        9..=PACKED_MAX => (load8(bytes, 0), load8(bytes, len - 8) >> ((16 - len) * 8)),
        _ => return None,
    };
    Some(word(low, high, len))
}

/// The piece `text[start..end]` as a [`Packed`] word, if it is short enough: the same word as
/// [`packed`], faster when the text goes on for 16 bytes after `start` (two loads and two
/// masks, no branch on the length).
#[inline(always)]
pub(crate) fn packed_in(text: &[u8], start: usize, end: usize) -> Option<Packed> {
    let len = end - start;
    if len > PACKED_MAX {
        return None;
    }
    if start + 16 > text.len() {
        return packed(&text[start..end]);
    }
    let low = load8(text, start) & LOW_MASKS[len];
    let high = load8(text, start + 8) & HIGH_MASKS[len];
    Some(word(low, high, len))
}

/// The bytes of the first word a piece of `len` bytes keeps.
const LOW_MASKS: [u64; 16] = {
    let mut masks = [u64::MAX; 16];
    let mut len = 0;
    while len < 8 {
        masks[len] = (1u64 << (len * 8)) - 1;
        len += 1;
    }
    masks
};

/// The bytes of the second word a piece of `len` bytes keeps.
const HIGH_MASKS: [u64; 16] = {
    let mut masks = [0u64; 16];
    let mut len = 9;
    while len < 16 {
        masks[len] = (1u64 << ((len - 8) * 8)) - 1;
        len += 1;
    }
    masks
};

#[inline]
fn word(low: u64, high: u64, len: usize) -> Packed {
    u128::from(low) | u128::from(high) << 64 | (len as u128) << LENGTH_SHIFT
}

#[inline]
fn load4(bytes: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]])
}

#[inline]
pub(crate) fn load8(bytes: &[u8], at: usize) -> u64 {
    let mut word = [0u8; 8];
    word.copy_from_slice(&bytes[at..at + 8]);
    u64::from_le_bytes(word)
}

/// A well-mixed 64-bit hash of a packed word (two multiplies): the top bits pick a slot.
#[inline(always)]
pub(crate) fn mix(key: Packed) -> u64 {
    let low = key as u64;
    let high = (key >> 64) as u64;
    (low ^ high.wrapping_mul(0x9e37_79b9_7f4a_7c15).rotate_left(31)).wrapping_mul(0xff51_afd7_ed55_8ccd)
}

/// Every token's rank, by its bytes.
pub(crate) struct RankTable {
    /// Open addressing (linear probing) over the tokens of up to [`EMBEDDED_MAX`] bytes,
    /// packed, each with its rank in the word's spare bits ([`RANK_BITS`]): a probe is one
    /// load, and merging a piece probes dozens of times, mostly missing the core's caches.
    /// 0 marks an empty slot (a packed token's length is never 0).
    entries: Box<[Packed]>,
    shift: u32,
    /// A filter over `entries` (one bit per token at [`mix`]'s low bits): merging asks about
    /// many spans that are no token, and 256 KB stay in a core's cache where the entries'
    /// 4 MB do not.
    filter: Box<[u64]>,
    /// Tokens of more than [`EMBEDDED_MAX`] bytes that still pack, by packed word.
    packed_longer: HashMap<Packed, u32, FixedState>,
    /// Tokens longer than [`PACKED_MAX`] bytes.
    longer: HashMap<&'static [u8], u32, FixedState>,
    /// A filter over `longer` (bit [`long_sign`] of each): most long spans met while merging
    /// are no token, and 8 KB answer that without hashing the span.
    longer_filter: Box<[u64]>,
    /// The longest token's length: longer bytes are no token, and are not hashed to find out.
    longest: usize,
    /// The rank of every two-byte token, indexed by its bytes (`NO_PAIR` for the pairs that are
    /// none): merging looks up every adjacent pair of a piece first, and 256 KB stay in a
    /// core's cache where the whole table does not.
    pairs: Box<[u32]>,
    len: usize,
}

/// The longest token kept with its rank in one word: its bytes 13 and 14 are free.
const EMBEDDED_MAX: usize = 13;
/// Where an entry keeps its rank: bytes 13 and 14 (the low 16 bits) and the top four bits
/// (the high four), 20 bits in all.
const RANK_BITS: Packed = 0xffff << 104 | 0xf << 124;

/// `rank` in an entry's spare bits.
#[inline]
fn embedded(rank: u32) -> Packed {
    debug_assert!(rank < 1 << 20, "ranks fit 20 bits");
    Packed::from(rank & 0xffff) << 104 | Packed::from(rank >> 16) << 124
}

/// The rank an entry keeps.
#[inline]
fn embedded_rank(entry: Packed) -> u32 {
    ((entry >> 104) & 0xffff) as u32 | ((entry >> 124) as u32) << 16
}

/// Words in [`RankTable::filter`]: 2,097,152 bits, about 5% of them set by cl100k.
const FILTER_WORDS: usize = 1 << 15;

/// A packed word's bit in [`RankTable::filter`]: low bits of its mix, where the slot takes the
/// high ones.
#[inline]
fn filter_sign(key: Packed) -> usize {
    (mix(key) as usize) & (FILTER_WORDS * 64 - 1)
}

/// Words in [`RankTable::longer_filter`]: 65,536 bits for about a thousand long tokens.
const LONG_FILTER_WORDS: usize = 1 << 10;

/// Where a span of more than [`PACKED_MAX`] bytes sits in the long tokens' filter: from its
/// length and its first and last eight bytes, without reading the middle.
#[inline]
fn long_sign(bytes: &[u8]) -> usize {
    let ends = load8(bytes, 0) ^ load8(bytes, bytes.len() - 8).rotate_left(23) ^ bytes.len() as u64;
    (ends.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - 16)) as usize
}

/// The length a packed word holds.
#[inline]
fn packed_len(key: Packed) -> usize {
    ((key >> 120) & 0xf) as usize
}

impl RankTable {
    /// A table of `tokens`, each ranked by its position.
    pub(crate) fn new<'a>(tokens: impl ExactSizeIterator<Item = &'static [u8]> + 'a) -> Self {
        // At most half full: a miss ends after a probe or two.
        let capacity = (tokens.len() * 2).next_power_of_two().max(16);
        let mut table = Self {
            entries: vec![0; capacity].into_boxed_slice(),
            shift: 64 - capacity.trailing_zeros(),
            filter: vec![0; FILTER_WORDS].into_boxed_slice(),
            packed_longer: HashMap::default(),
            longer: HashMap::default(),
            longer_filter: vec![0; LONG_FILTER_WORDS].into_boxed_slice(),
            longest: 0,
            pairs: vec![NO_PAIR; 1 << 16].into_boxed_slice(),
            len: 0,
        };
        for (rank, token) in tokens.enumerate() {
            let rank = u32::try_from(rank).unwrap_or(u32::MAX);
            match packed(token) {
                Some(key) if token.len() <= EMBEDDED_MAX => {
                    let mut slot = table.slot(key);
                    while table.entries[slot] != 0 && table.entries[slot] & !RANK_BITS != key {
                        slot = (slot + 1) & (capacity - 1);
                    }
                    table.entries[slot] = key | embedded(rank);
                    let sign = filter_sign(key);
                    table.filter[sign / 64] |= 1 << (sign % 64);
                }
                Some(key) => {
                    table.packed_longer.insert(key, rank);
                }
                None => {
                    table.longer.insert(token, rank);
                    let sign = long_sign(token);
                    table.longer_filter[sign / 64] |= 1 << (sign % 64);
                }
            }
            if let &[first, second] = token {
                let pair = usize::from(u16::from_le_bytes([first, second]));
                table.pairs[pair] = rank;
            }
            table.longest = table.longest.max(token.len());
            table.len += 1;
        }
        table
    }

    #[inline]
    fn slot(&self, key: Packed) -> usize {
        (mix(key) >> self.shift) as usize
    }

    /// The rank of the token `key` packs, if it is one (`key` is not the empty piece's: 0
    /// marks an empty slot).
    #[inline]
    pub(crate) fn packed_rank(&self, key: Packed) -> Option<u32> {
        debug_assert_ne!(key, 0, "the empty piece is no token");
        if packed_len(key) > EMBEDDED_MAX {
            return self.packed_longer.get(&key).copied();
        }
        let sign = filter_sign(key);
        if self.filter[sign / 64] >> (sign % 64) & 1 == 0 {
            return None;
        }
        let mask = self.entries.len() - 1;
        let mut slot = self.slot(key);
        loop {
            let found = self.entries[slot];
            if found & !RANK_BITS == key {
                return Some(embedded_rank(found));
            }
            if found == 0 {
                return None;
            }
            slot = (slot + 1) & mask;
        }
    }

    /// The rank of the token whose bytes these are, if they are one.
    #[inline]
    pub(crate) fn rank(&self, bytes: &[u8]) -> Option<u32> {
        if let &[first, second] = bytes {
            let rank = self.pairs[usize::from(u16::from_le_bytes([first, second]))];
            return (rank != NO_PAIR).then_some(rank);
        }
        match packed(bytes) {
            Some(0) => None,
            Some(key) => self.packed_rank(key),
            None if bytes.len() > self.longest => None,
            None => {
                let sign = long_sign(bytes);
                if self.longer_filter[sign / 64] >> (sign % 64) & 1 == 0 {
                    return None;
                }
                self.longer.get(bytes).copied()
            }
        }
    }

    /// How many tokens the table holds.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.len
    }
}

/// No two-byte token: an entry of [`RankTable::pairs`].
const NO_PAIR: u32 = u32::MAX;

/// cl100k_base's tokens in rank order, unpacked from the vendored vocabulary by the build
/// script: one length byte, then the token's bytes.
static CL100K_TOKENS: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/cl100k_base.tokens"));

/// cl100k_base's tokens, in rank order.
pub(crate) fn cl100k_tokens() -> impl ExactSizeIterator<Item = &'static [u8]> {
    let mut tokens = Vec::with_capacity(100_256);
    let mut rest = CL100K_TOKENS;
    while let Some((&len, tail)) = rest.split_first() {
        let (token, tail) = tail.split_at(usize::from(len).min(tail.len()));
        tokens.push(token);
        rest = tail;
    }
    tokens.into_iter()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The plain way: the bytes copied into a word, the length in the top byte.
    fn copied(bytes: &[u8]) -> Option<Packed> {
        (bytes.len() <= PACKED_MAX).then(|| {
            let mut word = [0u8; 16];
            word[..bytes.len()].copy_from_slice(bytes);
            word[15] = bytes.len() as u8;
            u128::from_le_bytes(word)
        })
    }

    proptest! {
        #[test]
        fn packing_with_loads_equals_copying(
            text in proptest::collection::vec(any::<u8>(), 0..40),
            start in 0usize..40,
            len in 0usize..20,
        ) {
            let start = start.min(text.len());
            let end = (start + len).min(text.len());
            let piece = &text[start..end];
            prop_assert_eq!(packed(piece), copied(piece));
            prop_assert_eq!(packed_in(&text, start, end), copied(piece));
        }
    }

    proptest! {
        /// A rank kept in an entry's spare bits comes back whole and leaves the bytes alone.
        #[test]
        fn ranks_fit_the_spare_bits(bytes in proptest::collection::vec(any::<u8>(), 1..=EMBEDDED_MAX), rank in 0u32..1 << 20) {
            let key = packed(&bytes).unwrap_or_default();
            let entry = key | embedded(rank);
            prop_assert_eq!(embedded_rank(entry), rank);
            prop_assert_eq!(entry & !RANK_BITS, key);
        }
    }

    #[test]
    fn pieces_of_different_lengths_never_share_a_word() {
        // "a" and "a\0" hold the same bytes in the low part; the length tells them apart.
        assert_ne!(packed(b"a"), packed(b"a\0"));
        assert_eq!(packed(&[7; 16]), None);
    }

    #[test]
    fn the_embedded_vocabulary_is_tiktokens_cl100k() {
        let reference = tiktoken_rs::cl100k_base_singleton();
        let tokens: Vec<&[u8]> = cl100k_tokens().collect();
        assert_eq!(tokens.len(), 100_256);
        let table = RankTable::new(tokens.iter().copied());
        assert_eq!(table.len(), 100_256);
        for (rank, token) in tokens.iter().enumerate() {
            // tiktoken's bytes for the rank, and the table's rank for the bytes.
            assert_eq!(reference.decode_bytes(&[rank as u32]).ok().as_deref(), Some(*token), "rank {rank}");
            assert_eq!(table.rank(token), Some(rank as u32), "{token:?}");
        }
        assert!(reference.decode_bytes(&[100_256]).is_err(), "tiktoken has more ordinary tokens");
        assert_eq!(table.rank(b"not a single token at all"), None);
    }
}
