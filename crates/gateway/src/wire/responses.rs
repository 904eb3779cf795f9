//! OpenAI Responses (`POST /v1/responses`: Codex, the OpenAI Agents SDK). The conversation is
//! `input`, a list of items (`message`; `function_call`, `custom_tool_call` and
//! `local_shell_call` with their outputs by `call_id`; `reasoning` and others the guards do not
//! read), after `instructions`. A reply's
//! `output` is items too. The gateway reads whole conversations: a request continuing a
//! response by its id is made whole before it gets here ([`crate::response_chain`]).

use looprail_loop_core::message::{Message, ToolCall};
use looprail_loop_core::transcript::responses::{item_messages, push_item};
use serde_json::{Value, json};

pub(super) fn messages(body: &Value) -> Result<Vec<Message>, String> {
    let mut out: Vec<Message> =
        body.get("instructions").and_then(Value::as_str).map(Message::system).into_iter().collect();
    let items = body["input"].as_array().ok_or("`input` must be a list of items")?;
    for (i, item) in items.iter().enumerate() {
        push_item(&mut out, message(i, item)?);
    }
    Ok(out)
}

/// One input item (`input[i]`) as looprail messages: none for items the guards do not read.
pub(super) fn message(i: usize, item: &Value) -> Result<Vec<Message>, String> {
    item_messages(item).map_err(|e| format!("input[{i}]: {e}"))
}

/// Whether an input item is the model's own (an assistant message, a reasoning item, a call of
/// any kind, an item reference) rather than the client's (a user, system or developer message,
/// a call's output). Read from the item's `type` and `role` alone.
pub(crate) fn is_model_item(item: &ItemKind<'_>) -> bool {
    match item.kind.unwrap_or(if item.role.is_some() { "message" } else { "" }) {
        "message" => item.role == Some("assistant"),
        "" | "mcp_approval_response" => false,
        kind => !kind.ends_with("_output"),
    }
}

/// The id a model item is known by for identity, when it carries one (an item reference's is
/// the id of the item it names): the client sends the item back whole or as a reference.
pub(crate) fn model_item_id<'a>(item: &ItemKind<'_>, id: Option<&'a str>) -> Option<&'a str> {
    id.filter(|id| !id.is_empty() && is_model_item(item))
}

/// The two fields of an input item that say whose it is.
#[derive(Debug, Default, serde::Deserialize)]
pub(crate) struct ItemKind<'a> {
    #[serde(rename = "type", borrow, default)]
    pub(crate) kind: Option<&'a str>,
    #[serde(borrow, default)]
    pub(crate) role: Option<&'a str>,
}

/// A user message item holding `text` (an instruction, a summary).
pub(crate) fn user_text_item(text: &str) -> Value {
    json!({ "type": "message", "role": "user", "content": [{ "type": "input_text", "text": text }] })
}

pub(super) fn add_instruction(body: &mut Value, text: &str) {
    if let Some(list) = body["input"].as_array_mut() {
        list.push(user_text_item(text));
    }
}

pub(super) fn reply_message(response: &Value) -> Option<Message> {
    let output = response.get("output")?.as_array()?;
    // The reply is one assistant message: its items' texts and calls, in their order.
    let items: Vec<Vec<Message>> =
        output.iter().enumerate().map(|(i, item)| message(i, item)).collect::<Result<_, _>>().ok()?;
    let mut all = items.into_iter().flatten();
    let mut reply = all.next().unwrap_or_else(|| Message::assistant(String::new()));
    reply.role = looprail_loop_core::message::Role::Assistant;
    for more in all {
        reply.content.extend(more.content);
    }
    Some(reply)
}

/// One event of a Responses stream.
fn event(out: &mut String, sequence: &mut u64, kind: &str, mut body: Value) {
    body["type"] = json!(kind);
    body["sequence_number"] = json!(*sequence);
    *sequence += 1;
    out.push_str(&format!("event: {kind}\ndata: {body}\n\n"));
}

