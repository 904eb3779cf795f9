//! Issue 35 on recorded data: no assistant reply in ../shared/trajectories (texts and tool-call
//! arguments: whole files written, patches, commands) and no recorded API response in
//! ../shared/wire (the text, thinking and argument streams of each) is taken for a degenerate
//! reply, whatever pieces it arrives in.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use looprail_guardrails::repetition::{RepetitionConfig, RepetitionDetector};
use looprail_tests::trajectories;
use serde_json::Value;

/// Feeds `text` in pieces of `piece` bytes; the repetition found, if any.
fn degenerate(text: &str, arguments: bool, piece: usize) -> Option<String> {
    let mut detector = RepetitionDetector::new(&RepetitionConfig::default(), arguments);
    let mut start = 0;
    while start < text.len() {
        let mut end = (start + piece).min(text.len());
        while !text.is_char_boundary(end) {
            end += 1;
        }
        if let Some(found) = detector.feed(&text[start..end]) {
            return Some(format!("{found:?} in {:?}", &text[..text.len().min(300)]));
        }
        start = end;
    }
    None
}

#[test]
fn no_recorded_assistant_reply_is_degenerate() {
    let Some(root) = trajectories::root() else { return };
    let mut replies = 0;
    for set in std::fs::read_dir(&root).unwrap().filter_map(Result::ok).filter(|e| e.path().is_dir()) {
        for run in trajectories::load_dir(&set.path()) {
            for message in
                run.messages.iter().filter(|m| m.role == looprail_loop_core::message::Role::Assistant)
            {
                replies += 1;
                if let Some(text) = message.joined_text() {
                    for piece in [7, 4096] {
                        let found = degenerate(&text, false, piece);
                        assert!(found.is_none(), "{}: {}", run.path.display(), found.unwrap());
                    }
                }
                for call in message.tool_calls() {
                    let found = degenerate(&call.arguments, true, 64);
                    assert!(found.is_none(), "{} {}: {}", run.path.display(), call.name, found.unwrap());
                }
            }
        }
    }
    assert!(replies > 20_000, "the sets were read: {replies} replies");
}

/// Every string under a key a reply's text streams in, concatenated in order, per key.
fn streams(value: &Value, out: &mut [String; 2]) {
    match value {
        Value::Object(map) => {
            for (key, value) in map {
                match (key.as_str(), value) {
                    ("text" | "content" | "thinking", Value::String(s)) => out[0].push_str(s),
                    ("partial_json" | "arguments", Value::String(s)) => out[1].push_str(s),
                    _ => streams(value, out),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|v| streams(v, out)),
        _ => {}
    }
}

#[test]
fn no_recorded_api_response_is_degenerate() {
    let Some(wire) = trajectories::shared_dir("wire") else { return };
    let mut files = 0;
    let mut pending = vec![wire];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().filter_map(Result::ok) {
            let path = entry.path();
            if path.is_dir() {
                pending.push(path);
                continue;
            }
            let Ok(text) = std::fs::read_to_string(&path) else { continue };
            let mut out = [String::new(), String::new()];
            match serde_json::from_str::<Value>(&text) {
                Ok(doc) => streams(&doc, &mut out),
                Err(_) => {
                    for data in text.lines().filter_map(|l| l.strip_prefix("data:")) {
                        if let Ok(event) = serde_json::from_str::<Value>(data.trim()) {
                            streams(&event, &mut out);
                        }
                    }
                }
            }
            files += 1;
            for (stream, arguments) in [(&out[0], false), (&out[1], true)] {
                let found = degenerate(stream, arguments, 5);
                assert!(found.is_none(), "{}: {}", path.display(), found.unwrap());
            }
        }
    }
    assert!(files >= 50, "the recordings were read: {files}");
}
