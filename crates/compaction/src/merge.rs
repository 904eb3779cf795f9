//! Byte-pair merging as tiktoken does it: start from single bytes and merge, again and again,
//! the adjacent pair whose joined bytes have the lowest rank (the leftmost on a tie) until no
//! joined pair is a token. A piece of a few dozen bytes is merged on the stack with a scan for
//! the lowest pair (a few dozen rank lookups, no allocation); a longer one keeps its pairs in a
//! heap, so that a megabyte without a space costs O(n log n), not O(n²).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// The most bytes a piece may have to be merged here (the boundaries live on the stack).
pub(crate) const MERGED_UP_TO: usize = 128;

/// The number of tokens tiktoken encodes `piece` into, given each token's rank (`None` for
/// bytes that are not a token). `piece` must be at most [`MERGED_UP_TO`] bytes and every
/// single byte must be a token (true of tiktoken's vocabularies).
pub(crate) fn merged_count(piece: &[u8], mut rank: impl FnMut(&[u8]) -> Option<u32>) -> usize {
    debug_assert!(piece.len() <= MERGED_UP_TO);
    let n = piece.len();
    if n <= 1 {
        return n;
    }
    // Boundaries: parts[i] is where a token starts, with the rank of joining it with the next
    // token; the last two entries close the piece.
    let mut starts = [0u8; MERGED_UP_TO + 1];
    let mut ranks = [u32::MAX; MERGED_UP_TO + 1];
    for (i, start) in starts.iter_mut().enumerate().take(n + 1) {
        *start = i as u8;
    }
    for (pair, r) in piece.windows(2).zip(ranks.iter_mut()) {
        *r = rank(pair).unwrap_or(u32::MAX);
    }
    let mut len = n + 1;
    // The rank of joining the token at boundary `i` with the one after it.
    let mut joined = |starts: &[u8], len: usize, i: usize| {
        if i + 2 < len {
            rank(&piece[starts[i] as usize..starts[i + 2] as usize]).unwrap_or(u32::MAX)
        } else {
            u32::MAX
        }
    };
    loop {
        let mut best = (u32::MAX, 0);
        for (i, r) in ranks[..len - 1].iter().enumerate() {
            if *r < best.0 {
                best = (*r, i);
            }
        }
        let (lowest, i) = best;
        if lowest == u32::MAX {
            break;
        }
        // Join the tokens at i and i + 1: boundary i + 1 goes.
        starts.copy_within(i + 2..len, i + 1);
        ranks.copy_within(i + 2..len, i + 1);
        len -= 1;
        ranks[i] = joined(&starts, len, i);
        if i > 0 {
            ranks[i - 1] = joined(&starts, len, i - 1);
        }
    }
    len - 1
}

/// The number of tokens tiktoken encodes `piece` into, for a piece of any length (see
/// [`merged_count`] for `rank`).
pub(crate) fn count(piece: &[u8], rank: impl FnMut(&[u8]) -> Option<u32>) -> usize {
    if piece.len() <= MERGED_UP_TO { merged_count(piece, rank) } else { heap_merged_count(piece, rank) }
}

/// No token: a pair that cannot be joined, or a boundary that is gone.
const NONE: u32 = u32::MAX;

/// [`merged_count`] for long pieces: the candidate pairs sit in a min-heap ordered by (rank,
/// position), which is tiktoken's choice (lowest rank, leftmost); a popped pair whose tokens
/// changed since it was pushed is skipped (a pair's bytes only grow, so its rank changes too).
fn heap_merged_count(piece: &[u8], mut rank: impl FnMut(&[u8]) -> Option<u32>) -> usize {
    let n = piece.len();
    // For the token starting at byte i: where the next one starts (n past the last), where the
    // previous one starts (NO_TOKEN before the first), and the rank of joining it with the
    // next one (NONE when that is no token, or when the token is gone).
    let mut next: Vec<u32> = (1..=n as u32).collect();
    let mut previous: Vec<u32> = (0..n as u32).map(|i| i.wrapping_sub(1)).collect();
    let mut joined = vec![NONE; n];
    // (rank, position) in one word, so the heap compares one integer.
    let entry = |rank: u32, at: usize| Reverse(u64::from(rank) << 32 | at as u64);
    let mut heap = BinaryHeap::with_capacity(n);
    for i in 0..n.saturating_sub(1) {
        joined[i] = rank(&piece[i..i + 2]).unwrap_or(NONE);
        if joined[i] != NONE {
            heap.push(entry(joined[i], i));
        }
    }
    let mut rank_of = |from: usize, to: usize| rank(&piece[from..to]).unwrap_or(NONE);
    let mut tokens = n;
    while let Some(Reverse(top)) = heap.pop() {
        let (lowest, i) = ((top >> 32) as u32, (top & u64::from(u32::MAX)) as usize);
        if joined[i] != lowest {
            continue; // stale: the pair changed (or its left token is gone) since it was pushed
        }
        // The token at i absorbs the next one.
        let gone = next[i] as usize;
        joined[gone] = NONE;
        let after = next[gone] as usize;
        next[i] = after as u32;
        if after < n {
            previous[after] = i as u32;
        }
        tokens -= 1;
        joined[i] = if after < n { rank_of(i, next[after] as usize) } else { NONE };
        if joined[i] != NONE {
            heap.push(entry(joined[i], i));
        }
        let before = previous[i];
        if before != NO_TOKEN {
            let before = before as usize;
            joined[before] = rank_of(before, after);
            if joined[before] != NONE {
                heap.push(entry(joined[before], before));
            }
        }
    }
    tokens
}

