//! cl100k's piece starts for 64 ASCII bytes at a time, as a bit mask (bit i: a piece starts at
//! the block's byte i), computed from masks of the bytes' classes without a branch per piece.
//!
//! On ASCII every piece start follows from the runs of letters, digits, whitespace and other
//! characters around it:
//!
//! - a run of letters starts a piece, unless the character before it is its prefix (a space
//!   or tab always is; another character is when it is alone, not after a space, and so starts
//!   a piece itself); a quote that starts a piece and reads `'s` `'t` `'m` `'d` `'re` `'ve` or
//!   `'ll` (any case) is a contraction, after which a new piece starts;
//! - a run of digits starts a piece, and so does every third digit in it;
//! - a run of other characters starts a piece, at the space before it when there is one;
//!   the line breaks straight after it belong to it;
//! - a run of whitespace (less the line breaks a run of other characters took) starts a
//!   piece; inside it, a piece starts after its last line break, and at its last character
//!   when a non-space follows.
//!
//! What reaches past the block (the character after it, a run of spaces and tabs that goes on)
//! is carried in [`Scanner`]. A block with a byte that is not ASCII is left to the character by
//! character path.

use super::{HIGH, ONES, contraction_end, in_range};

/// Bit i set for the block's bytes of a class.
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
struct Classes {
    letters: u64,
    digits: u64,
    /// `\r` and `\n`.
    newlines: u64,
    /// `' '`.
    spaces: u64,
    /// Spaces and the other whitespace that is not a line break (`\t`, `\x0b`, `\x0c`).
    blanks: u64,
    /// Everything ASCII that is not a letter, digit or whitespace (quotes included).
    others: u64,
    quotes: u64,
    /// Bytes that are not ASCII.
    wide: u64,
}

/// The high bit of each byte of the 7-bit `x` that equals `byte`.
#[inline(always)]
fn equal(x: u64, byte: u8) -> u64 {
    let differ = x ^ (ONES * u64::from(byte));
    !((differ & !HIGH).wrapping_add(!HIGH) | differ) & HIGH
}

/// The eight high bits of `word`'s bytes as eight bits (byte k's at bit k).
#[inline(always)]
fn gather(word: u64) -> u64 {
    ((word >> 7) & ONES).wrapping_mul(0x0102_0408_1020_4080) >> 56
}

impl Classes {
    /// The classes of 64 bytes.
    #[inline(always)]
    fn of(block: &[u8; 64]) -> Self {
        #[cfg(target_arch = "x86_64")]
        {
            sse2::classes(block)
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            Self::in_words(block)
        }
    }

    /// The classes of 64 bytes, eight at a time in a word's lanes (any processor).
    #[cfg_attr(target_arch = "x86_64", allow(dead_code))]
    #[inline(always)]
    fn in_words(block: &[u8; 64]) -> Self {
        let mut classes = Self::default();
        for (lane, chunk) in block.chunks_exact(8).enumerate() {
            let mut word = [0u8; 8];
            word.copy_from_slice(chunk);
            let word = u64::from_le_bytes(word);
            let wide = word & HIGH;
            let x = word & !HIGH;
            let ascii = !wide & HIGH;
            let letters = in_range(x | 0x2020_2020_2020_2020, b'a', b'z') & ascii;
            let digits = in_range(x, b'0', b'9') & ascii;
            let controls = in_range(x, b'\t', b'\r') & ascii;
            let newlines = (equal(x, b'\n') | equal(x, b'\r')) & ascii;
            let spaces = equal(x, b' ') & ascii;
            let quotes = equal(x, b'\'') & ascii;
            let blanks = (controls & !newlines) | spaces;
            let others = ascii & !(letters | digits | controls | spaces);
            let shift = lane * 8;
            classes.letters |= gather(letters) << shift;
            classes.digits |= gather(digits) << shift;
            classes.newlines |= gather(newlines) << shift;
            classes.spaces |= gather(spaces) << shift;
            classes.blanks |= gather(blanks) << shift;
            classes.others |= gather(others) << shift;
            classes.quotes |= gather(quotes) << shift;
            classes.wide |= gather(wide) << shift;
        }
        classes
    }

    fn whitespace(&self) -> u64 {
        self.blanks | self.newlines
    }
}

#[cfg(target_arch = "x86_64")]
mod sse2;

