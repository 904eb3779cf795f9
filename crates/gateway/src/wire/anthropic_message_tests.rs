//! Tests of [`super`]: a message read without a tree reads as its value does.

use looprail_loop_core::testkit::strategies::{json_leaf, json_object};
use proptest::prelude::*;
use serde_json::json;

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
    prop_oneof![9 => json_leaf(), 1 => Just(json!("<system-reminder>r</system-reminder>"))].boxed()
}

fn one_of(texts: &'static [&'static str]) -> BoxedStrategy<Value> {
    prop_oneof![3 => proptest::sample::select(texts).prop_map(Value::from), 1 => leaf()].boxed()
}

fn block() -> BoxedStrategy<Value> {
    let block = json_object(vec![
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
    json_object(vec![("role", one_of(&["user", "assistant", "system", "tool"])), ("content", content)])
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