/// No previous token.
const NO_TOKEN: u32 = u32::MAX;

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;
    use std::sync::OnceLock;

    use proptest::prelude::*;

    /// cl100k's ranks, as the encoder numbers its tokens.
    fn cl100k_rank(bytes: &[u8]) -> Option<u32> {
        static RANKS: OnceLock<HashMap<Vec<u8>, u32>> = OnceLock::new();
        let ranks = RANKS.get_or_init(|| {
            let bpe = &bpe_openai::cl100k_base().bpe;
            (0..bpe.num_tokens() as u32).map(|id| (bpe.token_bytes(id).to_vec(), id)).collect()
        });
        ranks.get(bytes).copied()
    }

    proptest! {
        /// Merging counts what the encoder counts, on pieces made of common fragments (so that
        /// merges happen) and on arbitrary bytes.
        #[test]
        fn merging_counts_as_the_encoder_does(
            parts in proptest::collection::vec(
                prop::sample::select(vec!["th", "e", " ", "ing", "er", "_", "x", "1", "00", "\u{e9}", "ab", "::"]),
                0..16,
            ),
            bytes in proptest::collection::vec(any::<u8>(), 0..=MERGED_UP_TO),
        ) {
            let bpe = &bpe_openai::cl100k_base().bpe;
            let text = parts.concat();
            let text = &text.as_bytes()[..text.len().min(MERGED_UP_TO)];
            prop_assert_eq!(merged_count(text, cl100k_rank), bpe.count(text));
            prop_assert_eq!(merged_count(&bytes, cl100k_rank), bpe.count(&bytes));
            // The heap's way agrees with the scan on the short pieces too.
            prop_assert_eq!(heap_merged_count(text, cl100k_rank), merged_count(text, cl100k_rank));
            prop_assert_eq!(heap_merged_count(&bytes, cl100k_rank), merged_count(&bytes, cl100k_rank));
        }

        /// Long pieces (past the stack's limit) count as the encoder counts them.
        #[test]
        fn long_pieces_count_as_the_encoder_does(
            parts in proptest::collection::vec(
                prop::sample::select(vec!["th", "e", "ing", "er", "_", "x", "a", "aa", "00", "\u{e9}", "ab", "=="]),
                20..200,
            ),
        ) {
            let bpe = &bpe_openai::cl100k_base().bpe;
            let text = parts.concat();
            prop_assert_eq!(count(text.as_bytes(), cl100k_rank), bpe.count(text.as_bytes()));
        }
    }

    #[test]
    fn a_megabyte_without_a_break_is_merged_in_good_time() {
        // Quadratic merging would take minutes here.
        let text = "ab".repeat(500_000);
        let bpe = &bpe_openai::cl100k_base().bpe;
        assert_eq!(count(text.as_bytes(), cl100k_rank), bpe.count(text.as_bytes()));
    }

    /// A toy vocabulary: every byte, and "ab", "bc", "abc", "cd".
    fn toy(bytes: &[u8]) -> Option<u32> {
        match bytes {
            [b] => Some(1000 + u32::from(*b)),
            b"ab" => Some(1),
            b"bc" => Some(0),
            b"abc" => Some(2),
            b"cd" => Some(3),
            _ => None,
        }
    }

    #[test]
    fn the_lowest_ranked_pair_is_merged_first() {
        assert_eq!(merged_count(b"", toy), 0);
        assert_eq!(merged_count(b"x", toy), 1);
        // "bc" (rank 0) before "ab": a + bc, then "abc".
        assert_eq!(merged_count(b"abc", toy), 1);
        // "bc" first leaves a, bc, d: "abc" merges (rank 2), "cd" never forms.
        assert_eq!(merged_count(b"abcd", toy), 2);
        assert_eq!(merged_count(b"cdcd", toy), 2);
        assert_eq!(merged_count(b"zzz", toy), 3);
    }
}
