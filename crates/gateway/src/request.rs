//! A chat request read without building its whole JSON tree. Each request carries the whole
//! conversation, but the gateway only needs what is new in it: the body is scanned once into
//! borrowed slices, one per wire message, and a message becomes a looprail [`Message`] only
//! when something asks for it (the conversation's first message, the last few for identity,
//! and the ones the guards have not seen). So the work per request grows with the new
//! messages, not with the history (the one scan aside, which is cheap).

use std::ops::Range;

use looprail_loop_core::message::{Message, Role};
use serde::Deserialize;
use serde_json::Value;

use crate::body_layout::{Layout, body_text};
use crate::wire::responses::{ItemKind, is_model_item, model_item_id};
use crate::wire::{Api, text_of};

/// A tool declaration: OpenAI's `{"function": {"name"}}` or Anthropic's `{"name"}`.
#[derive(Deserialize)]
struct ToolDeclaration {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    function: Option<FunctionName>,
}

#[derive(Deserialize)]
struct FunctionName {
    #[serde(default)]
    name: Option<String>,
}

/// A request's conversation, its wire messages converted on demand.
pub struct Request<'a> {
    api: Api,
    wire: Vec<&'a str>,
    converted: Vec<Option<Vec<Message>>>,
    /// Items an `item_reference` of this request may name ([`Request::know_items`]).
    known: Vec<Value>,
    system: Option<&'a str>,
    tools: Option<&'a str>,
    /// The model the request names (empty when it names none).
    pub model: String,
    /// Whether the client asked for a stream.
    pub stream: bool,
    /// Whether an OpenAI client asked for the usage chunk at the end of a stream.
    pub include_usage: bool,
}

impl std::fmt::Debug for Request<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Request").field("messages", &self.wire.len()).field("model", &self.model).finish()
    }
}

impl<'a> Request<'a> {
    /// Scans a request body; the error says what is wrong with it.
    pub fn parse(api: Api, body: &'a [u8]) -> Result<Self, String> {
        let text = body_text(body)?;
        let layout = Layout::scan(api, text)?;
        Ok(Self::with_layout(api, text, &layout))
    }

    /// The request whose body `text` has `layout` (found by [`Layout::scan`] or kept).
    pub(crate) fn with_layout(api: Api, text: &'a str, layout: &Layout) -> Self {
        let part = |range: &Option<Range<usize>>| range.clone().map(|r| &text[r]);
        let value = |range: &Option<Range<usize>>| {
            part(range).and_then(|raw| serde_json::from_str::<Value>(raw).ok())
        };
        let wire: Vec<&'a str> = layout.messages.iter().map(|r| &text[r.clone()]).collect();
        Self {
            api,
            converted: vec![None; wire.len()],
            known: Vec::new(),
            wire,
            system: part(&layout.system),
            tools: part(&layout.tools),
            model: value(&layout.model).as_ref().and_then(Value::as_str).unwrap_or_default().to_owned(),
            stream: value(&layout.stream).as_ref().and_then(Value::as_bool).unwrap_or(false),
            include_usage: value(&layout.stream_options)
                .as_ref()
                .and_then(|o| o.get("include_usage"))
                .and_then(Value::as_bool)
                .unwrap_or(false),
        }
    }

    /// How many wire messages the request carries.
    pub fn len(&self) -> usize {
        self.wire.len()
    }

    /// True when the request carries no message.
    pub fn is_empty(&self) -> bool {
        self.wire.is_empty()
    }

    /// Every wire message as a JSON value (`None` if one is not JSON after all).
    pub fn items(&self) -> Option<Vec<Value>> {
        self.wire.iter().map(|raw| serde_json::from_str(raw).ok()).collect()
    }

    /// The size in bytes of wire message `i` as the client sent it.
    pub fn raw_len(&self, i: usize) -> usize {
        self.wire[i].len()
    }

