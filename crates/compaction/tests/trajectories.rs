//! Token counts agree with tiktoken-rs on the recorded runs, and the incremental ledger agrees
//! with counting everything at once (issue 6, B6).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use looprail_compaction::{MESSAGE_OVERHEAD, TOOL_PART_OVERHEAD, TiktokenCounter, TokenLedger};
use looprail_loop_core::context::TokenCounter;
use looprail_loop_core::message::ContentPart;
use looprail_loop_core::transcript::from_openai_messages;

#[test]
fn counts_match_tiktoken_on_every_recorded_message() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/trajectories");
    if !root.is_dir() {
        // Under CI ../shared is always there: its absence must fail, never pass silently.
        assert!(std::env::var_os("CI").is_none(), "{} is missing under CI", root.display());
        eprintln!("skipped: {} is absent (it ships beside the repository, not in it)", root.display());
        return;
    }
    let bpe = tiktoken_rs::cl100k_base_singleton();
    let counter = TiktokenCounter::default();
    let mut runs = 0;
    let mut messages_checked = 0;
    for dir in ["swe-agent-deepseek-chat-v2", "tau-bench-gpt-4o-airline"] {
        let mut paths: Vec<_> =
            std::fs::read_dir(root.join(dir)).unwrap().map(|e| e.unwrap().path()).collect();
        paths.sort();
        for path in paths.iter().filter(|p| p.extension().is_some_and(|e| e == "json")) {
            let value: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
            let messages = from_openai_messages(value["messages"].as_array().unwrap()).unwrap();
            let mut direct_total = 0;
            for message in &messages {
                let mut direct = MESSAGE_OVERHEAD;
                for part in &message.content {
                    direct += match part {
                        ContentPart::Text { text } => bpe.encode_ordinary(text).len() as u64,
                        ContentPart::ToolUse(c) => {
                            TOOL_PART_OVERHEAD
                                + (bpe.encode_ordinary(&c.name).len()
                                    + bpe.encode_ordinary(&c.arguments).len())
                                    as u64
                        }
                        ContentPart::ToolResult(r) => {
                            TOOL_PART_OVERHEAD + bpe.encode_ordinary(&r.content).len() as u64
                        }
                        ContentPart::Image { .. } => unreachable!("no images in these logs"),
                    };
                }
                assert_eq!(counter.count_message(message), direct, "{}", path.display());
                direct_total += direct;
                messages_checked += 1;
            }
            // Incremental: the ledger fed one message at a time ends where a full count does.
            let mut ledger = TokenLedger::default();
            for end in 1..=messages.len() {
                ledger.sync(&messages[..end], &counter);
            }
            assert_eq!(ledger.total(), direct_total);
            runs += 1;
        }
    }
    assert_eq!(runs, 291);
    eprintln!("{messages_checked} messages in {runs} runs counted identically");
}
