//! Observation fingerprints (B4): a tool result with its volatile numbers masked.

use super::Fnv64;

/// Byte classes for the fingerprint scanner.
const OTHER: u8 = 0;
const DECIMAL: u8 = 1;
const HEX_LETTER: u8 = 2;
const WORD: u8 = 3;

const CLASSES: [u8; 256] = {
    let mut table = [OTHER; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        table[b] = if c.is_ascii_digit() {
            DECIMAL
        } else if matches!(c, b'a'..=b'f' | b'A'..=b'F') {
            HEX_LETTER
        } else if c.is_ascii_alphabetic() || c == b'_' {
            WORD
        } else {
            OTHER
        };
        b += 1;
    }
    table
};

/// A fingerprint of a tool result with volatile numbers masked (B4): every run of decimal
/// digits (line numbers, PIDs, ports, timestamps, durations) and every word made only of hex
/// digits with a digit in it (`0x7f3a`, a commit hash) counts as the same token, so two results
/// that differ only there are the same observation. Other words stay as they are.
pub fn observation_fingerprint(text: &str) -> u64 {
    let all = text.as_bytes();
    if all.len() <= FINGERPRINT_HEAD + FINGERPRINT_TAIL {
        return fingerprint_bytes(all);
    }
    let (head_end, tail_start) = cut_points(all);
    observation_fingerprint_of(all, head_end, tail_start)
}

fn observation_fingerprint_of(all: &[u8], head_end: usize, tail_start: usize) -> u64 {
    long_fingerprint(fingerprint_bytes(&all[..head_end]), fingerprint_bytes(&all[tail_start..]), all.len())
}

/// Masks the whole of `all` into `normal` (cleared first) and returns its fingerprint, the same
/// as [`observation_fingerprint`]'s: one pass for the fingerprint and the lines.
pub(super) fn mask_with_fingerprint(all: &[u8], normal: &mut Vec<u8>) -> u64 {
    normal.clear();
    if all.len() <= FINGERPRINT_HEAD + FINGERPRINT_TAIL {
        mask_into(all, normal);
        return hash_bytes(normal);
    }
    // The cut points are word boundaries, so the three pieces mask as the whole would.
    let (head_end, tail_start) = cut_points(all);
    if tail_start < head_end {
        // A word across both cuts: the head and the tail overlap.
        mask_into(all, normal);
        return observation_fingerprint_of(all, head_end, tail_start);
    }
    mask_into(&all[..head_end], normal);
    let head = normal.len();
    mask_into(&all[head_end..tail_start], normal);
    let tail = normal.len();
    mask_into(&all[tail_start..], normal);
    long_fingerprint(hash_bytes(&normal[..head]), hash_bytes(&normal[tail..]), all.len())
}

/// Where a long output's head ends and its tail starts: cut at word boundaries, so a number
/// split by the cut is still masked as a whole.
fn cut_points(all: &[u8]) -> (usize, usize) {
    let mut head_end = FINGERPRINT_HEAD;
    while head_end < all.len() && CLASSES[all[head_end] as usize] != OTHER {
        head_end += 1;
    }
    let mut tail_start = all.len() - FINGERPRINT_TAIL;
    while tail_start > head_end && CLASSES[all[tail_start - 1] as usize] != OTHER {
        tail_start -= 1;
    }
    (head_end, tail_start)
}

/// A long output's fingerprint: its head's, its tail's and its size class.
fn long_fingerprint(head: u64, tail: u64, len: usize) -> u64 {
    let mut h = Fnv64::default();
    h.write(&head.to_le_bytes());
    h.write(&tail.to_le_bytes());
    h.write(&((len / 256) as u64).to_le_bytes());
    h.finish()
}

fn hash_bytes(bytes: &[u8]) -> u64 {
    let mut h = Fnv64::default();
    h.write(bytes);
    h.finish()
}

/// Bytes read from the start of a long output for its fingerprint.
pub const FINGERPRINT_HEAD: usize = 1024;
/// Bytes read from the end of a long output for its fingerprint.
pub const FINGERPRINT_TAIL: usize = 256;

fn fingerprint_bytes(bytes: &[u8]) -> u64 {
    // Normalise into one buffer (unchanged spans are memcpy'd), then hash it in one pass.
    let mut normal = Vec::with_capacity(bytes.len());
    mask_into(bytes, &mut normal);
    hash_bytes(&normal)
}

