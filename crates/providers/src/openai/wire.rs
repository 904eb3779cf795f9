//! The OpenAI Chat Completions wire format: request bodies, responses and stream chunks.

use looprail_loop_core::message::{ContentPart, Message, Role, ToolCall, WireIds};
use looprail_loop_core::provider::{
    ModelRequest, ModelResponse, ProviderError, ProviderErrorKind, StopReason, StreamEvent, Usage,
};
use looprail_loop_core::tool::ToolChoice;
use serde_json::{Map, Value, json};

use std::borrow::Cow;

use super::chunk::ChunkFields;
use crate::assemble::ToolCallAssembler;
use crate::config::MaxTokensField;
use crate::http::stream_error;
use crate::sse::{SseParser, Step};

fn content(message: &Message) -> Value {
    let has_image = message.content.iter().any(|p| matches!(p, ContentPart::Image { .. }));
    if !has_image {
        return message.joined_text().map_or(Value::Null, Value::String);
    }
    let parts: Vec<Value> = message
        .content
        .iter()
        .filter_map(|part| match part {
            ContentPart::Text { text } => Some(json!({"type": "text", "text": text})),
            ContentPart::Image { source, .. } => {
                Some(json!({"type": "image_url", "image_url": {"url": source}}))
            }
            _ => None,
        })
        .collect();
    Value::Array(parts)
}

fn message_json(message: &Message, ids: &WireIds) -> Vec<Value> {
    match message.role {
        Role::System => vec![json!({"role": "system", "content": message.joined_text().unwrap_or_default()})],
        Role::User => vec![json!({"role": "user", "content": content(message)})],
        Role::Assistant => {
            let mut out = Map::new();
            out.insert("role".into(), json!("assistant"));
            out.insert("content".into(), content(message));
            let calls: Vec<Value> = message
                .tool_calls()
                .map(|c| json!({"id": ids.get(&c.id), "type": "function", "function": {"name": c.name, "arguments": c.arguments}}))
                .collect();
            if !calls.is_empty() {
                out.insert("tool_calls".into(), Value::Array(calls));
            }
            vec![Value::Object(out)]
        }
        // One tool message per result; OpenAI has no error flag, the text says it.
        Role::Tool => message
            .tool_results()
            .map(|r| json!({"role": "tool", "tool_call_id": ids.get(&r.call_id), "content": r.content}))
            .collect(),
    }
}

fn tool_choice(choice: &ToolChoice) -> Value {
    match choice {
        ToolChoice::Auto => json!("auto"),
        ToolChoice::None => json!("none"),
        ToolChoice::Required => json!("required"),
        ToolChoice::Named(name) => json!({"type": "function", "function": {"name": name}}),
    }
}

