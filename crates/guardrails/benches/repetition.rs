//! The degenerate-reply detector's speed over streamed text (issue 35): 1 MiB of ordinary
//! prose and code fed in deltas of 32 bytes (a stream's) and of 4 KiB. Target: at least
//! 500 MB/s, so that it never holds back the SSE parser (110-137 MB/s).

#![allow(clippy::expect_used, clippy::unwrap_used, missing_docs)]

use divan::Bencher;
use divan::counter::BytesCount;
use looprail_guardrails::repetition::{RepetitionConfig, RepetitionDetector};

fn main() {
    divan::main();
}

/// 1 MiB of text that never repeats a block: prose of words drawn at random from a
/// vocabulary of 256, and real code (this crate's own sources, each longer than the longest
/// period looked for), by turns.
fn text() -> String {
    let code = [
        include_str!("../src/loop_guard.rs"),
        include_str!("../src/detectors/novelty.rs"),
        include_str!("../src/signature/canonical.rs"),
    ];
    let vocabulary: Vec<String> = (0..256u32)
        .map(|i| (0..3 + i % 7).map(|k| (b'a' + ((i * 31 + k * 17) % 26) as u8) as char).collect())
        .collect();
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut text = String::with_capacity(1 << 20);
    let mut turn = 0;
    while text.len() < 1 << 20 {
        // A paragraph of prose, then a source file.
        for _ in 0..400 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            text.push_str(&vocabulary[(state % 256) as usize]);
            text.push(if state.is_multiple_of(11) { '\n' } else { ' ' });
        }
        text.push_str(code[turn % code.len()]);
        turn += 1;
    }
    let mut end = 1 << 20;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.truncate(end);
    text
}

#[divan::bench(args = [32, 4096], sample_count = 20)]
fn detector_per_mib(bencher: Bencher, delta: usize) {
    let text = text();
    let pieces = pieces(&text, delta);
    bencher.counter(BytesCount::new(text.len())).bench(|| {
        let mut detector = RepetitionDetector::new(&RepetitionConfig::default(), false);
        let mut found = 0;
        for piece in &pieces {
            found += usize::from(detector.feed(piece).is_some());
        }
        assert_eq!(found, 0);
        divan::black_box(found)
    });
}

/// `text` in pieces of about `delta` bytes, each on character boundaries.
fn pieces(text: &str, delta: usize) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    while start < text.len() {
        let mut end = (start + delta).min(text.len());
        while !text.is_char_boundary(end) {
            end += 1;
        }
        out.push(&text[start..end]);
        start = end;
    }
    out
}
