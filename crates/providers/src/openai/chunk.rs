//! What one Chat Completions stream chunk says, read either way: straight from its text
//! ([`ChunkFields::read`]: no JSON tree, strings borrowed where they hold no escape) or from
//! a parsed [`Value`] ([`ChunkFields::of_value`]). A stream is mostly chunks of one token, so
//! the first way is the usual one; it takes only the shapes the API sends, and anything else
//! (an error chunk, the usage chunk, a field of an unexpected type, a repeated key) is read
//! the second way. Both give the same fields for any chunk the first one takes (a property
//! test holds them to it).

use std::borrow::Cow;

use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::Value;

use crate::fields::{Field, Object};

/// A chunk's fields the stream parser reads.
#[derive(Debug, PartialEq, Default)]
pub(super) struct ChunkFields<'a> {
    pub(super) model: Option<Cow<'a, str>>,
    pub(super) id: Option<Cow<'a, str>>,
    pub(super) choices: Vec<ChoiceFields<'a>>,
}

/// One choice of a chunk.
#[derive(Debug, PartialEq, Default)]
pub(super) struct ChoiceFields<'a> {
    pub(super) index: u64,
    pub(super) content: Option<Cow<'a, str>>,
    pub(super) refusal: Option<Cow<'a, str>>,
    pub(super) calls: Vec<CallFields<'a>>,
    pub(super) finish: Option<Cow<'a, str>>,
}

/// One tool call fragment of a choice.
#[derive(Debug, PartialEq, Default)]
pub(super) struct CallFields<'a> {
    pub(super) index: u64,
    pub(super) id: Option<Cow<'a, str>>,
    pub(super) name: Option<Cow<'a, str>>,
    pub(super) arguments: String,
}

impl<'a> ChunkFields<'a> {
    /// The chunk read from its text, when it has the usual shape (see the module docs): no
    /// error, no usage object.
    pub(super) fn read(data: &'a str) -> Option<Self> {
        let chunk: Object<Chunk<'a>> = serde_json::from_str(data).ok()?;
        let chunk = chunk.0;
        if chunk.error.is_some() || chunk.usage.as_ref().is_some_and(Field::is_object) {
            return None;
        }
        let choices = chunk.choices.unwrap_or_default().into_iter().map(|c| c.0.fields()).collect();
        Some(Self { model: chunk.model.and_then(Field::text), id: chunk.id.and_then(Field::text), choices })
    }

    /// The chunk read from its JSON value.
    pub(super) fn of_value(value: &'a Value) -> Self {
        let text = |v: Option<&'a Value>| v.and_then(Value::as_str).map(Cow::Borrowed);
        let number = |v: Option<&Value>| v.and_then(Value::as_u64).unwrap_or(0);
        let choices = value.get("choices").and_then(Value::as_array);
        let choices = choices.into_iter().flatten().map(|choice| {
            let delta = choice.get("delta").unwrap_or(&Value::Null);
            let calls = delta.get("tool_calls").and_then(Value::as_array).into_iter().flatten();
            ChoiceFields {
                index: number(choice.get("index")),
                content: text(delta.get("content")),
                refusal: text(delta.get("refusal")),
                calls: calls
                    .map(|call| CallFields {
                        index: number(call.get("index")),
                        id: text(call.get("id")),
                        name: text(call.pointer("/function/name")),
                        arguments: super::wire::arguments_text(call.pointer("/function/arguments")),
                    })
                    .collect(),
                finish: text(choice.get("finish_reason")),
            }
        });
        Self { model: text(value.get("model")), id: text(value.get("id")), choices: choices.collect() }
    }
}

#[derive(Deserialize)]
struct Chunk<'a> {
    #[serde(default)]
    error: Option<IgnoredAny>,
    #[serde(borrow, default)]
    usage: Option<Field<'a>>,
    #[serde(borrow, default)]
    model: Option<Field<'a>>,
    #[serde(borrow, default)]
    id: Option<Field<'a>>,
    #[serde(borrow, default)]
    choices: Option<Vec<Object<Choice<'a>>>>,
}

#[derive(Deserialize)]
struct Choice<'a> {
    #[serde(borrow, default)]
    index: Option<Field<'a>>,
    #[serde(borrow, default)]
    delta: Option<Object<Delta<'a>>>,
    #[serde(borrow, default)]
    finish_reason: Option<Field<'a>>,
}

impl<'a> Choice<'a> {
    fn fields(self) -> ChoiceFields<'a> {
        let delta = self.delta.map(|d| d.0).unwrap_or_default();
        ChoiceFields {
            index: self.index.and_then(Field::number).unwrap_or(0),
            content: delta.content.and_then(Field::text),
            refusal: delta.refusal.and_then(Field::text),
            calls: delta.tool_calls.unwrap_or_default().into_iter().map(|c| c.0.fields()).collect(),
            finish: self.finish_reason.and_then(Field::text),
        }
    }
}

#[derive(Deserialize, Default)]
struct Delta<'a> {
    #[serde(borrow, default)]
    content: Option<Field<'a>>,
    #[serde(borrow, default)]
    refusal: Option<Field<'a>>,
    #[serde(borrow, default)]
    tool_calls: Option<Vec<Object<Call<'a>>>>,
}

#[derive(Deserialize)]
struct Call<'a> {
    #[serde(borrow, default)]
    index: Option<Field<'a>>,
    #[serde(borrow, default)]
    id: Option<Field<'a>>,
    #[serde(borrow, default)]
    function: Option<Object<Function<'a>>>,
}

impl<'a> Call<'a> {
    fn fields(self) -> CallFields<'a> {
        let function = self.function.map(|f| f.0);
        let (name, arguments) = function.map_or((None, None), |f| (f.name, f.arguments));
        CallFields {
            index: self.index.and_then(Field::number).unwrap_or(0),
            id: self.id.and_then(Field::text),
            name: name.and_then(Field::text),
            arguments: arguments_of(arguments),
        }
    }
}

#[derive(Deserialize)]
struct Function<'a> {
    #[serde(borrow, default)]
    name: Option<Field<'a>>,
    #[serde(borrow, default)]
    arguments: Option<Field<'a>>,
}

/// A call's arguments from its `arguments` field (`None`: absent or null).
fn arguments_of(field: Option<Field<'_>>) -> String {
    match field {
        None => String::new(),
        Some(Field::Text(text)) => text.into_owned(),
        Some(Field::Json(value)) => super::wire::arguments_text(Some(&value)),
    }
}

#[cfg(test)]
#[path = "chunk_tests.rs"]
mod tests;
