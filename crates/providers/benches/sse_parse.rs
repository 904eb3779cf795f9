//! SSE parsing and delta assembly throughput on a long recorded stream (issue 3). A realistic
//! 30 tokens/s stream is about 30 OpenAI chunks of ~200 bytes a second (6 KB/s); the client must
//! cost under 1% of its wall time, so it needs at least 0.6 MB/s. We report MB/s.

// A benchmark aborts loudly on a broken setup.
#![allow(clippy::expect_used, clippy::unwrap_used, missing_docs)]

use divan::Bencher;
use divan::counter::BytesCount;
use looprail_providers::anthropic::EventParser;
use looprail_providers::openai::ChunkParser;
use looprail_providers::sse::parse_body;

fn main() {
    divan::main();
}

/// A recorded stream with its middle event repeated until the body is about `target` bytes.
fn long_stream(recorded: &str, marker: &str, target: usize) -> Vec<u8> {
    let events: Vec<&str> = recorded.split("\n\n").filter(|e| !e.trim().is_empty()).collect();
    let middle = events.iter().position(|e| e.contains(marker)).expect("a delta event");
    let mut body = String::new();
    for e in &events[..middle] {
        body.push_str(e);
        body.push_str("\n\n");
    }
    while body.len() < target {
        body.push_str(events[middle]);
        body.push_str("\n\n");
    }
    for e in &events[middle + 1..] {
        body.push_str(e);
        body.push_str("\n\n");
    }
    body.into_bytes()
}

fn fixture(path: &str) -> String {
    std::fs::read_to_string(format!("{}/tests/fixtures/{path}", env!("CARGO_MANIFEST_DIR"))).unwrap()
}

#[divan::bench(sample_count = 20)]
fn openai_text_stream_1mb(bencher: Bencher) {
    let body =
        long_stream(&fixture("openai/test_parse_nothing__e2aad469b71d.sse"), "\"content\":\" real", 1 << 20);
    let runtime = tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap();
    bencher.counter(BytesCount::new(body.len())).bench_local(|| {
        let response = runtime.block_on(parse_body(body.clone(), ChunkParser::new("gpt-4o"))).unwrap();
        divan::black_box(response)
    });
}

#[divan::bench(sample_count = 20)]
fn anthropic_tool_stream_1mb(bencher: Bencher) {
    let body = long_stream(
        &fixture("anthropic/stream_tool_use__555fb399_0.sse"),
        "\"partial_json\":\"loca\"",
        1 << 20,
    );
    let runtime = tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap();
    bencher.counter(BytesCount::new(body.len())).bench_local(|| {
        let response = runtime.block_on(parse_body(body.clone(), EventParser::new("claude"))).unwrap();
        divan::black_box(response)
    });
}
