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
    // Long output: its head, its tail and its size class (cut at word boundaries so a number
    // split by the cut is still masked as a whole).
    let mut head_end = FINGERPRINT_HEAD;
    while head_end < all.len() && CLASSES[all[head_end] as usize] != OTHER {
        head_end += 1;
    }
    let mut tail_start = all.len() - FINGERPRINT_TAIL;
    while tail_start > head_end && CLASSES[all[tail_start - 1] as usize] != OTHER {
        tail_start -= 1;
    }
    let mut h = Fnv64::default();
    h.write(&fingerprint_bytes(&all[..head_end]).to_le_bytes());
    h.write(&fingerprint_bytes(&all[tail_start..]).to_le_bytes());
    h.write(&((all.len() / 256) as u64).to_le_bytes());
    h.finish()
}

/// Bytes read from the start of a long output for its fingerprint.
pub const FINGERPRINT_HEAD: usize = 1024;
/// Bytes read from the end of a long output for its fingerprint.
pub const FINGERPRINT_TAIL: usize = 256;

fn fingerprint_bytes(bytes: &[u8]) -> u64 {
    // Normalise into one buffer (unchanged spans are memcpy'd), then hash it in one pass.
    let mut normal = Vec::with_capacity(bytes.len());
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
        write_masked_word(&bytes[start..end], &mut normal);
        raw_from = end;
        at = end;
    }
    normal.extend_from_slice(&bytes[raw_from..]);
    let mut h = Fnv64::default();
    h.write(&normal);
    h.finish()
}

/// The index of the first ASCII digit at or after `from`, checking 16 bytes at a time without
/// branches (the compiler vectorises the inner fold).
fn next_digit(bytes: &[u8], from: usize) -> Option<usize> {
    let mut i = from;
    while i + 16 <= bytes.len() {
        let chunk = &bytes[i..i + 16];
        if chunk.iter().fold(false, |any, b| any | (b.wrapping_sub(b'0') < 10)) {
            return chunk.iter().position(u8::is_ascii_digit).map(|p| i + p);
        }
        i += 16;
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
    let mut in_digits = false;
    for &b in word {
        if b.is_ascii_digit() {
            if !in_digits {
                out.push(b'#');
            }
            in_digits = true;
        } else {
            out.push(b);
            in_digits = false;
        }
    }
}
