//! The common shape of an OpenAI chat message read straight into a [`Message`], without a
//! JSON tree in between: most of a log's bytes are its messages' strings, and building a tree
//! then copying its strings out cost as much as reading them (only `content` and `arguments`
//! are read as values, their strings moved out). Whatever this does not take exactly as
//! [`from_openai_messages`](super::from_openai_messages) would (a duplicate key, a `null` id or
//! arguments, a field of an unexpected type) it declines, and the tree reads it.
//!
//! A whole `{"messages": [...]}` document of such messages is read in one pass
//! ([`read_document`]); one message that would be declined, or one block that makes the log
//! Anthropic's, declines the document, and the caller reads it message by message.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::Value;

use crate::message::{ContentPart, Message, Role, ToolCall, ToolResult};

#[derive(Deserialize)]
struct TypedMessage<'a> {
    #[serde(borrow)]
    role: Cow<'a, str>,
    /// Absent and `null` both read as no text, as in the tree.
    #[serde(default)]
    content: Option<Value>,
    #[serde(borrow, default)]
    tool_calls: Option<Vec<TypedCall<'a>>>,
    /// `None` for absent and for `null`, which the tree tells apart: the tool role declines it.
    #[serde(borrow, default)]
    tool_call_id: Option<Cow<'a, str>>,
    /// The legacy single call: left to the tree (`null`, which older logs write, reads as none).
    #[serde(borrow, default)]
    function_call: Option<&'a serde_json::value::RawValue>,
}

#[derive(Deserialize)]
struct TypedCall<'a> {
    #[serde(borrow)]
    id: Cow<'a, str>,
    /// `None` for a custom tool's call (`custom`), which the tree reads.
    #[serde(borrow, default)]
    function: Option<TypedFunction<'a>>,
}

#[derive(Deserialize)]
struct TypedFunction<'a> {
    #[serde(borrow)]
    name: Cow<'a, str>,
    /// `None` for absent (no arguments) and for `null` (the text `null`): declined.
    #[serde(default)]
    arguments: Option<Value>,
}

/// A field's value as the tree reads it into text, the string moved out rather than copied.
fn owned_text(value: Value, of_tree: impl Fn(&Value) -> String) -> String {
    match value {
        Value::String(text) => text,
        other => of_tree(&other),
    }
}

/// A log document whose messages all parse in the common shape.
#[derive(Deserialize)]
struct TypedDocument<'a> {
    #[serde(borrow)]
    messages: Vec<TypedMessage<'a>>,
    #[serde(borrow, default)]
    system: Option<&'a serde_json::value::RawValue>,
}

/// The messages of a `{"messages": [...]}` document in one pass, with its Anthropic `system`
/// text first, when every message has the common OpenAI shape; `None` leaves the document to
/// the message-by-message reading (which also tells the formats apart).
pub(super) fn read_document(text: &str) -> Option<Vec<Message>> {
    let document: TypedDocument<'_> = serde_json::from_str(text).ok()?;
    if document.messages.iter().any(|m| m.content.as_ref().is_some_and(has_anthropic_blocks)) {
        return None;
    }
    let mut messages = Vec::with_capacity(document.messages.len() + 1);
    messages.extend(super::system_text(document.system).map(Message::system));
    for message in document.messages {
        messages.push(convert(message)?);
    }
    Some(messages)
}

/// True when `content` holds `tool_use` or `tool_result` blocks (Anthropic's).
fn has_anthropic_blocks(content: &Value) -> bool {
    content.as_array().is_some_and(|blocks| {
        blocks
            .iter()
            .any(|b| matches!(b.get("type").and_then(Value::as_str), Some("tool_use" | "tool_result")))
    })
}

/// The message in `raw`, when it has the common shape; `None` leaves it to the tree.
pub(super) fn read(raw: &str) -> Option<Message> {
    convert(serde_json::from_str(raw).ok()?)
}

