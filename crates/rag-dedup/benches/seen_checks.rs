//! Dedup checks against a large map (issue 7): 20-chunk results, half already seen, against a
//! conversation map holding 100,000 chunks. Target: at least 5 million chunk checks per second
//! on one core (at most 200 ns per chunk).

// A benchmark aborts loudly on a broken setup.
#![allow(clippy::expect_used, clippy::unwrap_used, missing_docs)]

use divan::Bencher;
use looprail_rag_dedup::{Chunk, SeenChunks};

fn main() {
    divan::main();
}

const SEEN: u32 = 100_000;

fn chunk(i: u32) -> Chunk {
    // 50 files per store, 40 chunks per file: ids repeat as they do in real stores.
    Chunk::new(
        format!("vs_{:04}", i / 2000),
        format!("file-{:06}.pdf", i / 40),
        i % 40,
        "a short passage of text",
    )
}

#[divan::bench(sample_count = 50, sample_size = 100)]
fn filter_20_chunks_against_100k(bencher: Bencher) {
    let mut seen = SeenChunks::new(SEEN as usize + 1_000_000);
    let warm: Vec<Chunk> = (0..SEEN).map(chunk).collect();
    seen.filter("warm", &warm);
    let mut next_new = SEEN;
    let mut n = 0u32;
    bencher
        .with_inputs(|| {
            n = n.wrapping_add(1);
            let mut result: Vec<Chunk> =
                (0..10).map(|k| chunk((n.wrapping_mul(7919) + k * 997) % SEEN)).collect();
            result.extend((0..10).map(|_| {
                next_new += 1;
                chunk(next_new)
            }));
            result
        })
        .bench_local_refs(|result| divan::black_box(seen.filter("call", result).duplicates));
}