/// `mask` moved up `by` bits, the bits of the block before filling the bottom.
#[inline(always)]
fn after(mask: u64, before: u64, by: u32) -> u64 {
    mask << by | before >> (64 - by)
}

/// What a block hands to the next one.
#[derive(Default)]
pub(super) struct Scanner {
    /// The previous block's classes (zero before the first block: nothing precedes the text).
    previous: Classes,
    /// The previous block's whitespace that starts or continues whitespace pieces.
    previous_own_whitespace: u64,
    /// A run of line breaks after other characters goes on into this block.
    absorbing: bool,
    /// Digit-group starts that fall past the previous block (bits 0 to 2 here).
    digit_groups: u64,
    /// A run of blanks after a line break goes on into this block; the piece start it makes
    /// (if the run does not end in another line break) is at this position.
    blank_run: Option<usize>,
    /// Piece starts the previous block found in this one (after a contraction).
    ahead: u64,
}

/// Piece starts of one block: `first` (from an earlier block, before every bit of `mask`)
/// when there is one, then `mask`'s bits.
pub(super) struct Starts {
    pub(super) first: Option<usize>,
    pub(super) mask: u64,
}

impl Scanner {
    /// The piece starts in `text[at..at + 64]` (what lies past the text counts as nothing),
    /// or `None` when a byte there or the one after it is not ASCII.
    #[inline]
    pub(super) fn block(&mut self, text: &[u8], at: usize) -> Option<Starts> {
        let mut block = [0u8; 64];
        let valid_len = text.len().saturating_sub(at).min(64);
        block[..valid_len].copy_from_slice(&text[at..at + valid_len]);
        let next = text.get(at + 64).copied();
        if next.is_some_and(|b| b >= 0x80) {
            return None;
        }
        let valid = if valid_len == 64 { u64::MAX } else { (1u64 << valid_len) - 1 };
        let mut c = Classes::of(&block);
        if c.wide & valid != 0 {
            return None;
        }
        c.others &= valid;
        let p = self.previous;
        let whitespace = c.whitespace();
        let next_whitespace = next.is_some_and(|b| matches!(b, b' ' | b'\t'..=b'\r'));
        let next_letter = next.is_some_and(|b| b.is_ascii_alphabetic());
        let mut starts = 0u64;

        // Letters: a run starts a piece unless its prefix does.
        let letter_starts = c.letters & !after(c.letters, p.letters, 1);
        let lone_other =
            after(c.others, p.others, 1) & !after(c.others, p.others, 2) & !after(c.spaces, p.spaces, 2);
        let prefixed = letter_starts & (after(c.blanks, p.blanks, 1) | lone_other);
        starts |= letter_starts & !prefixed;

        // Digits: a run starts a piece, and so does every third digit of it.
        let digit_starts = c.digits & !after(c.digits, p.digits, 1);
        let four = c.digits
            & after(c.digits, p.digits, 1)
            & after(c.digits, p.digits, 2)
            & after(c.digits, p.digits, 3);
        let mut group = digit_starts | (self.digit_groups & four);
        let mut groups = group;
        let mut beyond = 0;
        while group != 0 {
            beyond |= group >> 61;
            group = (group << 3) & four;
            groups |= group;
        }
        starts |= groups;
        self.digit_groups = beyond;

        // Other characters: a run starts a piece, at the space before it if there is one
        // (that space's start comes from the whitespace rules).
        let other_starts = c.others & !after(c.others, p.others, 1);
        starts |= other_starts & !after(c.spaces, p.spaces, 1);

        // Contractions: a quote that starts a piece, before a letter.
        let next_letters = c.letters >> 1 | u64::from(next_letter) << 63;
        let mut quotes =
            c.quotes & !after(c.others, p.others, 1) & !after(c.spaces, p.spaces, 1) & next_letters;
        starts |= self.ahead;
        self.ahead = 0;
        while quotes != 0 {
            let quote = at + quotes.trailing_zeros() as usize;
            quotes &= quotes - 1;
            if let Some(end) = contraction_end(text, quote)
                && text.get(end).is_some_and(u8::is_ascii_alphabetic)
            {
                match end - at {
                    bit @ 0..64 => starts |= 1 << bit,
                    bit => self.ahead |= 1 << (bit - 64),
                }
            }
        }

        // Whitespace: line breaks straight after other characters belong to them.
        let breaks_after_others = c.newlines & after(c.others, p.others, 1);
        let (sum, carried) = c.newlines.overflowing_add(breaks_after_others);
        let (sum, carried_in) = sum.overflowing_add(u64::from(self.absorbing));
        let absorbed = c.newlines & !sum;
        self.absorbing = carried || carried_in;
        let own = whitespace & !absorbed;
        starts |= own & !after(own, self.previous_own_whitespace, 1);
        // The last character of a run, before a non-space: its own piece, or the prefix of
        // what follows.
        let next_own = own >> 1 | u64::from(next_whitespace) << 63;
        let followed = valid >> 1 | u64::from(next.is_some()) << 63;
        starts |= c.blanks & !next_own & followed;
        let (first, after_breaks) = self.after_last_breaks(&c, at, next);
        starts |= after_breaks;

        self.previous = c;
        self.previous_own_whitespace = own;
        Some(Starts { first, mask: starts & valid })
    }

