//! A provider's stream is outside input: whatever events it sends (fields of any type, unknown
//! event and block kinds, indexes anywhere in the integer range, data that is not JSON), the
//! parsers answer each event with a step, and a finished stream with a reply or a typed error,
//! never a panic. A reply's calls are the ones whose blocks the stream started.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use looprail_loop_core::testkit::strategies::json_value;
use looprail_providers::anthropic::EventParser;
use looprail_providers::openai::ChunkParser;
use looprail_providers::sse::{SseParser, Step};
use proptest::prelude::*;
use serde_json::{Value, json};

/// Often `usual`, sometimes any value.
fn often(usual: impl Strategy<Value = Value> + 'static) -> BoxedStrategy<Value> {
    prop_oneof![4 => usual, 1 => json_value()].boxed()
}

fn index() -> BoxedStrategy<Value> {
    often(prop_oneof![4 => (0u64..4).prop_map(Value::from), 1 => any::<u64>().prop_map(Value::from)])
}

fn text() -> BoxedStrategy<Value> {
    often("[a-z {}\":,]{0,12}".prop_map(Value::from))
}

/// One OpenAI chunk's data.
fn openai_chunk() -> BoxedStrategy<String> {
    let call = (index(), often("[a-z0-9_]{0,6}".prop_map(Value::from)), text(), text())
        .prop_map(|(index, id, name, arguments)| {
            json!({"index": index, "id": id, "type": "function", "function": {"name": name, "arguments": arguments}})
        });
    let delta = (text(), text(), proptest::option::of(proptest::collection::vec(call, 0..3))).prop_map(
        |(content, refusal, calls)| json!({"content": content, "refusal": refusal, "tool_calls": calls}),
    );
    let choice = (
        index(),
        often(delta),
        often(proptest::sample::select(vec!["stop", "tool_calls", "length"]).prop_map(Value::from)),
    )
        .prop_map(|(index, delta, finish)| json!({"index": index, "delta": delta, "finish_reason": finish}));
    prop_oneof![
        8 => (proptest::collection::vec(choice, 0..3), proptest::option::of(json_value())).prop_map(|(choices, usage)| {
            json!({"id": "c", "model": "m", "choices": choices, "usage": usage}).to_string()
        }),
        1 => Just("[DONE]".to_owned()),
        1 => json_value().prop_map(|v| v.to_string()),
        1 => "[a-z{\"]{0,8}",
    ]
    .boxed()
}

/// One Anthropic event: its name and data.
fn anthropic_event() -> BoxedStrategy<(String, String)> {
    let kinds = vec![
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
        "ping",
        "error",
        "mystery",
    ];
    let block_kinds = vec!["text", "tool_use", "server_tool_use", "thinking", "mystery"];
    let delta_kinds = vec!["text_delta", "input_json_delta", "thinking_delta", "signature_delta", "mystery"];
    (
        proptest::sample::select(kinds),
        index(),
        often(proptest::sample::select(block_kinds).prop_map(Value::from)),
        often(proptest::sample::select(delta_kinds).prop_map(Value::from)),
        text(),
        often("[a-z0-9_]{0,6}".prop_map(Value::from)),
        proptest::option::of(json_value()),
    )
        .prop_map(|(kind, index, block, delta, text, id, usage)| {
            let data = json!({
                "type": kind, "index": index,
                "message": {"id": id, "model": "m", "usage": usage},
                "content_block": {"type": block, "id": id, "name": text, "text": text},
                "delta": {"type": delta, "text": text, "partial_json": text, "stop_reason": text},
                "usage": usage,
            });
            (kind.to_owned(), data.to_string())
        })
        .boxed()
}

/// Feeds `events` to `parser` until it finishes; the end of the body finishes it otherwise.
fn run(parser: &mut dyn SseParser, events: &[(String, String)]) -> Result<usize, String> {
    for (name, data) in events {
        if let Step::Done(result) = parser.event(name, data) {
            return result.map(|r| r.tool_calls.len()).map_err(|e| e.to_string());
        }
    }
    parser.end_of_body().map(|r| r.tool_calls.len()).map_err(|e| e.to_string())
}

proptest! {
    #[test]
    fn any_openai_stream_ends_in_a_reply_or_a_typed_error(chunks in proptest::collection::vec(openai_chunk(), 0..12)) {
        let events: Vec<(String, String)> = chunks.into_iter().map(|c| (String::new(), c)).collect();
        let _ = run(&mut ChunkParser::new("m"), &events);
    }

    #[test]
    fn any_anthropic_stream_ends_in_a_reply_or_a_typed_error(events in proptest::collection::vec(anthropic_event(), 0..12)) {
        let started = events
            .iter()
            .filter_map(|(_, data)| serde_json::from_str::<Value>(data).ok())
            .filter(|v| v["type"] == "content_block_start" && v["content_block"]["type"] == "tool_use")
            .map(|v| v["index"].as_u64().unwrap_or(0))
            .collect::<std::collections::BTreeSet<_>>()
            .len();
        if let Ok(calls) = run(&mut EventParser::new("m"), &events) {
            prop_assert!(calls <= started, "{calls} calls from {started} tool_use blocks");
        }
    }
}
