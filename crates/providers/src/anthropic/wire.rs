//! The Anthropic Messages wire format: request bodies, responses and stream events.

use std::borrow::Cow;
use std::collections::BTreeSet;

use looprail_loop_core::message::{ContentPart, Message, Role, ToolCall, WireIds};
use looprail_loop_core::provider::{
    ModelRequest, ModelResponse, ProviderError, ProviderErrorKind, StopReason, StreamEvent, Usage,
};
use looprail_loop_core::tool::ToolChoice;
use serde_json::{Map, Value, json};

use super::event::{EventFields, UsageFields};
use crate::assemble::ToolCallAssembler;
use crate::http::stream_error;
use crate::sse::{SseParser, Step};

/// The API version header value this client speaks.
pub const API_VERSION: &str = "2023-06-01";

fn image_block(media_type: &str, source: &str) -> Value {
    match source.strip_prefix("data:").and_then(|rest| rest.split_once(";base64,")) {
        Some((mime, data)) => {
            json!({"type": "image", "source": {"type": "base64", "media_type": mime, "data": data}})
        }
        None => json!({"type": "image", "source": {"type": "url", "url": source}, "media_type": media_type}),
    }
}

/// A message's content blocks. Without `tools_declared`, calls and results travel as text: the
/// API refuses a request holding `tool_use` or `tool_result` blocks that declares no tools (a
/// summary request, a caller's own tool-less call on a history with tools).
fn blocks(message: &Message, ids: &WireIds, tools_declared: bool) -> Vec<Value> {
    message
        .content
        .iter()
        .filter_map(|part| match part {
            ContentPart::Text { text } if !text.trim().is_empty() => {
                Some(json!({"type": "text", "text": text}))
            }
            ContentPart::Text { .. } => None,
            ContentPart::Image { media_type, source } => Some(image_block(media_type, source)),
            ContentPart::ToolUse(call) if !tools_declared => {
                Some(json!({"type": "text", "text": format!("[called {}: {}]", call.name, call.arguments)}))
            }
            ContentPart::ToolResult(result) if !tools_declared => {
                let status = if result.is_error { "error" } else { "result" };
                Some(json!({"type": "text", "text": format!("[tool {status}: {}]", result.content)}))
            }
            ContentPart::ToolUse(call) => {
                // The API wants an object; arguments the engine already rejected travel as {}.
                let input = serde_json::from_str::<Value>(&call.arguments)
                    .ok()
                    .filter(Value::is_object)
                    .unwrap_or_else(|| json!({}));
                Some(json!({"type": "tool_use", "id": ids.get(&call.id), "name": call.name, "input": input}))
            }
            ContentPart::ToolResult(result) => Some(json!({
                "type": "tool_result",
                "tool_use_id": ids.get(&result.call_id),
                "content": result.content,
                "is_error": result.is_error,
            })),
        })
        .collect()
}

/// The request body for `request` on `model`.
pub fn request_body(model: &str, request: &ModelRequest<'_>, default_max_tokens: u32, stream: bool) -> Value {
    let mut system: Vec<Value> = request
        .messages
        .iter()
        .filter(|m| m.role == Role::System)
        .filter_map(Message::joined_text)
        .map(|text| json!({"type": "text", "text": text}))
        .collect();
    if let Some(instruction) = request.instruction {
        system.push(json!({"type": "text", "text": instruction}));
    }
    // Roles must alternate: tool results are user content, and consecutive messages of one
    // role (tool results followed by a runtime note) merge into one message.
    let ids = WireIds::for_messages(request.messages);
    let mut messages: Vec<(&str, Vec<Value>)> = Vec::new();
    for message in request.messages.iter().filter(|m| m.role != Role::System) {
        let role = if message.role == Role::Assistant { "assistant" } else { "user" };
        let content = blocks(message, &ids, !request.tools.is_empty());
        if content.is_empty() {
            continue;
        }
        match messages.last_mut() {
            Some((last, existing)) if *last == role => existing.extend(content),
            _ => messages.push((role, content)),
        }
    }
    let mut body = Map::new();
    body.insert("model".into(), json!(model));
    body.insert("max_tokens".into(), json!(request.max_output_tokens.unwrap_or(default_max_tokens)));
    if !system.is_empty() {
        body.insert("system".into(), Value::Array(system));
    }
    body.insert(
        "messages".into(),
        Value::Array(
            messages.into_iter().map(|(role, content)| json!({"role": role, "content": content})).collect(),
        ),
    );
    if !request.tools.is_empty() {
        let tools: Vec<Value> = request
            .tools
            .iter()
            .map(|t| json!({"name": t.name, "description": t.description, "input_schema": t.parameters}))
            .collect();
        body.insert("tools".into(), Value::Array(tools));
        let choice = match &request.tool_choice {
            ToolChoice::Auto => json!({"type": "auto"}),
            ToolChoice::None => json!({"type": "none"}),
            ToolChoice::Required => json!({"type": "any"}),
            ToolChoice::Named(name) => json!({"type": "tool", "name": name}),
        };
        body.insert("tool_choice".into(), choice);
    }
    if stream {
        body.insert("stream".into(), json!(true));
    }
    Value::Object(body)
}

