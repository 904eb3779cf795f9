//! Tests of [`super`]: the two ways of reading a chunk agree.

use looprail_loop_core::testkit::strategies::{json_leaf, json_object};
use proptest::prelude::*;
use serde_json::{Value, json};

use super::*;

#[test]
fn the_chunks_the_api_sends_are_read_without_a_tree_and_the_rest_are_not() {
    let usual = [
        r#"{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","system_fingerprint":"fp","choices":[{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":null}]}"#,
        r#"{"id":"chatcmpl-1","choices":[{"index":0,"delta":{"content":"Hello \"world\"\n"},"finish_reason":null}],"usage":null}"#,
        r#"{"id":"chatcmpl-1","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"ls","arguments":""}}]}}]}"#,
        r#"{"id":"chatcmpl-1","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"path\":"}}]}}]}"#,
        r#"{"id":"chatcmpl-1","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#,
    ];
    for data in usual {
        let read = ChunkFields::read(data).unwrap_or_else(|| panic!("read without a tree: {data}"));
        let value: Value = serde_json::from_str(data).unwrap();
        assert_eq!(read, ChunkFields::of_value(&value));
    }
    // Fields of other types read as a value reads them.
    for odd in [
        r#"{"choices":[{"index":-1,"delta":{"content":"x"}},{"index":1.0,"delta":{"content":7}}]}"#,
        r#"{"model":{"name":"m"},"choices":[{"delta":{"tool_calls":[{"index":-2,"id":3,"function":{"name":null,"arguments":{"q":"x"}}}]}}]}"#,
        r#"{"choices":[{"delta":{"tool_calls":[{"function":{"name":"ls","arguments":null}},{"function":{"arguments":[1,true]}}]}}]}"#,
    ] {
        let value: Value = serde_json::from_str(odd).unwrap();
        assert_eq!(
            ChunkFields::read(odd).expect("read without a tree"),
            ChunkFields::of_value(&value),
            "{odd}"
        );
    }
    let read = ChunkFields::read(usual[1]).unwrap();
    assert_eq!(read.choices[0].content.as_deref(), Some("Hello \"world\"\n"));
    assert!(matches!(ChunkFields::read(usual[0]).unwrap().id, Some(Cow::Borrowed("chatcmpl-1"))));
    for other in [
        r#"{"error":{"message":"overloaded"}}"#,
        r#"{"id":"c","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":1}}"#,
        r#"{"id":"c","id":"d","choices":[]}"#,
        r#"{"choices":[{"delta":["content"]}]}"#,
        r#"{"choices":[{"delta":{"tool_calls":[{"function":["ls","{}"]}]}}]}"#,
        r#"[{"id":"c"}]"#,
    ] {
        assert!(ChunkFields::read(other).is_none(), "read as a value: {other}");
    }
}

fn text_or_json_leaf() -> BoxedStrategy<Value> {
    prop_oneof!["[a-z{}\":]{0,6}".prop_map(Value::from), json_leaf()].boxed()
}

fn chunk() -> BoxedStrategy<Value> {
    let arguments = prop_oneof![text_or_json_leaf(), Just(json!({"q": "x", "n": [1, 2]}))].boxed();
    let function =
        prop_oneof![json_object(vec![("name", text_or_json_leaf()), ("arguments", arguments)]), json_leaf()];
    let call = prop_oneof![
        json_object(vec![
            ("index", prop_oneof![(0u64..3).prop_map(Value::from), json_leaf()].boxed()),
            ("id", text_or_json_leaf()),
            ("type", Just(json!("function")).boxed()),
            ("function", function.boxed()),
        ]),
        json_leaf(),
    ];
    let calls = prop_oneof![proptest::collection::vec(call, 0..3).prop_map(Value::from), json_leaf()];
    let delta = prop_oneof![
        json_object(vec![
            ("content", text_or_json_leaf()),
            ("refusal", text_or_json_leaf()),
            ("tool_calls", calls.boxed())
        ]),
        json_leaf(),
    ];
    let choice = prop_oneof![
        json_object(vec![
            ("index", prop_oneof![(0u64..2).prop_map(Value::from), json_leaf()].boxed()),
            ("delta", delta.boxed()),
            ("finish_reason", text_or_json_leaf()),
        ]),
        json_leaf(),
    ];
    let choices = prop_oneof![proptest::collection::vec(choice, 0..3).prop_map(Value::from), json_leaf()];
    json_object(vec![
        ("id", text_or_json_leaf()),
        ("model", text_or_json_leaf()),
        ("choices", choices.boxed()),
        ("error", json_leaf().boxed()),
        ("usage", prop_oneof![Just(json!({"prompt_tokens": 1})), json_leaf()].boxed()),
    ])
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4096))]

    /// Whatever a chunk holds, a chunk read without a tree reads as its value does.
    #[test]
    fn a_chunk_read_without_a_tree_says_what_its_value_says(chunk in chunk()) {
        let data = chunk.to_string();
        if let Some(read) = ChunkFields::read(&data) {
            prop_assert_eq!(read, ChunkFields::of_value(&chunk));
        }
    }
}