    /// Piece starts after the last line break of a whitespace run: a run of blanks after a
    /// line break starts a piece unless another line break ends it. Returns the start of a run
    /// carried from an earlier block, if it ended here without a line break, and this block's
    /// starts.
    #[inline]
    fn after_last_breaks(&mut self, c: &Classes, at: usize, next: Option<u8>) -> (Option<usize>, u64) {
        let mut first = None;
        if let Some(start) = self.blank_run {
            let end = (!c.blanks).trailing_zeros();
            let ended_by_break = if end < 64 {
                c.newlines >> end & 1 == 1
            } else {
                // The run fills the block: the byte after it decides, unless the run goes on.
                match next {
                    Some(b'\t' | b' ' | 0x0b | 0x0c) => return (None, 0),
                    byte => matches!(byte, Some(b'\n' | b'\r')),
                }
            };
            self.blank_run = None;
            if !ended_by_break {
                first = Some(start);
            }
        }
        let runs = c.blanks & after(c.newlines, self.previous.newlines, 1);
        // Each run's start bit ripples through its blanks to the byte after the run.
        let (sum, reaches_end) = runs.overflowing_add(c.blanks);
        let ends = sum & !c.blanks;
        let mut good = runs;
        let mut ended_by_breaks = ends & c.newlines;
        while ended_by_breaks != 0 {
            let end = ended_by_breaks.trailing_zeros();
            ended_by_breaks &= ended_by_breaks - 1;
            let started = runs & ((1u64 << end) - 1);
            good &= !(1 << (63 - started.leading_zeros()));
        }
        if reaches_end {
            // The last run reaches the block's end: the byte after the block decides, or if
            // the run goes on, the next block.
            let last = 63 - runs.leading_zeros();
            match next {
                Some(b'\t' | b' ' | 0x0b | 0x0c) => {
                    good &= !(1 << last);
                    self.blank_run = Some(at + last as usize);
                }
                Some(b'\n' | b'\r') => good &= !(1 << last),
                _ => {}
            }
        }
        (first, good)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The classes byte by byte, the plain way.
    fn one_by_one(block: &[u8; 64]) -> Classes {
        let mut c = Classes::default();
        for (i, &b) in block.iter().enumerate() {
            let bit = 1u64 << i;
            let set = |mask: &mut u64, yes: bool| *mask |= if yes { bit } else { 0 };
            set(&mut c.letters, b.is_ascii_alphabetic());
            set(&mut c.digits, b.is_ascii_digit());
            set(&mut c.newlines, matches!(b, b'\n' | b'\r'));
            set(&mut c.spaces, b == b' ');
            set(&mut c.blanks, matches!(b, b' ' | b'\t' | 0x0b | 0x0c));
            set(&mut c.quotes, b == b'\'');
            set(&mut c.wide, b >= 0x80);
            set(&mut c.others, b < 0x80 && !b.is_ascii_alphanumeric() && !matches!(b, b' ' | b'\t'..=b'\r'));
        }
        c
    }

    proptest! {
        /// Both ways of classifying agree with the plain one on any bytes.
        #[test]
        fn classes_are_the_bytes_classes(bytes in proptest::collection::vec(any::<u8>(), 64)) {
            let block: [u8; 64] = bytes.try_into().unwrap_or([0; 64]);
            prop_assert_eq!(Classes::in_words(&block), one_by_one(&block));
            prop_assert_eq!(Classes::of(&block), one_by_one(&block));
        }
    }
}