    /// Wire message `i` as the client sent it.
    pub fn raw(&self, i: usize) -> &'a str {
        self.wire[i]
    }

    /// The tools' declarations as the client sent them (empty when it sent none).
    pub fn tools_raw(&self) -> &'a str {
        self.tools.unwrap_or_default()
    }

    /// The system prompt given apart from the messages as the client sent it (empty when it
    /// sent none).
    pub fn system_raw(&self) -> &'a str {
        self.system.unwrap_or_default()
    }

    /// The API the request speaks.
    pub fn api(&self) -> Api {
        self.api
    }

    /// Whether wire message `i` has been read into looprail messages.
    #[cfg(test)]
    pub(crate) fn is_converted(&self, i: usize) -> bool {
        self.converted[i].is_some()
    }

    /// Names of the tools the request declares.
    pub fn tool_names(&self) -> Vec<String> {
        let Some(tools) = self.tools else { return Vec::new() };
        let declared: Vec<ToolDeclaration> = serde_json::from_str(tools).unwrap_or_default();
        declared.into_iter().filter_map(|t| t.function.and_then(|f| f.name).or(t.name)).collect()
    }

    /// The system prompt given apart from the messages (Anthropic's `system`, the Responses
    /// API's `instructions`), as text.
    pub fn system_text(&self) -> String {
        let Some(system) = self.system else { return String::new() };
        // The usual one, a text, read as one (no tree).
        if let Ok(text) = serde_json::from_str::<String>(system) {
            return text;
        }
        serde_json::from_str::<Value>(system).map_or_else(|_| String::new(), |s| text_of(&s))
    }

    /// Items the gateway relayed (a Responses reply's output items) that this request's
    /// `item_reference`s may name: such a reference reads as the item it names. A reference to
    /// an item not given here reads as nothing, as the API's own content is not in the request.
    pub fn know_items(&mut self, items: &[Value]) {
        if self.api == Api::Responses {
            self.known = items.to_vec();
        }
    }

    /// Wire message `i` as looprail messages (an Anthropic user turn may hold several tool
    /// results and a text).
    pub fn message(&mut self, i: usize) -> Result<&[Message], String> {
        if self.converted[i].is_none() {
            // A message of the usual shape is read without a tree.
            let raw = self.wire[i];
            let typed = match self.api {
                Api::Anthropic => crate::wire::anthropic_message::read(raw),
                Api::OpenAi => crate::wire::openai_message::read(raw).map(|m| vec![m]),
                Api::Responses => None,
            };
            let messages = match typed {
                Some(messages) => messages,
                None => {
                    let value: Value =
                        serde_json::from_str(raw).map_err(|e| format!("messages[{i}]: {e}"))?;
                    let value = self.referenced(&value).cloned().unwrap_or(value);
                    self.api.message(i, &value)?
                }
            };
            self.converted[i] = Some(messages);
        }
        Ok(self.converted[i].as_deref().unwrap_or_default())
    }

    /// The known item an `item_reference` names.
    fn referenced(&self, item: &Value) -> Option<&Value> {
        if self.known.is_empty() || item["type"] != "item_reference" {
            return None;
        }
        let id = item["id"].as_str()?;
        self.known.iter().find(|known| known["id"] == id)
    }

    /// Wire message `i`'s fingerprint for identity: a Responses output item that carries its
    /// id (or an `item_reference` to one) by that id, any other by its normalised content.
    pub fn identity_hash(&mut self, i: usize) -> Result<u64, String> {
        if self.api == Api::Responses
            && let Some(id) = output_item_id(self.wire[i])
        {
            return Ok(crate::identity::id_hash(&id));
        }
        Ok(crate::identity::message_hash(self.message(i)?))
    }

    /// Whether a conversation's verbatim part may start at wire message `i`: at a reply of the
    /// model, whole, so that no tool result loses its call. On Chat Completions and Messages
    /// that is an assistant message; on Responses, the first item of a reply (a reasoning item
    /// must stay with the call or message after it, and a reply's calls are items of their
    /// own).
    pub fn starts_reply(&mut self, i: usize) -> Result<bool, String> {
        if self.api != Api::Responses {
            return Ok(self.message(i)?.first().is_some_and(|m| m.role == Role::Assistant));
        }
        let model_item =
            |item: &str| serde_json::from_str::<ItemKind<'_>>(item).is_ok_and(|kind| is_model_item(&kind));
        Ok(model_item(self.wire[i]) && (i == 0 || !model_item(self.wire[i - 1])))
    }

    /// Wire messages `range` as looprail messages, with the index in them where each wire
    /// message starts. The conversions are handed over, not copied (a tool's output can be
    /// large): a message asked for again is converted again.
    pub fn messages(&mut self, range: Range<usize>) -> Result<(Vec<Message>, Vec<usize>), String> {
        let mut out = Vec::new();
        let mut starts = Vec::with_capacity(range.len());
        let responses = self.api == Api::Responses;
        for i in range {
            starts.push(out.len());
            self.message(i)?;
            let next = self.converted[i].take().unwrap_or_default();
            if responses {
                // A reply's calls are items of their own: they are one assistant turn again.
                looprail_loop_core::transcript::responses::push_item(&mut out, next);
            } else {
                out.extend(next);
            }
        }
        Ok((out, starts))
    }
}

/// The id a Responses item is known by ([`model_item_id`]), read from its raw JSON.
fn output_item_id(item: &str) -> Option<String> {
    #[derive(Deserialize)]
    struct Identified<'a> {
        #[serde(rename = "type", borrow, default)]
        kind: Option<&'a str>,
        #[serde(borrow, default)]
        role: Option<&'a str>,
        #[serde(default)]
        id: Option<String>,
    }
    let item: Identified<'_> = serde_json::from_str(item).ok()?;
    model_item_id(&ItemKind { kind: item.kind, role: item.role }, item.id.as_deref()).map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_what_is_asked_for_is_converted_and_bad_bodies_say_why() {
        let body = br#"{"model": "m", "stream": true, "stream_options": {"include_usage": true},
            "tools": [{"type": "function", "function": {"name": "search"}}, {"name": "read"}],
            "messages": [{"role": "user", "content": "hi"}, {"role": "wizard"}], "extra": [1, 2]}"#;
        let mut request = Request::parse(Api::OpenAi, body).unwrap();
        assert_eq!((request.len(), request.stream, request.include_usage), (2, true, true));
        assert_eq!(request.tool_names(), ["search", "read"]);
        assert_eq!(request.message(0).unwrap()[0].joined_text().as_deref(), Some("hi"));
        assert!(request.message(1).unwrap_err().contains("unknown role"), "converted only when asked for");
        let err = Request::parse(Api::OpenAi, b"{not json").unwrap_err();
        assert!(err.contains("not a JSON object"), "{err}");
        let err = Request::parse(Api::OpenAi, br#"{"messages": 3}"#).unwrap_err();
        assert!(err.contains("`messages` must be an array"), "{err}");
        let anthropic = br#"{"system": [{"type": "text", "text": "Be brief."}], "messages": [{"role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}, {"type": "text", "text": "go on"}]}]}"#;
        let mut request = Request::parse(Api::Anthropic, anthropic).unwrap();
        assert_eq!(request.system_text(), "Be brief.");
        let (messages, starts) = request.messages(0..1).unwrap();
        assert_eq!((messages.len(), starts), (2, vec![0]), "a tool result and the user's text");
        assert_eq!(request.message(0).unwrap(), &messages[..], "handed over, then converted again");
        assert_eq!(request.messages(0..1).unwrap().0, messages);
    }
}
