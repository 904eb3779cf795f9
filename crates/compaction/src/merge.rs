//! Byte-pair merging as tiktoken does it, for counting short pieces: start from single bytes
//! and merge, again and again, the adjacent pair whose joined bytes have the lowest rank (the
//! leftmost on a tie) until no joined pair is a token. On a piece of a few dozen bytes this
//! costs a few dozen rank lookups and no allocation; a general encoder's set-up costs more.

/// The most bytes a piece may have to be merged here (the boundaries live on the stack).
pub(crate) const MERGED_UP_TO: usize = 48;

/// The number of tokens tiktoken encodes `piece` into, given each token's rank (`None` for
/// bytes that are not a token). `piece` must be at most [`MERGED_UP_TO`] bytes and every
/// single byte must be a token (true of tiktoken's vocabularies).
pub(crate) fn merged_count(piece: &[u8], rank: impl Fn(&[u8]) -> Option<u32>) -> usize {
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
    let joined = |starts: &[u8], len: usize, i: usize| {
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
        }
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