/// Maps `stop_reason`.
pub fn stop_reason(reason: Option<&str>, has_calls: bool) -> StopReason {
    match reason {
        Some("end_turn") => StopReason::EndTurn,
        Some("tool_use") => StopReason::ToolUse,
        Some("max_tokens") => StopReason::MaxTokens,
        Some("stop_sequence") => StopReason::StopSequence,
        Some("refusal") => StopReason::Refusal,
        Some(other) => StopReason::Other(other.to_owned()),
        None if has_calls => StopReason::ToolUse,
        None => StopReason::EndTurn,
    }
}

/// An Anthropic `usage` object as looprail counts it. Anthropic counts cache reads and writes
/// apart from `input_tokens`; looprail's input count includes them (as OpenAI's does), so
/// prices apply the same way to both.
///
/// ```
/// use looprail_providers::anthropic::usage;
///
/// let counted = usage(&serde_json::json!({"input_tokens": 10, "cache_read_input_tokens": 90,
///     "cache_creation_input_tokens": 5, "output_tokens": 7}));
/// assert_eq!((counted.input_tokens, counted.cache_read_tokens, counted.output_tokens), (105, 90, 7));
/// ```
pub fn usage(u: &Value) -> Usage {
    let counts = UsageFields::of_value(u);
    let (read, write) = (counts.cache_read, counts.cache_write);
    Usage {
        input_tokens: counts.input.unwrap_or(0) + read + write,
        output_tokens: counts.output.unwrap_or(0),
        cache_read_tokens: read,
        cache_write_tokens: write,
        estimated_tokens: 0,
    }
}

fn malformed(message: impl Into<String>) -> ProviderError {
    ProviderError::new(ProviderErrorKind::MalformedResponse, message)
}

/// Parses a complete (non-streaming) response.
pub fn parse_response(body: &Value, model: &str) -> Result<ModelResponse, ProviderError> {
    if body.get("type").and_then(Value::as_str) == Some("error") {
        return Err(stream_error(body));
    }
    let content = body
        .get("content")
        .and_then(Value::as_array)
        .ok_or_else(|| malformed("the response has no content"))?;
    let mut text = String::new();
    let mut calls = Vec::new();
    for block in content {
        match block.get("type").and_then(Value::as_str) {
            Some("text") => text.push_str(block.get("text").and_then(Value::as_str).unwrap_or_default()),
            Some("tool_use") => {
                let id = block
                    .get("id")
                    .and_then(Value::as_str)
                    .ok_or_else(|| malformed("a tool_use block has no id"))?;
                let name = block
                    .get("name")
                    .and_then(Value::as_str)
                    .ok_or_else(|| malformed("a tool_use block has no name"))?;
                let input = block.get("input").cloned().unwrap_or_else(|| json!({}));
                calls.push(ToolCall::new(id, name, input.to_string()));
            }
            _ => {} // thinking, server tools and future block types are not part of the loop
        }
    }
    Ok(ModelResponse {
        text: (!text.is_empty()).then_some(text),
        stop_reason: stop_reason(body.get("stop_reason").and_then(Value::as_str), !calls.is_empty()),
        tool_calls: calls,
        usage: body.get("usage").map(usage),
        model: body.get("model").and_then(Value::as_str).unwrap_or(model).to_owned(),
        id: body.get("id").and_then(Value::as_str).map(str::to_owned),
    })
}

/// Assembles a streamed response from its events.
#[derive(Debug)]
pub struct EventParser {
    model: String,
    text: String,
    calls: ToolCallAssembler,
    /// The indexes of the stream's `tool_use` blocks: input deltas of other blocks (a server
    /// tool's call, run by the provider) are no call of the loop's.
    tool_blocks: BTreeSet<usize>,
    stop: Option<String>,
    usage: Option<Usage>,
    id: Option<String>,
}

