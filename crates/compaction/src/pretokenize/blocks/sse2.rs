//! The classes with SSE2's 16-byte compares: about a tenth of the instructions of the word
//! lanes, and classifying is most of what a block costs.

use std::arch::x86_64::{
    __m128i, _mm_cmpeq_epi8, _mm_min_epu8, _mm_movemask_epi8, _mm_or_si128, _mm_set_epi64x, _mm_set1_epi8,
    _mm_sub_epi8,
};

use super::Classes;

/// The classes of 64 bytes.
#[inline(always)]
pub(super) fn classes(block: &[u8; 64]) -> Classes {
    // SAFETY: SSE2 is part of the x86_64 baseline: every x86_64 processor has it and
    // every x86_64 target enables it, so the feature `classes_sse2` is compiled for is
    // always present. (A `#[target_feature]` function stays unsafe to call from code
    // that does not itself name the feature, whatever the target enables.)
    #[allow(unsafe_code)]
    unsafe {
        classes_sse2(block)
    }
}

/// Bit i set where lane i of `v` lies in `low..=high` (unsigned).
#[inline]
#[target_feature(enable = "sse2")]
fn in_range(v: __m128i, low: u8, high: u8) -> __m128i {
    let shifted = _mm_sub_epi8(v, _mm_set1_epi8(low as i8));
    _mm_cmpeq_epi8(_mm_min_epu8(shifted, _mm_set1_epi8((high - low) as i8)), shifted)
}

#[inline]
#[target_feature(enable = "sse2")]
fn equal(v: __m128i, byte: u8) -> __m128i {
    _mm_cmpeq_epi8(v, _mm_set1_epi8(byte as i8))
}

#[inline]
#[target_feature(enable = "sse2")]
fn bits(v: __m128i) -> u64 {
    u64::from(_mm_movemask_epi8(v) as u16)
}

#[target_feature(enable = "sse2")]
fn classes_sse2(block: &[u8; 64]) -> Classes {
    let mut classes = Classes::default();
    for (lane, chunk) in block.chunks_exact(16).enumerate() {
        let word = |at: usize| {
            let mut word = [0u8; 8];
            word.copy_from_slice(&chunk[at..at + 8]);
            i64::from_le_bytes(word)
        };
        let v = _mm_set_epi64x(word(8), word(0));
        // Bytes at or past 0x80 fall outside every range below (compares are unsigned).
        let letters = in_range(_mm_or_si128(v, _mm_set1_epi8(0x20)), b'a', b'z');
        let digits = in_range(v, b'0', b'9');
        let controls = in_range(v, b'\t', b'\r');
        let newlines = _mm_or_si128(equal(v, b'\n'), equal(v, b'\r'));
        let spaces = equal(v, b' ');
        let quotes = equal(v, b'\'');
        let shift = lane * 16;
        let wide = bits(v) << shift;
        let (letters, digits, controls) =
            (bits(letters) << shift, bits(digits) << shift, bits(controls) << shift);
        let (newlines, spaces) = (bits(newlines) << shift, bits(spaces) << shift);
        classes.letters |= letters;
        classes.digits |= digits;
        classes.newlines |= newlines;
        classes.spaces |= spaces;
        classes.blanks |= (controls & !newlines) | spaces;
        classes.quotes |= bits(quotes) << shift;
        classes.wide |= wide;
        let known = letters | digits | controls | spaces | wide;
        classes.others |= !known & (0xffff << shift);
    }
    classes
}
