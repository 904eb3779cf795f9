//! cl100k's pre-tokenization (the split of a text into the pieces BPE encodes one by one),
//! without a regex engine. The pattern, alternatives tried in order, the first that matches
//! winning:
//!
//! ```text
//! (?i:'s|'t|'re|'ve|'m|'ll|'d) | [^\r\n\p{L}\p{N}]?\p{L}+ | \p{N}{1,3} | ?[^\s\p{L}\p{N}]+[\r\n]*
//!   | \s*[\r\n]+ | \s+(?!\S) | \s+
//! ```
//!
//! Most of what agents log is ASCII, where `\p{L}` is `[A-Za-z]`, `\p{N}` is `[0-9]` and `\s`
//! is `[\t\n\x0b\x0c\r ]`: [`ascii_piece`] cuts a piece from byte classes when every character
//! it depends on (the piece and the one after it) is ASCII, reading runs of letters eight bytes
//! at a time. Otherwise [`unicode::piece`] cuts it character by character with the Unicode
//! classes the regex uses.

mod blocks;
mod unicode;

use crate::vocabulary::load8;
use blocks::Scanner;

/// What an ASCII byte is, to the pattern.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Class {
    Letter,
    Digit,
    /// `\r` or `\n`.
    Newline,
    /// Whitespace other than `\r` and `\n`.
    Space,
    /// Anything else ASCII.
    Other,
    /// Not ASCII: the Unicode path decides.
    Wide,
}

/// Every byte's class, looked up rather than matched: this runs once per byte counted.
static CLASSES: [Class; 256] = {
    let mut table = [Class::Other; 256];
    let mut byte = 0;
    while byte < 256 {
        table[byte] = class(byte as u8);
        byte += 1;
    }
    table
};

const fn class(byte: u8) -> Class {
    match byte {
        b'a'..=b'z' | b'A'..=b'Z' => Class::Letter,
        b'0'..=b'9' => Class::Digit,
        b'\r' | b'\n' => Class::Newline,
        b'\t' | 0x0b | 0x0c | b' ' => Class::Space,
        0x80.. => Class::Wide,
        _ => Class::Other,
    }
}

/// The class of `bytes[at]`, `None` past the end.
#[inline]
fn at(bytes: &[u8], at: usize) -> Option<Class> {
    bytes.get(at).map(|b| CLASSES[usize::from(*b)])
}

/// The end of the run of `wanted` bytes from `from`, or `None` when the run stops at a byte
/// that is not ASCII (it might continue the run).
#[inline]
fn run(bytes: &[u8], from: usize, wanted: impl Fn(Class) -> bool) -> Option<usize> {
    let mut end = from;
    loop {
        match at(bytes, end) {
            Some(Class::Wide) => return None,
            Some(c) if wanted(c) => end += 1,
            _ => return Some(end),
        }
    }
}

/// One in every byte of a word.
const ONES: u64 = 0x0101_0101_0101_0101;
/// The high bit of every byte of a word.
const HIGH: u64 = 0x8080_8080_8080_8080;

/// The high bit of each byte of the 7-bit `x` that lies in `low..=high`: two adds test all
/// eight bytes (no byte carries into the next, as the high bits are clear).
#[inline(always)]
fn in_range(x: u64, low: u8, high: u8) -> u64 {
    let from_low = x.wrapping_add(ONES * u64::from(0x80 - low));
    let past_high = x.wrapping_add(ONES * u64::from(0x7f - high));
    from_low & !past_high & HIGH
}

/// The high bit of every byte of `word` that is not an ASCII letter: lower-cased, a letter is
/// a byte in `'a'..='z'` that was ASCII to begin with.
#[inline]
fn not_letters(word: u64) -> u64 {
    let lowered = (word | 0x2020_2020_2020_2020) & !HIGH;
    !(in_range(lowered, b'a', b'z') & !word) & HIGH
}

/// The end of the run of letters from `from` (eight bytes at a time), or `None` when it stops
/// at a byte that is not ASCII.
#[inline]
fn letters(bytes: &[u8], mut from: usize) -> Option<usize> {
    while from + 8 <= bytes.len() {
        let stops = not_letters(load8(bytes, from));
        if stops != 0 {
            let end = from + (stops.trailing_zeros() / 8) as usize;
            return (bytes[end] < 0x80).then_some(end);
        }
        from += 8;
    }
    run(bytes, from, |c| c == Class::Letter)
}