/// The request body for `request` on `model`.
pub fn request_body(model: &str, request: &ModelRequest<'_>, field: MaxTokensField, stream: bool) -> Value {
    let ids = WireIds::for_messages(request.messages);
    let mut messages: Vec<Value> = request.messages.iter().flat_map(|m| message_json(m, &ids)).collect();
    if let Some(instruction) = request.instruction {
        messages.push(json!({"role": "system", "content": instruction}));
    }
    let mut body = Map::new();
    body.insert("model".into(), json!(model));
    body.insert("messages".into(), Value::Array(messages));
    if !request.tools.is_empty() {
        let tools: Vec<Value> = request
            .tools
            .iter()
            .map(|t| json!({"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.parameters}}))
            .collect();
        body.insert("tools".into(), Value::Array(tools));
        body.insert("tool_choice".into(), tool_choice(&request.tool_choice));
    }
    if let Some(max) = request.max_output_tokens {
        let key = match field {
            MaxTokensField::MaxCompletionTokens => "max_completion_tokens",
            MaxTokensField::MaxTokens => "max_tokens",
        };
        body.insert(key.into(), json!(max));
    }
    if stream {
        body.insert("stream".into(), json!(true));
        body.insert("stream_options".into(), json!({"include_usage": true}));
    }
    Value::Object(body)
}

/// Maps `finish_reason`.
pub fn stop_reason(finish: Option<&str>, has_calls: bool) -> StopReason {
    match finish {
        Some("stop") => StopReason::EndTurn,
        Some("tool_calls" | "function_call") => StopReason::ToolUse,
        Some("length") => StopReason::MaxTokens,
        Some("content_filter") => StopReason::Refusal,
        Some(other) => StopReason::Other(other.to_owned()),
        None if has_calls => StopReason::ToolUse,
        None => StopReason::EndTurn,
    }
}

fn usage(value: &Value) -> Option<Usage> {
    let u = value.get("usage").filter(|u| u.is_object())?;
    let n = |v: Option<&Value>| v.and_then(Value::as_u64).unwrap_or(0);
    Some(Usage {
        input_tokens: n(u.get("prompt_tokens")),
        output_tokens: n(u.get("completion_tokens")),
        cache_read_tokens: n(u.pointer("/prompt_tokens_details/cached_tokens")),
        cache_write_tokens: 0,
        estimated_tokens: 0,
    })
}

fn malformed(message: impl Into<String>) -> ProviderError {
    ProviderError::new(ProviderErrorKind::MalformedResponse, message)
}

pub(super) fn arguments_text(value: Option<&Value>) -> String {
    match value {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    }
}

/// Parses a complete (non-streaming) response.
pub fn parse_response(body: &Value, model: &str) -> Result<ModelResponse, ProviderError> {
    if body.get("error").is_some_and(|e| !e.is_null()) {
        return Err(stream_error(body));
    }
    let choice = body.pointer("/choices/0").ok_or_else(|| malformed("the response has no choices"))?;
    let message = choice.get("message").ok_or_else(|| malformed("the first choice has no message"))?;
    let mut calls = Vec::new();
    for (i, call) in message.get("tool_calls").and_then(Value::as_array).into_iter().flatten().enumerate() {
        let name = call
            .pointer("/function/name")
            .and_then(Value::as_str)
            .ok_or_else(|| malformed("a tool call has no name"))?;
        let id = call.get("id").and_then(Value::as_str).map_or_else(|| format!("call_{i}"), str::to_owned);
        calls.push(ToolCall::new(id, name, arguments_text(call.pointer("/function/arguments"))));
    }
    let refusal = message.get("refusal").and_then(Value::as_str).filter(|r| !r.is_empty());
    let mut stop = stop_reason(choice.get("finish_reason").and_then(Value::as_str), !calls.is_empty());
    let text = match refusal {
        Some(refusal) => {
            stop = StopReason::Refusal;
            Some(refusal.to_owned())
        }
        None => message.get("content").and_then(Value::as_str).map(str::to_owned),
    };
    Ok(ModelResponse {
        text,
        tool_calls: calls,
        stop_reason: stop,
        usage: usage(body),
        model: body.get("model").and_then(Value::as_str).unwrap_or(model).to_owned(),
        id: body.get("id").and_then(Value::as_str).map(str::to_owned),
    })
}

/// Assembles a streamed response from its chunks.
#[derive(Debug)]
pub struct ChunkParser {
    model: String,
    text: String,
    refusal: String,
    calls: ToolCallAssembler,
    finish: Option<String>,
    usage: Option<Usage>,
    id: Option<String>,
}

impl ChunkParser {
    /// A parser for a stream from `model`.
    pub fn new(model: &str) -> Self {
        Self {
            model: model.to_owned(),
            text: String::new(),
            refusal: String::new(),
            calls: ToolCallAssembler::default(),
            finish: None,
            usage: None,
            id: None,
        }
    }

    fn response(&self) -> ModelResponse {
        let calls = self.calls.finish();
        let mut stop = stop_reason(self.finish.as_deref(), !calls.is_empty());
        let text = if self.refusal.is_empty() {
            (!self.text.is_empty()).then(|| self.text.clone())
        } else {
            stop = StopReason::Refusal;
            Some(self.refusal.clone())
        };
        ModelResponse {
            text,
            tool_calls: calls,
            stop_reason: stop,
            usage: self.usage,
            model: self.model.clone(),
            id: self.id.clone(),
        }
    }

    /// Applies one chunk's data.
    pub fn chunk(&mut self, data: &str) -> Step {
        if data.trim() == "[DONE]" {
            return Step::Done(Ok(self.response()));
        }
        // The usual chunk (a token, a call's fragment, the finish) is read without a JSON tree.
        if let Some(fields) = ChunkFields::read(data) {
            return self.apply(fields);
        }
        let value: Value = match serde_json::from_str(data) {
            Ok(value) => value,
            Err(e) => return Step::Done(Err(malformed(format!("a stream chunk is not JSON ({e})")))),
        };
        if value.get("error").is_some_and(|e| !e.is_null()) {
            return Step::Done(Err(stream_error(&value)));
        }
        if let Some(usage) = usage(&value) {
            self.usage = Some(usage);
        }
        self.apply(ChunkFields::of_value(&value))
    }

    /// Applies what one chunk says.
    fn apply(&mut self, chunk: ChunkFields<'_>) -> Step {
        if let Some(model) = chunk.model {
            self.model = model.into_owned();
        }
        if self.id.is_none() {
            self.id = chunk.id.map(Cow::into_owned);
        }
        let mut out = Vec::new();
        for choice in chunk.choices.into_iter().filter(|c| c.index == 0) {
            if let Some(text) = choice.content.filter(|t| !t.is_empty()) {
                self.text.push_str(&text);
                out.push(StreamEvent::TextDelta(text.into_owned()));
            }
            if let Some(refusal) = choice.refusal {
                self.refusal.push_str(&refusal);
            }
            for call in choice.calls {
                let index = call.index as usize;
                self.calls.push(index, call.id.as_deref(), call.name.as_deref(), &call.arguments);
                out.push(StreamEvent::ToolCallDelta {
                    index,
                    id: call.id.map(Cow::into_owned),
                    name: call.name.map(Cow::into_owned),
                    arguments: call.arguments,
                });
            }
            if let Some(finish) = choice.finish {
                self.finish = Some(finish.into_owned());
            }
        }
        Step::Continue(out)
    }
}

impl SseParser for ChunkParser {
    fn event(&mut self, _name: &str, data: &str) -> Step {
        self.chunk(data)
    }

    fn text_so_far(&self) -> Option<&str> {
        Some(&self.text)
    }

    fn end_of_body(&mut self) -> Result<ModelResponse, ProviderError> {
        // S1: a stream that closes without `[DONE]` after its finish reason is complete
        // enough; one that closes before it lost data.
        if self.finish.is_some() {
            tracing::warn!("the stream closed without [DONE]; using what it sent");
            Ok(self.response())
        } else {
            Err(ProviderError::new(
                ProviderErrorKind::StreamBroken,
                "the stream closed before its finish reason",
            ))
        }
    }
}
