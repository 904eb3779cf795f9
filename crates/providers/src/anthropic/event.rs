//! What one Messages stream event says, read either way: straight from its text
//! ([`EventFields::read`]: no JSON tree, strings borrowed where they hold no escape) or from a
//! parsed [`Value`] ([`EventFields::of_value`]). A stream is mostly `content_block_delta`
//! events of one token, and `message_start` is on the first byte's path, so the first way is
//! the usual one; it takes only the shapes the API sends, and anything else (an error event, a
//! `null` usage, a field of an unexpected kind, a repeated key) is read the second way. Both give
//! the same fields for any event the first one takes (a property test holds them to it).

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::Value;

use crate::fields::{Field, Maybe, Object};

/// An event's fields the stream parser reads, whatever its type: each type reads its own.
#[derive(Debug, PartialEq)]
pub(super) struct EventFields<'a> {
    /// The `type` field, or the SSE event name when it has none.
    pub(super) kind: Cow<'a, str>,
    /// The content block's index.
    pub(super) index: usize,
    /// `message_start`'s message.
    pub(super) message: MessageFields<'a>,
    /// `content_block_start`'s block.
    pub(super) block: BlockFields<'a>,
    /// `content_block_delta`'s or `message_delta`'s delta.
    pub(super) delta: DeltaFields<'a>,
    /// `message_delta`'s usage, when the key is there.
    pub(super) usage: Option<UsageFields>,
}

/// A `message_start` event's message.
#[derive(Debug, PartialEq, Default)]
pub(super) struct MessageFields<'a> {
    pub(super) model: Option<Cow<'a, str>>,
    pub(super) id: Option<Cow<'a, str>>,
    /// Its usage, when the key is there (`null` included).
    pub(super) usage: Option<UsageFields>,
}

/// A content block as it starts.
#[derive(Debug, PartialEq, Default)]
pub(super) struct BlockFields<'a> {
    pub(super) kind: Option<Cow<'a, str>>,
    pub(super) id: Option<Cow<'a, str>>,
    pub(super) name: Option<Cow<'a, str>>,
    pub(super) text: Option<Cow<'a, str>>,
}

/// A delta: a block's text or input fragment, or the message's stop reason.
#[derive(Debug, PartialEq, Default)]
pub(super) struct DeltaFields<'a> {
    pub(super) kind: Option<Cow<'a, str>>,
    pub(super) text: Option<Cow<'a, str>>,
    pub(super) partial_json: Option<Cow<'a, str>>,
    pub(super) stop_reason: Option<Cow<'a, str>>,
}

/// A usage object's counts. Input and output are `Some` when their key is there (a count that
/// is no number reads 0): `message_delta` repeats cumulative counts, and a missing one keeps
/// what was known.
#[derive(Debug, PartialEq, Default, Clone, Copy)]
pub(super) struct UsageFields {
    pub(super) input: Option<u64>,
    pub(super) output: Option<u64>,
    pub(super) cache_read: u64,
    pub(super) cache_write: u64,
}

impl UsageFields {
    /// The counts of a usage value (none when it is no object).
    pub(super) fn of_value(usage: &Value) -> Self {
        let n = |key: &str| usage.get(key).and_then(Value::as_u64).unwrap_or(0);
        let present = |key: &str| usage.get(key).map(|_| n(key));
        Self {
            input: present("input_tokens"),
            output: present("output_tokens"),
            cache_read: n("cache_read_input_tokens"),
            cache_write: n("cache_creation_input_tokens"),
        }
    }
}

impl<'a> EventFields<'a> {
    /// The event read from its text, when it has the usual shape (see the module docs); never
    /// an error event.
    pub(super) fn read(name: &'a str, data: &'a str) -> Option<Self> {
        let event: Object<Event<'a>> = serde_json::from_str(data).ok()?;
        let event = event.0;
        let kind = event.kind.and_then(Field::text).unwrap_or(Cow::Borrowed(name));
        if kind == "error" {
            return None;
        }
        let index = event.index.and_then(Field::number).unwrap_or(0) as usize;
        let message = match event.message {
            Some(Object(message)) => MessageFields {
                model: message.model.and_then(Field::text),
                id: message.id.and_then(Field::text),
                usage: message.usage.counts(),
            },
            None => MessageFields::default(),
        };
        let block = event.content_block.map(|b| b.0).unwrap_or_default();
        let delta = event.delta.map(|d| d.0).unwrap_or_default();
        Some(Self {
            kind,
            index,
            message,
            block: BlockFields {
                kind: block.kind.and_then(Field::text),
                id: block.id.and_then(Field::text),
                name: block.name.and_then(Field::text),
                text: block.text.and_then(Field::text),
            },
            delta: DeltaFields {
                kind: delta.kind.and_then(Field::text),
                text: delta.text.and_then(Field::text),
                partial_json: delta.partial_json.and_then(Field::text),
                stop_reason: delta.stop_reason.and_then(Field::text),
            },
            usage: event.usage.counts(),
        })
    }

