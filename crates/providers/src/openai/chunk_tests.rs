//! Tests of [`super`]: the two ways of reading a chunk agree.

use proptest::prelude::*;
use serde_json::{Map, Value, json};

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

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        (-3i64..4).prop_map(Value::from),
        Just(json!(u64::MAX)),
        Just(json!(1.5)),
        "[a-c\"\\\\é\n ]{0,5}".prop_map(Value::from),
        Just(json!([])),
        Just(json!(["x", 1])),
        Just(json!({"x": 1})),
    ]
}

/// An object of the given keys, each present or not.
fn object(fields: Vec<(&'static str, BoxedStrategy<Value>)>) -> BoxedStrategy<Value> {
    let fields: Vec<_> = fields
        .into_iter()
        .map(|(key, value)| proptest::option::of(value).prop_map(move |v| (key, v)))
        .collect();
    fields
        .prop_map(|fields| {
            let mut map = Map::new();
            for (key, value) in fields {
                if let Some(value) = value {
                    map.insert(key.to_owned(), value);
                }
            }
            Value::Object(map)
        })
        .boxed()
}

fn text_or_leaf() -> BoxedStrategy<Value> {
    prop_oneof!["[a-z{}\":]{0,6}".prop_map(Value::from), leaf()].boxed()
}

fn chunk() -> BoxedStrategy<Value> {
    let arguments = prop_oneof![text_or_leaf(), Just(json!({"q": "x", "n": [1, 2]}))].boxed();
    let function = prop_oneof![object(vec![("name", text_or_leaf()), ("arguments", arguments)]), leaf()];
    let call = prop_oneof![
        object(vec![
            ("index", prop_oneof![(0u64..3).prop_map(Value::from), leaf()].boxed()),
            ("id", text_or_leaf()),
            ("type", Just(json!("function")).boxed()),
            ("function", function.boxed()),
        ]),
        leaf(),
    ];
    let calls = prop_oneof![proptest::collection::vec(call, 0..3).prop_map(Value::from), leaf()];
    let delta = prop_oneof![
        object(vec![("content", text_or_leaf()), ("refusal", text_or_leaf()), ("tool_calls", calls.boxed())]),
        leaf(),
    ];
    let choice = prop_oneof![
        object(vec![
            ("index", prop_oneof![(0u64..2).prop_map(Value::from), leaf()].boxed()),
            ("delta", delta.boxed()),
            ("finish_reason", text_or_leaf()),
        ]),
        leaf(),
    ];
    let choices = prop_oneof![proptest::collection::vec(choice, 0..3).prop_map(Value::from), leaf()];
    object(vec![
        ("id", text_or_leaf()),
        ("model", text_or_leaf()),
        ("choices", choices.boxed()),
        ("error", leaf().boxed()),
        ("usage", prop_oneof![Just(json!({"prompt_tokens": 1})), leaf()].boxed()),
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