/// A complete response as the event stream the Responses API sends.
pub(super) fn to_stream(response: &Value) -> String {
    let mut out = String::new();
    let mut sequence = 0;
    let mut started = response.clone();
    started["status"] = json!("in_progress");
    started["output"] = json!([]);
    event(&mut out, &mut sequence, "response.created", json!({ "response": started }));
    event(&mut out, &mut sequence, "response.in_progress", json!({ "response": started }));
    for (index, item) in response["output"].as_array().into_iter().flatten().enumerate() {
        let id = item["id"].clone();
        let mut opening = item.clone();
        opening["status"] = json!("in_progress");
        match item["type"].as_str() {
            Some("message") => opening["content"] = json!([]),
            Some("function_call") => opening["arguments"] = json!(""),
            _ => {}
        }
        event(
            &mut out,
            &mut sequence,
            "response.output_item.added",
            json!({ "output_index": index, "item": opening }),
        );
        if item["type"] == "message" {
            for (part_index, part) in item["content"].as_array().into_iter().flatten().enumerate() {
                let at = json!({ "item_id": id, "output_index": index, "content_index": part_index });
                let mut empty = part.clone();
                empty["text"] = json!("");
                let with = |mut at: Value, key: &str, value: Value| {
                    at[key] = value;
                    at
                };
                event(
                    &mut out,
                    &mut sequence,
                    "response.content_part.added",
                    with(at.clone(), "part", empty),
                );
                if part["type"] == "output_text" {
                    let text = part["text"].clone();
                    event(
                        &mut out,
                        &mut sequence,
                        "response.output_text.delta",
                        with(at.clone(), "delta", text.clone()),
                    );
                    event(
                        &mut out,
                        &mut sequence,
                        "response.output_text.done",
                        with(at.clone(), "text", text),
                    );
                }
                event(&mut out, &mut sequence, "response.content_part.done", with(at, "part", part.clone()));
            }
        }
        if item["type"] == "function_call" {
            let arguments = item["arguments"].clone();
            let at = json!({ "item_id": id, "output_index": index });
            let mut delta = at.clone();
            delta["delta"] = arguments.clone();
            event(&mut out, &mut sequence, "response.function_call_arguments.delta", delta);
            let mut done = at;
            done["arguments"] = arguments;
            event(&mut out, &mut sequence, "response.function_call_arguments.done", done);
        }
        event(
            &mut out,
            &mut sequence,
            "response.output_item.done",
            json!({ "output_index": index, "item": item }),
        );
    }
    event(&mut out, &mut sequence, "response.completed", json!({ "response": response }));
    out
}

/// Reads a Responses event stream for the reply it carries: the `response.completed` (or
/// `response.incomplete`) event holds the whole response; a `response.failed` or `error` event
/// ends it as an error.
pub struct StreamParser {
    model: String,
    /// The whole response the terminal event carried, once read.
    response: Option<Value>,
}

impl StreamParser {
    /// A parser for a stream from `model`.
    pub fn new(model: &str) -> Self {
        Self { model: model.to_owned(), response: None }
    }

    /// The whole response the stream's terminal event carried (its output items are what a
    /// client continuing it by id had), once the stream is over.
    pub fn take_response(&mut self) -> Option<Value> {
        self.response.take()
    }
}

impl looprail_providers::sse::SseParser for StreamParser {
    fn event(&mut self, _name: &str, data: &str) -> looprail_providers::sse::Step {
        use looprail_loop_core::provider::{ProviderError, ProviderErrorKind};
        use looprail_providers::sse::Step;
        let Ok(mut event) = serde_json::from_str::<Value>(data) else { return Step::Continue(Vec::new()) };
        match event["type"].as_str().unwrap_or_default() {
            "response.completed" | "response.incomplete" => {
                let reply = model_response(&event["response"], &self.model);
                self.response = Some(event["response"].take());
                Step::Done(Ok(reply))
            }
            "response.failed" | "error" => {
                let message = event.pointer("/response/error/message").or_else(|| event.get("message"));
                let message = message.and_then(Value::as_str).unwrap_or("the response failed").to_owned();
                Step::Done(Err(ProviderError::new(ProviderErrorKind::Other, message)))
            }
            // The text and the arguments as they come, for a watch of the reply (B14).
            "response.output_text.delta" => {
                let delta = event["delta"].as_str().unwrap_or_default().to_owned();
                Step::Continue(vec![looprail_loop_core::provider::StreamEvent::TextDelta(delta)])
            }
            "response.function_call_arguments.delta" => {
                Step::Continue(vec![looprail_loop_core::provider::StreamEvent::ToolCallDelta {
                    index: event["output_index"].as_u64().unwrap_or(0) as usize,
                    id: None,
                    name: None,
                    arguments: event["delta"].as_str().unwrap_or_default().to_owned(),
                }])
            }
            _ => Step::Continue(Vec::new()),
        }
    }

