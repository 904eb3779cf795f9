//! Tests of [`super`]: a message read without a tree reads as its value does.

use proptest::prelude::*;
use serde_json::{Map, json};

use super::*;

/// The `Value` reading of wire message `raw`.
fn by_value(raw: &str) -> Result<Vec<Message>, String> {
    let value: Value = serde_json::from_str(raw).map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    super::super::anthropic::message(0, &value, &mut out).map(|()| out)
}

#[test]
fn the_messages_clients_send_are_read_without_a_tree_as_their_values_read() {
    let usual = [
        r#"{"role":"user","content":"Find where the configuration is read."}"#,
        r#"{"role":"assistant","content":[{"type":"text","text":"Looking."},{"type":"tool_use","id":"toolu_1","name":"search","input":{"query":"config","n":2}}]}"#,
        r#"{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"src/config.rs: fn load()\n","is_error":false,"cache_control":{"type":"ephemeral"}}]}"#,
        r#"{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_2","content":[{"type":"text","text":"a"},{"type":"image","source":{}}],"is_error":true},{"type":"text","text":"<system-reminder>x</system-reminder>"}]}"#,
        r#"{"role":"user","content":[{"type":"text","text":"<system-reminder>note</system-reminder>"}]}"#,
        r#"{"role":"system","content":"Environment: linux"}"#,
        r#"{"role":"assistant","content":[{"type":"thinking","thinking":"hm","signature":"s"},{"type":"tool_use","id":"t","name":"ls"}]}"#,
        r#"{"role":"user","content":"tab\tand \"quotes\" \u00e9"}"#,
    ];
    for raw in usual {
        let read = read(raw).unwrap_or_else(|| panic!("read without a tree: {raw}"));
        assert_eq!(Ok(read), by_value(raw), "{raw}");
    }
    let calls = read(usual[1]).unwrap();
    assert_eq!(calls[0].tool_calls().next().unwrap().arguments, r#"{"n":2,"query":"config"}"#);
    for other in [
        r#"{"role":"user"}"#,
        r#"{"role":"user","content":null}"#,
        r#"{"role":"user","content":{"type":"text"}}"#,
        r#"{"role":"robot","content":"hi"}"#,
        r#"{"role":7,"content":"hi"}"#,
        r#"{"role":"user","content":["hi"]}"#,
        r#"{"role":"user","role":"assistant","content":"hi"}"#,
        r#"[{"role":"user","content":"hi"}]"#,
    ] {
        assert!(read(other).is_none(), "read as a value: {other}");
    }
}

fn leaf() -> BoxedStrategy<Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        (-2i64..3).prop_map(Value::from),
        Just(json!(1.5)),
        "[a-c\"\\\\é\n <>/]{0,6}".prop_map(Value::from),
        Just(json!("<system-reminder>r</system-reminder>")),
        Just(json!([])),
        Just(json!([{"text": "p"}, "q", {"type": "image"}])),
        Just(json!({"q": "x", "n": [1, 2]})),
    ]
    .boxed()
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

fn one_of(texts: &'static [&'static str]) -> BoxedStrategy<Value> {
    prop_oneof![3 => proptest::sample::select(texts).prop_map(Value::from), 1 => leaf()].boxed()
}

fn block() -> BoxedStrategy<Value> {
    let block = object(vec![
        ("type", one_of(&["text", "tool_use", "tool_result", "image", "thinking"])),
        ("text", leaf()),
        ("tool_use_id", leaf()),
        ("content", leaf()),
        ("is_error", leaf()),
        ("id", leaf()),
        ("name", leaf()),
        ("input", leaf()),
    ]);
    prop_oneof![6 => block, 1 => leaf()].boxed()
}

fn message() -> BoxedStrategy<Value> {
    let content = prop_oneof![leaf(), proptest::collection::vec(block(), 0..4).prop_map(Value::from)].boxed();
    object(vec![("role", one_of(&["user", "assistant", "system", "tool"])), ("content", content)])
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4096))]

    /// Whatever a wire message holds, read without a tree it reads as its value does.
    #[test]
    fn a_message_read_without_a_tree_says_what_its_value_says(message in message()) {
        let raw = message.to_string();
        if let Some(read) = read(&raw) {
            prop_assert_eq!(Ok(read), by_value(&raw));
        }
    }
}