impl EventParser {
    /// A parser for a stream from `model`.
    pub fn new(model: &str) -> Self {
        Self {
            model: model.to_owned(),
            text: String::new(),
            calls: ToolCallAssembler::default(),
            tool_blocks: BTreeSet::new(),
            stop: None,
            usage: None,
            id: None,
        }
    }

    fn response(&self) -> ModelResponse {
        let calls = self.calls.finish();
        ModelResponse {
            text: (!self.text.is_empty()).then(|| self.text.clone()),
            stop_reason: stop_reason(self.stop.as_deref(), !calls.is_empty()),
            tool_calls: calls,
            usage: self.usage,
            model: self.model.clone(),
            id: self.id.clone(),
        }
    }

    fn merge_usage(&mut self, counts: UsageFields) {
        let current = self.usage.get_or_insert_with(Usage::default);
        // message_delta repeats cumulative counts; a missing field keeps what was known.
        if let Some(input) = counts.input {
            current.input_tokens = input + counts.cache_read + counts.cache_write;
            current.cache_read_tokens = counts.cache_read;
            current.cache_write_tokens = counts.cache_write;
        }
        if let Some(output) = counts.output {
            current.output_tokens = output;
        }
    }

    /// Applies what one event says.
    fn apply(&mut self, event: EventFields<'_>) -> Step {
        let index = event.index;
        match &*event.kind {
            "message_start" => {
                if let Some(model) = event.message.model {
                    self.model = model.into_owned();
                }
                self.id = event.message.id.map(Cow::into_owned);
                if let Some(counts) = event.message.usage {
                    self.merge_usage(counts);
                }
                Step::Continue(Vec::new())
            }
            "content_block_start" => match event.block.kind.as_deref() {
                Some("tool_use") => {
                    let (id, name) = (event.block.id.as_deref(), event.block.name.as_deref());
                    self.tool_blocks.insert(index);
                    self.calls.push(index, id, name, "");
                    Step::Continue(vec![StreamEvent::ToolCallDelta {
                        index,
                        id: id.map(str::to_owned),
                        name: name.map(str::to_owned),
                        arguments: String::new(),
                    }])
                }
                Some("text") => {
                    let text = event.block.text.unwrap_or_default();
                    self.text.push_str(&text);
                    Step::Continue(if text.is_empty() {
                        Vec::new()
                    } else {
                        vec![StreamEvent::TextDelta(text.into_owned())]
                    })
                }
                _ => Step::Continue(Vec::new()),
            },
            "content_block_delta" => match event.delta.kind.as_deref() {
                Some("text_delta") => {
                    let text = event.delta.text.unwrap_or_default();
                    self.text.push_str(&text);
                    Step::Continue(vec![StreamEvent::TextDelta(text.into_owned())])
                }
                Some("input_json_delta") if self.tool_blocks.contains(&index) => {
                    let part = event.delta.partial_json.unwrap_or_default();
                    self.calls.push(index, None, None, &part);
                    Step::Continue(vec![StreamEvent::ToolCallDelta {
                        index,
                        id: None,
                        name: None,
                        arguments: part.into_owned(),
                    }])
                }
                _ => Step::Continue(Vec::new()),
            },
            "message_delta" => {
                if let Some(stop) = event.delta.stop_reason {
                    self.stop = Some(stop.into_owned());
                }
                if let Some(counts) = event.usage {
                    self.merge_usage(counts);
                }
                Step::Continue(Vec::new())
            }
            "message_stop" => Step::Done(Ok(self.response())),
            // ping, content_block_stop and event types added later carry nothing we need.
            _ => Step::Continue(Vec::new()),
        }
    }
}

impl SseParser for EventParser {
    fn text_so_far(&self) -> Option<&str> {
        Some(&self.text)
    }

    fn event(&mut self, name: &str, data: &str) -> Step {
        // The usual event (a token, a call's fragment, the start, the stop) is read without a
        // JSON tree.
        if let Some(event) = EventFields::read(name, data) {
            return self.apply(event);
        }
        let value: Value = match serde_json::from_str(data) {
            Ok(value) => value,
            Err(e) => return Step::Done(Err(malformed(format!("a stream event is not JSON ({e})")))),
        };
        let event = EventFields::of_value(name, &value);
        if event.kind == "error" {
            return Step::Done(Err(stream_error(&value)));
        }
        self.apply(event)
    }

    fn end_of_body(&mut self) -> Result<ModelResponse, ProviderError> {
        if self.stop.is_some() {
            tracing::warn!("the stream closed without message_stop; using what it sent");
            Ok(self.response())
        } else {
            Err(ProviderError::new(
                ProviderErrorKind::StreamBroken,
                "the stream closed before its stop reason",
            ))
        }
    }
}