    fn end_of_body(
        &mut self,
    ) -> Result<looprail_loop_core::provider::ModelResponse, looprail_loop_core::provider::ProviderError>
    {
        use looprail_loop_core::provider::{ProviderError, ProviderErrorKind};
        Err(ProviderError::new(ProviderErrorKind::StreamBroken, "the stream ended before response.completed"))
    }
}

/// A complete response as the reply the gateway keeps.
fn model_response(response: &Value, model: &str) -> looprail_loop_core::provider::ModelResponse {
    use looprail_loop_core::provider::{ModelResponse, StopReason, Usage};
    let reply = reply_message(response).unwrap_or_else(|| Message::assistant(String::new()));
    let tool_calls: Vec<ToolCall> = reply.tool_calls().cloned().collect();
    let read = |pointer: &str| response.pointer(pointer).and_then(Value::as_u64).unwrap_or(0);
    let usage = response.get("usage").is_some().then(|| Usage {
        input_tokens: read("/usage/input_tokens"),
        output_tokens: read("/usage/output_tokens"),
        cache_read_tokens: read("/usage/input_tokens_details/cached_tokens"),
        ..Usage::default()
    });
    ModelResponse {
        text: reply.joined_text(),
        stop_reason: if tool_calls.is_empty() { StopReason::EndTurn } else { StopReason::ToolUse },
        tool_calls,
        usage,
        model: response["model"].as_str().unwrap_or(model).to_owned(),
        id: response["id"].as_str().map(str::to_owned),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request() -> Value {
        json!({"model": "gpt-x", "instructions": "Be brief.", "input": [
            {"role": "user", "content": "List and read."},
            {"type": "reasoning", "id": "rs_1", "summary": []},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Looking."}]},
            {"type": "function_call", "call_id": "c1", "name": "ls", "arguments": "{}"},
            {"type": "function_call", "call_id": "c2", "name": "cat", "arguments": "{\"p\":\"a\"}"},
            {"type": "function_call_output", "call_id": "c1", "output": "a"},
            {"type": "function_call_output", "call_id": "c2", "output": "text"},
            {"type": "local_shell_call", "call_id": "c4", "action": {"type": "exec", "command": ["ls"]}, "status": "completed"},
            {"type": "local_shell_call_output", "call_id": "c4", "output": "{\"output\":\"a\"}"},
        ]})
    }

    #[test]
    fn a_replys_items_are_one_assistant_turn_with_its_calls() {
        let messages = messages(&request()).unwrap();
        let roles: Vec<_> = messages.iter().map(|m| m.role).collect();
        use looprail_loop_core::message::Role::{Assistant, System, Tool, User};
        assert_eq!(roles, [System, User, Assistant, Tool, Tool, Assistant, Tool]);
        assert_eq!(messages[5].tool_calls().next().unwrap().name, "local_shell");
        assert_eq!(messages[2].joined_text().as_deref(), Some("Looking."));
        assert_eq!(messages[2].tool_calls().map(|c| c.id.as_str()).collect::<Vec<_>>(), ["c1", "c2"]);
    }

    #[test]
    fn a_response_and_its_stream_carry_the_same_reply() {
        let response = json!({"id": "resp_1", "object": "response", "status": "completed", "model": "gpt-x", "output": [
            {"type": "message", "id": "msg_1", "status": "completed", "role": "assistant", "content": [{"type": "output_text", "text": "Reading.", "annotations": []}]},
            {"type": "function_call", "id": "fc_1", "call_id": "c3", "name": "cat", "arguments": "{\"p\":\"b\"}", "status": "completed"}
        ], "usage": {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}});
        let reply = reply_message(&response).unwrap();
        assert_eq!(reply.joined_text().as_deref(), Some("Reading."));
        assert_eq!(reply.tool_calls().count(), 1);
        let stream = to_stream(&response);
        let events: Vec<Value> = stream
            .split("\n\n")
            .filter_map(|e| e.lines().find_map(|l| l.strip_prefix("data: ")))
            .map(|d| serde_json::from_str(d).unwrap())
            .collect();
        let sequence: Vec<u64> = events.iter().map(|e| e["sequence_number"].as_u64().unwrap()).collect();
        assert_eq!(sequence, (0..events.len() as u64).collect::<Vec<_>>());
        let last = events.last().unwrap();
        assert_eq!((last["type"].as_str(), &last["response"]), (Some("response.completed"), &response));
        let text: String = events
            .iter()
            .filter(|e| e["type"] == "response.output_text.delta")
            .map(|e| e["delta"].as_str().unwrap())
            .collect();
        assert_eq!(text, "Reading.");
    }
}
