//! Tests of [`super`]: the two ways of reading an event agree.

use looprail_loop_core::testkit::strategies::{json_leaf, json_object};
use proptest::prelude::*;
use serde_json::{Value, json};

use super::*;

fn agree(name: &str, data: &str) -> bool {
    let value: Value = serde_json::from_str(data).unwrap();
    match EventFields::read(name, data) {
        Some(read) => {
            assert_eq!(read, EventFields::of_value(name, &value), "{data}");
            true
        }
        None => false,
    }
}

#[test]
fn the_events_the_api_sends_are_read_without_a_tree_and_the_rest_are_not() {
    let usual = [
        r#"{"type":"message_start","message":{"model":"claude-sonnet-4-5","id":"msg_1","type":"message","role":"assistant","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":28,"cache_creation_input_tokens":2,"cache_read_input_tokens":3,"cache_creation":{"ephemeral_5m_input_tokens":0},"output_tokens":5,"service_tier":"standard"}}}"#,
        r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
        r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello \"world\"\n"}}"#,
        r#"{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_1","name":"ls","input":{}}}"#,
        r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"path\":"}}"#,
        r#"{"type":"content_block_stop","index":1}"#,
        r#"{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":106,"output_tokens_details":{"thinking_tokens":67}}}"#,
        r#"{"type":"message_stop"}"#,
        r#"{"type":"ping"}"#,
    ];
    for data in usual {
        assert!(agree("x", data), "read without a tree: {data}");
    }
    let start = EventFields::read("x", usual[0]).unwrap();
    assert!(matches!(start.message.id, Some(Cow::Borrowed("msg_1"))));
    let counts = UsageFields { input: Some(28), output: Some(5), cache_read: 3, cache_write: 2 };
    assert_eq!(start.message.usage, Some(counts));
    let stop = EventFields::read("x", usual[6]).unwrap();
    assert_eq!(stop.usage.map(|u| (u.input, u.output)), Some((None, Some(106))));
    assert_eq!(EventFields::read("x", usual[2]).unwrap().delta.text.as_deref(), Some("Hello \"world\"\n"));
    // Fields of other kinds read as a value reads them; the SSE name stands in for no type.
    for odd in [
        r#"{"index":-1,"delta":{"type":"text_delta","text":7}}"#,
        r#"{"type":3,"index":1.0,"content_block":{"type":"tool_use","id":4,"name":null}}"#,
        r#"{"type":"message_start","message":{"model":{"m":1},"usage":{"input_tokens":null,"output_tokens":"2"}}}"#,
        r#"{"type":"message_delta","delta":null,"usage":{"input_tokens":-1,"cache_read_input_tokens":1.5}}"#,
    ] {
        assert!(agree("content_block_delta", odd), "read without a tree: {odd}");
    }
    for other in [
        r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
        r#"{"error":{"type":"overloaded_error"}}"#,
        r#"{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":null}"#,
        r#"{"type":"message_start","message":{"id":"m","usage":null}}"#,
        r#"{"type":"message_start","message":{"id":"m","usage":[1]}}"#,
        r#"{"type":"ping","type":"ping"}"#,
        r#"{"type":"content_block_delta","delta":["text_delta","x"]}"#,
        r#"[{"type":"ping"}]"#,
    ] {
        // The second one is an error only by its SSE name.
        assert!(!agree("error", other), "read as a value: {other}");
    }
    // A null usage is a usage seen, as a value reads it.
    let value: Value = serde_json::from_str(r#"{"message":{"usage":null}}"#).unwrap();
    assert_eq!(EventFields::of_value("message_start", &value).message.usage, Some(UsageFields::default()));
}

fn one_of(texts: &'static [&'static str]) -> BoxedStrategy<Value> {
    prop_oneof![proptest::sample::select(texts).prop_map(Value::from), json_leaf()].boxed()
}

fn text_or_json_leaf() -> BoxedStrategy<Value> {
    prop_oneof!["[a-z{}\":]{0,6}".prop_map(Value::from), json_leaf()].boxed()
}

fn count() -> BoxedStrategy<Value> {
    prop_oneof![(0u64..1000).prop_map(Value::from), json_leaf()].boxed()
}

fn usage() -> BoxedStrategy<Value> {
    let usage = json_object(vec![
        ("input_tokens", count()),
        ("output_tokens", count()),
        ("cache_read_input_tokens", count()),
        ("cache_creation_input_tokens", count()),
        ("cache_creation", Just(json!({"ephemeral_5m_input_tokens": 0})).boxed()),
    ]);
    prop_oneof![usage, json_leaf()].boxed()
}

fn event() -> BoxedStrategy<Value> {
    let kinds = &["message_start", "content_block_start", "content_block_delta", "message_delta", "error"];
    let message =
        json_object(vec![("model", text_or_json_leaf()), ("id", text_or_json_leaf()), ("usage", usage())]);
    let block = json_object(vec![
        ("type", one_of(&["text", "tool_use", "thinking"])),
        ("id", text_or_json_leaf()),
        ("name", text_or_json_leaf()),
        ("text", text_or_json_leaf()),
        ("input", json_leaf().boxed()),
    ]);
    let delta = json_object(vec![
        ("type", one_of(&["text_delta", "input_json_delta"])),
        ("text", text_or_json_leaf()),
        ("partial_json", text_or_json_leaf()),
        ("stop_reason", text_or_json_leaf()),
    ]);
    json_object(vec![
        ("type", one_of(kinds)),
        ("index", count()),
        ("message", prop_oneof![message, json_leaf()].boxed()),
        ("content_block", prop_oneof![block, json_leaf()].boxed()),
        ("delta", prop_oneof![delta, json_leaf()].boxed()),
        ("usage", usage()),
    ])
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4096))]

    /// Whatever an event holds, an event read without a tree reads as its value does, and an
    /// error event is never read that way.
    #[test]
    fn an_event_read_without_a_tree_says_what_its_value_says(
        event in event(),
        name in proptest::sample::select(&["ping", "error"][..]),
    ) {
        let data = event.to_string();
        if let Some(read) = EventFields::read(name, &data) {
            prop_assert_ne!(&*read.kind, "error");
            prop_assert_eq!(read, EventFields::of_value(name, &event));
        }
    }
}