/// The end of the piece that starts at `bytes[start]`, when the ASCII rules decide it.
///
/// Words come first and are told apart with two plain tests: most pieces are words, and a
/// `match` on the class compiles to a jump table whose target the processor mispredicts about
/// every other piece.
#[inline(always)]
pub(crate) fn ascii_piece(bytes: &[u8], start: usize) -> Option<usize> {
    let byte = bytes[start];
    let first = CLASSES[usize::from(byte)];
    // `\p{L}+`.
    if first == Class::Letter {
        return letters(bytes, start + 1);
    }
    let second = at(bytes, start + 1);
    // `[^\r\n\p{L}\p{N}]?\p{L}+`: a space, tab or punctuation mark before a word (a quote
    // may open a contraction instead).
    if second == Some(Class::Letter) && (first == Class::Space || (first == Class::Other && byte != b'\'')) {
        return letters(bytes, start + 2);
    }
    other_piece(bytes, start, first, second)
}

/// The pieces that are not plain words.
#[inline]
fn other_piece(bytes: &[u8], start: usize, first: Class, second: Option<Class>) -> Option<usize> {
    match first {
        Class::Space => match second {
            Some(Class::Wide) => None,
            Some(Class::Other) if bytes[start] == b' ' => punctuation(bytes, start + 1),
            _ => whitespace(bytes, start),
        },
        Class::Other => {
            if bytes[start] == b'\'' {
                if let Some(end) = contraction_end(bytes, start) {
                    return Some(end);
                }
                // A character past ASCII may fold to a contraction's letter ('ſ' to 's').
                let lower = |i: usize| bytes.get(start + i).map(u8::to_ascii_lowercase);
                if let (Some(b'\x80'..), _) | (Some(b'r' | b'v' | b'l'), Some(b'\x80'..)) =
                    (lower(1), lower(2))
                {
                    return None;
                }
            }
            match second {
                Some(Class::Letter) => letters(bytes, start + 2),
                Some(Class::Wide) => None,
                _ => punctuation(bytes, start),
            }
        }
        Class::Digit => {
            let mut end = start + 1;
            while end < start + 3 {
                match at(bytes, end) {
                    Some(Class::Digit) => end += 1,
                    Some(Class::Wide) => return None,
                    _ => break,
                }
            }
            Some(end)
        }
        Class::Newline => whitespace(bytes, start),
        Class::Letter | Class::Wide => None,
    }
}

/// Where the contraction that `text[quote]` opens ends, if it opens one in ASCII: `'s` `'t`
/// `'m` `'d` `'re` `'ve` or `'ll`, in any case.
#[inline]
fn contraction_end(text: &[u8], quote: usize) -> Option<usize> {
    let lower = |i: usize| text.get(quote + i).map(u8::to_ascii_lowercase);
    match (lower(1), lower(2)) {
        (Some(b's' | b't' | b'm' | b'd'), _) => Some(quote + 2),
        (Some(b'r' | b'v'), Some(b'e')) | (Some(b'l'), Some(b'l')) => Some(quote + 3),
        _ => None,
    }
}

/// ` ?[^\s\p{L}\p{N}]+[\r\n]*` from `from` (after the optional space).
#[inline]
fn punctuation(bytes: &[u8], from: usize) -> Option<usize> {
    let mut end = run(bytes, from, |c| c == Class::Other)?;
    while matches!(bytes.get(end), Some(b'\r' | b'\n')) {
        end += 1;
    }
    Some(end)
}

/// A piece starting with whitespace that is not a space before a word or punctuation.
#[inline]
fn whitespace(bytes: &[u8], start: usize) -> Option<usize> {
    let mut end = start;
    let mut after_newline = None;
    loop {
        match at(bytes, end) {
            Some(Class::Space) => end += 1,
            Some(Class::Newline) => {
                end += 1;
                after_newline = Some(end);
            }
            Some(Class::Wide) => return None,
            _ => break,
        }
    }
    // `\s*[\r\n]+`: up to the run's last line break.
    if let Some(after) = after_newline {
        return Some(after);
    }
    // `\s+(?!\S)`: the run, but the last space goes with the next piece unless the text ends.
    if end == bytes.len() || end == start + 1 { Some(end) } else { Some(end - 1) }
}