/// Appends `bytes` to `normal` with every word that holds a digit masked (see
/// [`observation_fingerprint`]). A word is never split: `bytes` must start and end at word
/// boundaries for two pieces to mask as their concatenation would.
pub(super) fn mask_into(bytes: &[u8], normal: &mut Vec<u8>) {
    let mut raw_from = 0;
    let mut at = 0;
    while let Some(digit) = next_digit(bytes, at) {
        let mut start = digit;
        while start > raw_from && CLASSES[bytes[start - 1] as usize] != OTHER {
            start -= 1;
        }
        let mut end = digit;
        while end < bytes.len() && CLASSES[bytes[end] as usize] != OTHER {
            end += 1;
        }
        normal.extend_from_slice(&bytes[raw_from..start]);
        write_masked_word(&bytes[start..end], normal);
        raw_from = end;
        at = end;
    }
    normal.extend_from_slice(&bytes[raw_from..]);
}

/// The index of the first ASCII digit at or after `from`, eight bytes at a time: a word holds
/// a digit when some byte XOR `'0'` is below 10, found without branches per byte (the lowest
/// flagged byte is always a true match: borrows only carry upwards).
fn next_digit(bytes: &[u8], from: usize) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    let mut i = from;
    while i + 8 <= bytes.len() {
        let mut word = [0u8; 8];
        word.copy_from_slice(&bytes[i..i + 8]);
        let x = u64::from_le_bytes(word) ^ (ONES * u64::from(b'0'));
        let below_ten = x.wrapping_sub(ONES * 10) & !x & HIGHS;
        if below_ten != 0 {
            return Some(i + (below_ten.trailing_zeros() / 8) as usize);
        }
        i += 8;
    }
    bytes[i.min(bytes.len())..].iter().position(u8::is_ascii_digit).map(|p| i + p)
}

/// Writes a word that holds a digit: `#` for a number or a hex id, otherwise the word with each
/// run of digits replaced by `#` (`T10`, `v2`, `utf8`).
fn write_masked_word(word: &[u8], out: &mut Vec<u8>) {
    let hex_only = word.iter().all(|b| CLASSES[*b as usize] != WORD);
    let hex_prefixed = word.len() > 1 && word[0] == b'0' && (word[1] == b'x' || word[1] == b'X');
    if hex_only || hex_prefixed {
        out.push(b'#');
        return;
    }
    let mut from = 0;
    let mut i = 0;
    while i < word.len() {
        if word[i].is_ascii_digit() {
            out.extend_from_slice(&word[from..i]);
            out.push(b'#');
            i += 1;
            while i < word.len() && word[i].is_ascii_digit() {
                i += 1;
            }
            from = i;
        } else {
            i += 1;
        }
    }
    out.extend_from_slice(&word[from..]);
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Masking once for the fingerprint and the lines gives the fingerprint of
        /// [`observation_fingerprint`], whatever the length and wherever the words fall.
        #[test]
        fn one_pass_gives_the_same_fingerprint(
            pieces in prop::collection::vec(prop::sample::select(vec!["a", "b7", "0x1f", " ", "\n", "word", "1234", "x_9y", "é", "."]), 0..600),
            long_word in 0usize..400,
        ) {
            let mut text: String = pieces.concat();
            // A long word somewhere around the cuts.
            let at = text.len() / 2;
            let at = (0..=at).rev().find(|i| text.is_char_boundary(*i)).unwrap_or(0);
            text.insert_str(at, &"z".repeat(long_word));
            let mut normal = Vec::new();
            prop_assert_eq!(mask_with_fingerprint(text.as_bytes(), &mut normal), observation_fingerprint(&text));
            let mut whole = Vec::new();
            mask_into(text.as_bytes(), &mut whole);
            prop_assert_eq!(normal, whole);
        }

        /// The eight-bytes-at-a-time search finds the first digit, as a plain scan does.
        #[test]
        fn next_digit_finds_the_first_digit(bytes in prop::collection::vec(any::<u8>(), 0..64), from in 0usize..64) {
            let from = from.min(bytes.len());
            let plain = bytes[from..].iter().position(u8::is_ascii_digit).map(|p| from + p);
            prop_assert_eq!(next_digit(&bytes, from), plain);
        }
    }
}