    /// The event read from its JSON value.
    pub(super) fn of_value(name: &'a str, value: &'a Value) -> Self {
        let text = |v: Option<&'a Value>| v.and_then(Value::as_str).map(Cow::Borrowed);
        let message = value.get("message");
        let block = value.get("content_block");
        let delta = value.get("delta");
        Self {
            kind: text(value.get("type")).unwrap_or(Cow::Borrowed(name)),
            index: value.get("index").and_then(Value::as_u64).unwrap_or(0) as usize,
            message: MessageFields {
                model: text(message.and_then(|m| m.get("model"))),
                id: text(message.and_then(|m| m.get("id"))),
                usage: message.and_then(|m| m.get("usage")).map(UsageFields::of_value),
            },
            block: BlockFields {
                kind: text(block.and_then(|b| b.get("type"))),
                id: text(block.and_then(|b| b.get("id"))),
                name: text(block.and_then(|b| b.get("name"))),
                text: text(block.and_then(|b| b.get("text"))),
            },
            delta: DeltaFields {
                kind: text(delta.and_then(|d| d.get("type"))),
                text: text(delta.and_then(|d| d.get("text"))),
                partial_json: text(delta.and_then(|d| d.get("partial_json"))),
                stop_reason: text(delta.and_then(|d| d.get("stop_reason"))),
            },
            usage: value.get("usage").map(UsageFields::of_value),
        }
    }
}

#[derive(Deserialize)]
struct Event<'a> {
    #[serde(borrow, default, rename = "type")]
    kind: Option<Field<'a>>,
    #[serde(borrow, default)]
    index: Option<Field<'a>>,
    #[serde(borrow, default)]
    message: Option<Object<Message<'a>>>,
    #[serde(borrow, default)]
    content_block: Option<Object<Block<'a>>>,
    #[serde(borrow, default)]
    delta: Option<Object<Delta<'a>>>,
    #[serde(borrow, default)]
    usage: Maybe<Object<Usage<'a>>>,
}

#[derive(Deserialize)]
struct Message<'a> {
    #[serde(borrow, default)]
    model: Option<Field<'a>>,
    #[serde(borrow, default)]
    id: Option<Field<'a>>,
    #[serde(borrow, default)]
    usage: Maybe<Object<Usage<'a>>>,
}

#[derive(Deserialize, Default)]
struct Block<'a> {
    #[serde(borrow, default, rename = "type")]
    kind: Option<Field<'a>>,
    #[serde(borrow, default)]
    id: Option<Field<'a>>,
    #[serde(borrow, default)]
    name: Option<Field<'a>>,
    #[serde(borrow, default)]
    text: Option<Field<'a>>,
}

#[derive(Deserialize, Default)]
struct Delta<'a> {
    #[serde(borrow, default, rename = "type")]
    kind: Option<Field<'a>>,
    #[serde(borrow, default)]
    text: Option<Field<'a>>,
    #[serde(borrow, default)]
    partial_json: Option<Field<'a>>,
    #[serde(borrow, default)]
    stop_reason: Option<Field<'a>>,
}

/// A usage object of the usual shape (counts; anything else, as `cache_creation`'s breakdown,
/// skipped).
#[derive(Deserialize)]
struct Usage<'a> {
    #[serde(borrow, default)]
    input_tokens: Maybe<Field<'a>>,
    #[serde(borrow, default)]
    output_tokens: Maybe<Field<'a>>,
    #[serde(borrow, default)]
    cache_read_input_tokens: Option<Field<'a>>,
    #[serde(borrow, default)]
    cache_creation_input_tokens: Option<Field<'a>>,
}

impl Maybe<Object<Usage<'_>>> {
    /// The usage's counts when the key is there (a `null` usage already failed the object and
    /// with it the typed read).
    fn counts(self) -> Option<UsageFields> {
        let count = |field: Option<Field<'_>>| field.and_then(Field::number).unwrap_or(0);
        let present = |field: Maybe<Field<'_>>| match field {
            Maybe::Absent => None,
            Maybe::Present(field) => Some(field.number().unwrap_or(0)),
        };
        match self {
            Maybe::Absent => None,
            Maybe::Present(Object(usage)) => Some(UsageFields {
                input: present(usage.input_tokens),
                output: present(usage.output_tokens),
                cache_read: count(usage.cache_read_input_tokens),
                cache_write: count(usage.cache_creation_input_tokens),
            }),
        }
    }
}

#[cfg(test)]
#[path = "event_tests.rs"]
mod tests;
