//! One Chat Completions wire message read straight from its text, without a JSON tree, as
//! [`super::anthropic_message`] reads a Messages one: the usual shapes (a role, content as
//! text, parts or null, calls whose `function` is an object with a text name) are read typed,
//! and [`read`] gives way (`None`) to [`super::openai::message`] on a `Value` for anything else,
//! including every message that is an error. For any message it reads it gives what that one
//! gives (a property test holds them to it).

use looprail_loop_core::message::{Message, ToolCall, ToolResult};
use looprail_providers::fields::{Field, Maybe, Object};
use serde::Deserialize;

use super::text_of_field;

/// Wire message `raw` as a looprail message, when it has the usual shape.
pub(crate) fn read(raw: &str) -> Option<Message> {
    let Object(wire) = serde_json::from_str::<Object<WireMessage<'_>>>(raw).ok()?;
    let text = text_of_field(wire.content);
    Some(match wire.role.and_then(Field::text).as_deref() {
        Some("system" | "developer") => Message::system(text),
        Some("user") => Message::user(text),
        Some("assistant") => {
            let calls = wire.tool_calls.unwrap_or_default().into_iter().map(|Object(call)| call.read());
            let calls = calls.collect::<Option<Vec<_>>>()?;
            Message::assistant_with_calls(Some(text).filter(|t| !t.is_empty()), calls)
        }
        Some("tool") => {
            let id = wire.tool_call_id.and_then(Field::text).unwrap_or_default();
            Message::tool_result(ToolResult::ok(&*id, text))
        }
        _ => return None, // an unknown role: the `Value` reading says which
    })
}

/// The fields of a wire message read here; any other is skipped.
#[derive(Deserialize)]
struct WireMessage<'a> {
    #[serde(borrow, default)]
    role: Option<Field<'a>>,
    #[serde(borrow, default)]
    content: Option<Field<'a>>,
    /// Not an array (an object, a text): the read fails, as a `Value` reads no calls there
    /// either way it errs or not.
    #[serde(borrow, default)]
    tool_calls: Option<Vec<Object<Call<'a>>>>,
    #[serde(borrow, default)]
    tool_call_id: Option<Field<'a>>,
}

/// A call: read here only with a text id and a `function` object with a text name (a custom
/// tool's call, a missing or `null` function or name, is the `Value` reading's).
#[derive(Deserialize)]
struct Call<'a> {
    #[serde(borrow, default)]
    id: Option<Field<'a>>,
    #[serde(borrow, default)]
    function: Maybe<Object<Function<'a>>>,
}

#[derive(Deserialize)]
struct Function<'a> {
    #[serde(borrow, default)]
    name: Option<Field<'a>>,
    /// `null` is arguments (`"null"`), a missing key none.
    #[serde(borrow, default)]
    arguments: Maybe<Field<'a>>,
}

impl Call<'_> {
    fn read(self) -> Option<ToolCall> {
        let Maybe::Present(Object(function)) = self.function else { return None };
        let (id, name) = (self.id?.text()?, function.name?.text()?);
        let arguments = match function.arguments {
            Maybe::Absent => String::new(),
            Maybe::Present(Field::Text(text)) => text.into_owned(),
            Maybe::Present(Field::Json(value)) => value.to_string(),
        };
        Some(ToolCall::new(&*id, &*name, arguments))
    }
}

#[cfg(test)]
#[path = "openai_message_tests.rs"]
mod tests;