/// A parsed message as a [`Message`], when the tree would read it the same way.
fn convert(message: TypedMessage<'_>) -> Option<Message> {
    if message.function_call.is_some() {
        return None;
    }
    let content = message.content.map(|c| owned_text(c, |v| super::text_of(Some(v)))).unwrap_or_default();
    Some(match message.role.as_ref() {
        "system" | "developer" => Message::system(content),
        "user" => Message::user(content),
        "assistant" => {
            let mut calls = Vec::new();
            for call in message.tool_calls.into_iter().flatten() {
                let function = call.function?;
                let arguments = owned_text(function.arguments?, Value::to_string);
                calls.push(ToolCall::new(call.id, function.name, arguments));
            }
            Message::assistant_with_calls(Some(content), calls)
        }
        "tool" | "function" => Message {
            role: Role::Tool,
            content: vec![ContentPart::ToolResult(ToolResult::ok(message.tool_call_id?, content))],
            internal: None,
        },
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The tree's reading of one message.
    fn by_tree(raw: &str) -> Result<Message, String> {
        let value: Value = serde_json::from_str(raw).map_err(|e| e.to_string())?;
        super::super::from_openai_messages(std::slice::from_ref(&value))
            .map(|mut m| m.remove(0))
            .map_err(|e| e.reason)
    }

    fn value() -> impl Strategy<Value = Value> {
        prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i32>().prop_map(Value::from),
            "[a-z\"\\\\\n é]{0,8}".prop_map(Value::String),
        ]
    }

    /// A field: left out, or a value of any type, often the usual one.
    fn field(usual: BoxedStrategy<Value>) -> impl Strategy<Value = Option<Value>> {
        prop_oneof![Just(None), value().prop_map(Some), usual.prop_map(Some)]
    }

    fn text_value() -> BoxedStrategy<Value> {
        prop_oneof![
            "[a-z\"\\\\\n é]{0,12}".prop_map(Value::String),
            proptest::collection::vec(
                "[a-z]{0,4}".prop_map(|t| serde_json::json!({"type": "text", "text": t})),
                0..3
            )
            .prop_map(Value::Array),
        ]
        .boxed()
    }

    fn call() -> impl Strategy<Value = Value> {
        let arguments = prop_oneof![
            "[a-z{}:\"]{0,8}".prop_map(Value::String),
            Just(serde_json::json!({"b": 1, "a": [2]}))
        ];
        (
            field("[a-z0-9]{1,4}".prop_map(Value::String).boxed()),
            field("[a-z]{1,5}".prop_map(Value::String).boxed()),
            field(arguments.boxed()),
        )
            .prop_map(|(id, name, arguments)| {
                let mut function = serde_json::Map::new();
                name.map(|n| function.insert("name".into(), n));
                arguments.map(|a| function.insert("arguments".into(), a));
                let mut call = serde_json::Map::new();
                id.map(|i| call.insert("id".into(), i));
                call.insert("function".into(), Value::Object(function));
                Value::Object(call)
            })
    }

    fn message() -> impl Strategy<Value = String> {
        let role = prop_oneof![
            Just("system"),
            Just("developer"),
            Just("user"),
            Just("assistant"),
            Just("tool"),
            Just("function"),
            Just("wizard")
        ]
        .prop_map(|r| Value::String(r.into()));
        let calls = proptest::collection::vec(call(), 0..3).prop_map(Value::Array).boxed();
        (
            field(role.boxed()),
            field(text_value()),
            field(calls),
            field("[a-z0-9]{1,4}".prop_map(Value::String).boxed()),
            any::<bool>(),
        )
            .prop_map(|(role, content, calls, id, duplicate)| {
                let mut fields = Vec::new();
                for (key, value) in
                    [("role", role), ("content", content), ("tool_calls", calls), ("tool_call_id", id)]
                {
                    if let Some(value) = value {
                        fields.push(format!("{}:{}", Value::from(key), value));
                    }
                }
                if duplicate {
                    fields.push("\"role\":\"user\"".to_owned());
                }
                format!("{{{}}}", fields.join(","))
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 4000, ..ProptestConfig::default() })]

        /// A document read in one pass reads as it does message by message (most generated
        /// documents are declined as a whole: one odd message is enough; the common ones are
        /// taken).
        #[test]
        fn a_document_read_in_one_pass_equals_the_reading_by_message(
            messages in proptest::collection::vec(message(), 0..4),
            common in proptest::collection::vec(
                prop_oneof![
                    Just(r#"{"role":"user","content":"a \"quoted\" word\n"}"#),
                    Just(r#"{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"ls","arguments":"{\"a\":1}"}}]}"#),
                    Just(r#"{"role":"tool","tool_call_id":"c1","name":"ls","content":[{"type":"text","text":"x"}]}"#),
                    Just(r#"{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"f","input":{}}]}"#),
                    Just(r#"{"role":"system","content":"s","extra":{"nested":[1,2]}}"#),
                ],
                0..4,
            ),
            system in prop_oneof![Just(""), Just(r#","system":"Be brief.""#)],
        ) {
            let all: Vec<String> = messages.into_iter().chain(common.into_iter().map(str::to_owned)).collect();
            let document = format!(r#"{{"messages":[{}]{system},"meta":{{"k":[1]}}}}"#, all.join(","));
            if let Some(one_pass) = read_document(&document) {
                let by_message = super::super::read_log_by_message(&document).map(|(_, m)| m);
                prop_assert_eq!(Ok(one_pass), by_message);
            }
        }

        /// Whatever the typed reading takes, it reads as the tree does (about an eighth of
        /// these generated messages are taken; the rest are declined or invalid).
        #[test]
        fn a_message_read_typed_equals_the_tree_reading(raw in message()) {
            if let Some(typed) = read(&raw) {
                prop_assert_eq!(Ok(typed), by_tree(&raw));
            }
        }
    }

    #[test]
    fn the_common_shapes_are_taken_and_the_doubtful_declined() {
        let calls = r#"{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"ls","arguments":"{\"a\":1}"}}]}"#;
        assert_eq!(read(calls), Some(by_tree(calls).unwrap()));
        let tool = r#"{"role":"tool","tool_call_id":"c1","content":"a.txt\nb.txt"}"#;
        assert_eq!(read(tool), Some(by_tree(tool).unwrap()));
        // A null id makes the tree fail where a missing one falls back to `name`: declined.
        assert_eq!(read(r#"{"role":"tool","tool_call_id":null,"name":"c1","content":"x"}"#), None);
        assert_eq!(read(r#"{"role":"user","role":"system","content":"x"}"#), None);
    }
}