/// The end of the piece that starts at `text[start..]`, by whichever rules apply.
#[inline]
pub(crate) fn piece_end(text: &str, start: usize) -> usize {
    match ascii_piece(text.as_bytes(), start) {
        Some(end) => end,
        None => start + unicode::piece(&text[start..]),
    }
}

/// Walks a text's piece starts: 64 bytes at a time where the text is ASCII ([`blocks`]),
/// piece by piece around other characters. The caller keeps where the open piece starts and
/// cuts pieces at the starts it is given; a block's work stays out of that loop (its state
/// would crowd the loop's registers).
pub(crate) struct Walk<'a> {
    text: &'a str,
    scanner: Scanner,
    /// The next block to scan.
    next_block: usize,
    /// Pieces before this byte are cut one by one (a byte that is not ASCII is near).
    one_by_one_until: usize,
}

/// What [`Walk::step`] found.
pub(crate) enum Step {
    /// Piece starts in a block: `first` (from an earlier block) if any, then bit i of `mask`
    /// for byte `base + i`. A start equal to the open piece's start cuts nothing.
    Starts { base: usize, first: Option<usize>, mask: u64 },
    /// The open piece ends here.
    End(usize),
    /// The text is walked: the open piece runs to its end.
    Done,
}

impl<'a> Walk<'a> {
    /// A walk over `text`.
    pub(crate) fn new(text: &'a str) -> Self {
        Self { text, scanner: Scanner::default(), next_block: 0, one_by_one_until: 0 }
    }

    /// The next piece starts, given where the open piece starts.
    #[inline(never)]
    pub(crate) fn step(&mut self, open: usize) -> Step {
        loop {
            if open < self.one_by_one_until {
                let end = piece_end(self.text, open);
                if end >= self.one_by_one_until {
                    self.next_block = end;
                }
                return Step::End(end);
            }
            let bytes = self.text.as_bytes();
            if self.next_block >= bytes.len() {
                return Step::Done;
            }
            match self.scanner.block(bytes, self.next_block) {
                Some(starts) => {
                    let base = self.next_block;
                    self.next_block += 64;
                    return Step::Starts { base, first: starts.first, mask: starts.mask };
                }
                None => {
                    // Not ASCII in the block or just after it: piece by piece from the open
                    // piece until past the block, then blocks again from a piece start.
                    self.one_by_one_until = (self.next_block + 65).min(bytes.len());
                    self.scanner = Scanner::default();
                }
            }
        }
    }
}

/// What is done with each piece of a walk.
pub(crate) trait Cut {
    /// Called for the piece `start..end` (never empty), in the text's order.
    fn cut(&mut self, start: usize, end: usize);
}

impl<F: FnMut(usize, usize)> Cut for F {
    #[inline(always)]
    fn cut(&mut self, start: usize, end: usize) {
        self(start, end);
    }
}

/// Calls `cut` for every piece of `text`, in order. (A closure's call is not always inlined
/// at each of the three places below; a [`Cut`] whose `cut` is `#[inline(always)]` is.)
#[inline(always)]
pub(crate) fn for_each_piece(text: &str, cut: &mut impl Cut) {
    let mut walk = Walk::new(text);
    let mut open = 0;
    loop {
        match walk.step(open) {
            Step::Starts { base, first, mask } => {
                if let Some(start) = first.filter(|start| *start > open) {
                    cut.cut(open, start);
                    open = start;
                }
                let mut mask = mask;
                while mask != 0 {
                    let start = base + mask.trailing_zeros() as usize;
                    mask &= mask - 1;
                    if start > open {
                        cut.cut(open, start);
                        open = start;
                    }
                }
            }
            Step::End(end) => {
                cut.cut(open, end);
                open = end;
            }
            Step::Done => {
                if open < text.len() {
                    cut.cut(open, text.len());
                }
                return;
            }
        }
    }
}

/// Splits `text` as cl100k's pre-tokenizer does, piece by piece.
#[cfg(test)]
fn split_cl100k(text: &str) -> impl Iterator<Item = &str> {
    let mut start = 0;
    std::iter::from_fn(move || {
        if start >= text.len() {
            return None;
        }
        let end = piece_end(text, start);
        let piece = &text[start..end];
        start = end;
        Some(piece)
    })
}

#[cfg(test)]
mod tests;
