//! Tests of [`super`]: a message read without a tree reads as its value does.

use looprail_loop_core::testkit::strategies::{json_leaf, json_object};
use proptest::prelude::*;
use serde_json::{Value, json};

use super::*;

/// The `Value` reading of wire message `raw`.
fn by_value(raw: &str) -> Result<Message, String> {
    let value: Value = serde_json::from_str(raw).map_err(|e| e.to_string())?;
    super::super::openai::message(0, &value)
}

#[test]
fn the_messages_clients_send_are_read_without_a_tree_as_their_values_read() {
    let usual = [
        r#"{"role":"system","content":"Be brief."}"#,
        r#"{"role":"developer","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}"#,
        r#"{"role":"user","content":"Find where the configuration is read. \"quoted\"\n"}"#,
        r#"{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"search","arguments":"{\"query\":\"config\"}"}}]}"#,
        r#"{"role":"assistant","content":"Done.","refusal":null}"#,
        r#"{"role":"assistant","content":"","tool_calls":[{"id":"c","function":{"name":"ls","arguments":{"path":"."}}},{"id":"d","function":{"name":"pwd"}}]}"#,
        r#"{"role":"tool","tool_call_id":"call_1","content":"src/config.rs: fn load()\n"}"#,
        r#"{"role":"assistant","tool_calls":[{"id":"e","function":{"name":"ls","arguments":null}}]}"#,
    ];
    for raw in usual {
        let read = read(raw).unwrap_or_else(|| panic!("read without a tree: {raw}"));
        assert_eq!(Ok(read), by_value(raw), "{raw}");
    }
    let calls = read(usual[5]).unwrap();
    let arguments: Vec<&str> = calls.tool_calls().map(|c| c.arguments.as_str()).collect();
    assert_eq!(arguments, [r#"{"path":"."}"#, ""]);
    for other in [
        r#"{"role":"robot","content":"hi"}"#,
        r#"{"content":"hi"}"#,
        r#"{"role":"assistant","tool_calls":[{"function":{"name":"ls"}}]}"#,
        r#"{"role":"assistant","tool_calls":[{"id":"c","function":null}]}"#,
        r#"{"role":"assistant","tool_calls":[{"id":"c","custom":{"name":"x","input":"y"}}]}"#,
        r#"{"role":"assistant","tool_calls":{"id":"c"}}"#,
        r#"{"role":"user","role":"user","content":"hi"}"#,
        r#"[{"role":"user","content":"hi"}]"#,
    ] {
        assert!(read(other).is_none(), "read as a value: {other}");
    }
}

fn text_or_json_leaf() -> BoxedStrategy<Value> {
    prop_oneof![3 => "[a-z_]{1,5}".prop_map(Value::from), 1 => json_leaf()].boxed()
}

fn call() -> BoxedStrategy<Value> {
    // The keys a call is read by are there (of any kind) more often than not.
    let function =
        (text_or_json_leaf(), proptest::option::weighted(0.8, json_leaf())).prop_map(|(name, arguments)| {
            let mut function = json!({ "name": name });
            if let Some(arguments) = arguments {
                function["arguments"] = arguments;
            }
            function
        });
    let function = prop_oneof![5 => function, 1 => json_leaf()];
    let custom = json_object(vec![("name", text_or_json_leaf()), ("input", json_leaf())]);
    let call = (
        text_or_json_leaf(),
        proptest::option::weighted(0.9, function),
        proptest::option::weighted(0.1, custom),
    )
        .prop_map(|(id, function, custom)| {
            let mut call = json!({ "id": id, "type": "function" });
            if let Some(function) = function {
                call["function"] = function;
            }
            if let Some(custom) = custom {
                call["custom"] = custom;
            }
            call
        });
    prop_oneof![6 => call, 1 => json_leaf()].boxed()
}

fn message() -> BoxedStrategy<Value> {
    let roles = &["system", "developer", "user", "assistant", "assistant", "assistant", "tool", "robot"];
    let role = prop_oneof![4 => proptest::sample::select(roles).prop_map(Value::from), 1 => json_leaf()];
    let calls =
        prop_oneof![3 => proptest::collection::vec(call(), 0..3).prop_map(Value::from), 1 => json_leaf()];
    json_object(vec![
        ("role", role.boxed()),
        ("content", json_leaf()),
        ("tool_calls", calls.boxed()),
        ("tool_call_id", text_or_json_leaf()),
    ])
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
