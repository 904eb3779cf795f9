//! One Messages wire message read straight from its text, without a JSON tree. A request's new
//! messages are read on every request, and a tree of each (every block a map of its keys)
//! costs more than the message itself; so the usual shapes (a role, content as text or as
//! blocks that are objects) are read typed, and [`read`] gives way (`None`) to
//! [`super::anthropic::message`] on a `Value` for anything else, including every message that
//! is an error. For any message it reads it gives what that one gives (a property test holds
//! them to it).

use std::fmt;

use looprail_loop_core::json_text::json_text;
use looprail_loop_core::message::{Message, ToolCall, ToolResult};
use looprail_providers::fields::{Field, Object};
use serde::Deserialize;
use serde::de::{SeqAccess, Visitor};
use serde_json::Value;

use super::anthropic::user_turn;
use super::text_of_field;

/// Wire message `raw` as looprail messages, when it has the usual shape.
pub(crate) fn read(raw: &str) -> Option<Vec<Message>> {
    fn text_or_empty(field: Option<Field<'_>>) -> std::borrow::Cow<'_, str> {
        field.and_then(Field::text).unwrap_or_default()
    }
    let Object(wire) = serde_json::from_str::<Object<WireMessage<'_>>>(raw).ok()?;
    let blocks = match wire.content? {
        Content::Text(text) => {
            let block = Block {
                kind: Some(Field::Text("text".into())),
                text: Some(Field::Text(text)),
                ..Block::default()
            };
            vec![Object(block)]
        }
        Content::Blocks(blocks) => blocks,
    };
    let is = |block: &Block<'_>, kind: &str| matches!(&block.kind, Some(Field::Text(k)) if k == kind);
    let text = blocks
        .iter()
        .filter(|b| is(&b.0, "text"))
        .filter_map(|b| match &b.0.text {
            Some(Field::Text(text)) => Some(&**text),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n");
    let mut out = Vec::with_capacity(1);
    match wire.role.and_then(Field::text).as_deref() {
        Some("user") => {
            let results = blocks.into_iter().filter(|b| is(&b.0, "tool_result")).map(|Object(block)| {
                let id = text_or_empty(block.tool_use_id);
                let content = text_of_field(block.content);
                if block.is_error.and_then(Field::boolean).unwrap_or(false) {
                    ToolResult::error(&*id, content)
                } else {
                    ToolResult::ok(&*id, content)
                }
            });
            user_turn(results, text, &mut out);
        }
        Some("assistant") => {
            let calls = blocks
                .into_iter()
                .filter(|b| is(&b.0, "tool_use"))
                .map(|Object(b)| {
                    let input = json_text(&b.input.unwrap_or(Value::Null));
                    ToolCall::new(&*text_or_empty(b.id), &*text_or_empty(b.name), input)
                })
                .collect();
            out.push(Message::assistant_with_calls(Some(text).filter(|t| !t.is_empty()), calls));
        }
        Some("system") => out.push(Message::system(text)),
        _ => return None, // an unknown role: the `Value` reading says which
    }
    Some(out)
}

/// The fields of a wire message read here; any other is skipped.
#[derive(Deserialize)]
struct WireMessage<'a> {
    #[serde(borrow, default)]
    role: Option<Field<'a>>,
    #[serde(borrow, default)]
    content: Option<Content<'a>>,
}

/// A message's content: a text, or blocks that are all objects (anything else fails the read).
enum Content<'a> {
    Text(std::borrow::Cow<'a, str>),
    Blocks(Vec<Object<Block<'a>>>),
}

impl<'de: 'a, 'a> Deserialize<'de> for Content<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Either<'a>(std::marker::PhantomData<Content<'a>>);
        impl<'de: 'a, 'a> Visitor<'de> for Either<'a> {
            type Value = Content<'a>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a text or an array of blocks")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Content<'a>, E> {
                Ok(Content::Text(v.into()))
            }
            fn visit_str<E>(self, v: &str) -> Result<Content<'a>, E> {
                Ok(Content::Text(v.to_owned().into()))
            }
            fn visit_string<E>(self, v: String) -> Result<Content<'a>, E> {
                Ok(Content::Text(v.into()))
            }
            fn visit_seq<S: SeqAccess<'de>>(self, mut seq: S) -> Result<Content<'a>, S::Error> {
                let mut blocks = Vec::with_capacity(seq.size_hint().unwrap_or(1));
                while let Some(block) = seq.next_element()? {
                    blocks.push(block);
                }
                Ok(Content::Blocks(blocks))
            }
        }
        deserializer.deserialize_any(Either(std::marker::PhantomData))
    }
}

/// A content block's fields read here (each kind reads its own).
#[derive(Deserialize, Default)]
struct Block<'a> {
    #[serde(borrow, default, rename = "type")]
    kind: Option<Field<'a>>,
    #[serde(borrow, default)]
    text: Option<Field<'a>>,
    #[serde(borrow, default)]
    tool_use_id: Option<Field<'a>>,
    #[serde(borrow, default)]
    content: Option<Field<'a>>,
    #[serde(borrow, default)]
    is_error: Option<Field<'a>>,
    #[serde(borrow, default)]
    id: Option<Field<'a>>,
    #[serde(borrow, default)]
    name: Option<Field<'a>>,
    #[serde(default)]
    input: Option<Value>,
}

#[cfg(test)]
#[path = "anthropic_message_tests.rs"]
mod tests;
