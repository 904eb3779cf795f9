//! The provider seam: one model call from a provider-neutral [`ModelRequest`] to a
//! [`ModelResponse`], complete or streaming, with one error type that says whether it is
//! transient ([`ProviderError::transient`]).
//!
//! Retries, fallback chains and recording are [`Provider`] wrappers, in the spirit of tower's
//! layers. A request borrows the run's history, so a model call never copies the conversation.

use std::pin::Pin;
use std::time::Duration;

use async_trait::async_trait;
use futures_core::Stream;
use serde::{Deserialize, Serialize};

use crate::message::{Message, ToolCall};
use crate::tool::definition::{ToolChoice, ToolDefinition};

/// Why the engine makes a call; providers may ignore it, recorders and scripts use it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CallPurpose {
    /// An ordinary turn of the loop.
    Turn,
    /// The soft time limit's final "summarise what you have done" turn (F6).
    SoftLimitSummary,
    /// The fallback reply after a budget or cap stopped the loop (F10).
    Fallback,
    /// A summary of old history for compaction (F27).
    Summary,
}

/// One model call, provider-neutral.
#[derive(Debug, Clone, Serialize)]
pub struct ModelRequest<'a> {
    /// The conversation, system prompt first when there is one.
    pub messages: &'a [Message],
    /// The tools the model may call.
    pub tools: &'a [ToolDefinition],
    /// Which tools it may or must call.
    pub tool_choice: ToolChoice,
    /// A cap on output tokens for this call.
    pub max_output_tokens: Option<u32>,
    /// A system-level instruction for this call only (sent after the system prompt).
    pub instruction: Option<&'a str>,
    /// Why the engine makes this call.
    pub purpose: CallPurpose,
}

/// Why the model stopped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// It finished its answer.
    EndTurn,
    /// It wants tools to run.
    ToolUse,
    /// The output-token limit cut it off.
    MaxTokens,
    /// A stop sequence matched.
    StopSequence,
    /// It refused to answer.
    Refusal,
    /// Its reply degenerated into the same text again and again, and was cut where the
    /// repetition began (B14; see [`watch`](crate::watch)).
    Degenerate,
    /// Anything else the provider said, kept verbatim.
    Other(String),
}

/// Tokens one call consumed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Usage {
    /// Prompt tokens, cache reads and writes included when the provider counts them there.
    pub input_tokens: u64,
    /// Generated tokens.
    pub output_tokens: u64,
    /// Prompt tokens served from the provider's cache.
    #[serde(default)]
    pub cache_read_tokens: u64,
    /// Prompt tokens written to the provider's cache.
    #[serde(default)]
    pub cache_write_tokens: u64,
    /// How many of the input and output tokens are looprail's estimate, not the provider's
    /// count (the provider reported no usage for those calls). 0 when every figure is reported.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub estimated_tokens: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Usage {
    /// Input plus output tokens (what a token budget counts).
    pub fn total(&self) -> u64 {
        self.input_tokens.saturating_add(self.output_tokens)
    }

    /// Adds another call's usage, saturating.
    pub fn add(&mut self, other: &Usage) {
        self.input_tokens = self.input_tokens.saturating_add(other.input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(other.output_tokens);
        self.cache_read_tokens = self.cache_read_tokens.saturating_add(other.cache_read_tokens);
        self.cache_write_tokens = self.cache_write_tokens.saturating_add(other.cache_write_tokens);
        self.estimated_tokens = self.estimated_tokens.saturating_add(other.estimated_tokens);
    }

    /// An estimate: every token of it is marked as estimated.
    pub fn estimate(input_tokens: u64, output_tokens: u64) -> Self {
        Self {
            input_tokens,
            output_tokens,
            estimated_tokens: input_tokens.saturating_add(output_tokens),
            ..Self::default()
        }
    }

    /// Whether any part of these figures is an estimate.
    pub fn is_estimated(&self) -> bool {
        self.estimated_tokens > 0
    }
}

/// A model's answer to one call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelResponse {
    /// The text, if any.
    pub text: Option<String>,
    /// The tool calls, in the order the model made them.
    #[serde(default)]
    pub tool_calls: Vec<ToolCall>,
    /// Why it stopped.
    pub stop_reason: StopReason,
    /// Tokens used; `None` when the provider reported none.
    #[serde(default)]
    pub usage: Option<Usage>,
    /// The model that actually answered (after any fallback).
    pub model: String,
    /// The provider's id of the response (`chatcmpl-…`, `msg_…`), when it gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
}

impl ModelResponse {
    /// A text answer that ended the turn.
    pub fn text(model: impl Into<String>, text: impl Into<String>) -> Self {
        Self {
            text: Some(text.into()),
            tool_calls: Vec::new(),
            stop_reason: StopReason::EndTurn,
            usage: None,
            model: model.into(),
            id: None,
        }
    }

    /// A response asking for tools.
    pub fn tool_calls(model: impl Into<String>, calls: Vec<ToolCall>) -> Self {
        Self {
            text: None,
            tool_calls: calls,
            stop_reason: StopReason::ToolUse,
            usage: None,
            model: model.into(),
            id: None,
        }
    }

    /// Sets the usage.
    #[must_use]
    pub fn with_usage(mut self, input_tokens: u64, output_tokens: u64) -> Self {
        self.usage = Some(Usage { input_tokens, output_tokens, ..Usage::default() });
        self
    }

    /// True when there is neither non-blank text nor a tool call (F3).
    pub fn is_empty(&self) -> bool {
        self.tool_calls.is_empty() && self.text.as_deref().is_none_or(|t| t.trim().is_empty())
    }
}

/// The class of a provider failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProviderErrorKind {
    /// HTTP 429 or a rate-limit error type.
    RateLimited,
    /// The provider is overloaded (Anthropic 529, `overloaded_error`).
    Overloaded,
    /// HTTP 5xx or a server error type.
    Server,
    /// The request timed out (connect, whole request, or idle stream gap).
    Timeout,
    /// The connection failed or was reset.
    Connection,
    /// HTTP 408, 409 or 425: the provider asks to try again.
    TryAgain,
    /// Bad or missing credentials (401, 403).
    Auth,
    /// The request itself is wrong (400, 404, 422); it would fail on any provider.
    InvalidRequest,
    /// The prompt does not fit the model's context window.
    ContextWindowExceeded,
    /// The model does not exist or is not served right now.
    ModelUnavailable,
    /// The provider answered something that is not its wire format.
    MalformedResponse,
    /// A stream failed or closed before its terminal event.
    StreamBroken,
    /// Anything else.
    Other,
}

/// A failed model call.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize, Deserialize)]
#[error("{kind:?}: {message}")]
pub struct ProviderError {
    /// The class of failure.
    pub kind: ProviderErrorKind,
    /// A human-readable description, provider text included.
    pub message: String,
    /// The HTTP status, when there was one.
    #[serde(default)]
    pub status: Option<u16>,
    /// The provider's error type string, such as `rate_limit_error`.
    #[serde(default)]
    pub provider_code: Option<String>,
    /// The provider's request id, for support tickets.
    #[serde(default)]
    pub request_id: Option<String>,
    /// How long the provider asked us to wait (`retry-after`).
    #[serde(default)]
    pub retry_after: Option<Duration>,
    /// The provider's own retry advice (`x-should-retry`), which wins over the kind.
    #[serde(default)]
    pub should_retry: Option<bool>,
    /// Rate-limit headers as sent (`x-ratelimit-*`, `anthropic-ratelimit-*`).
    #[serde(default)]
    pub rate_limits: Vec<(String, String)>,
}

impl ProviderError {
    /// An error of the given kind.
    pub fn new(kind: ProviderErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
            status: None,
            provider_code: None,
            request_id: None,
            retry_after: None,
            should_retry: None,
            rate_limits: Vec::new(),
        }
    }

    /// True when trying again later may succeed: timeouts, connection errors, 408/409/425,
    /// 429, 5xx, overload and broken streams, unless the provider said `x-should-retry: false`.
    pub fn transient(&self) -> bool {
        if let Some(advice) = self.should_retry {
            return advice;
        }
        matches!(
            self.kind,
            ProviderErrorKind::RateLimited
                | ProviderErrorKind::Overloaded
                | ProviderErrorKind::Server
                | ProviderErrorKind::Timeout
                | ProviderErrorKind::Connection
                | ProviderErrorKind::TryAgain
                | ProviderErrorKind::StreamBroken
        )
    }
}

/// One item of a streamed response. A well-formed stream ends with exactly one
/// [`StreamEvent::Finished`] (F24); consumers treat a stream that ends without it as broken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StreamEvent {
    /// A piece of text.
    TextDelta(String),
    /// A piece of a tool call; `index` orders calls, `arguments` is a fragment to append.
    ToolCallDelta {
        /// The call's position in the response.
        index: usize,
        /// The call id, on the first fragment.
        id: Option<String>,
        /// The tool name, on the first fragment.
        name: Option<String>,
        /// A fragment of the arguments' JSON text.
        arguments: String,
    },
    /// The end: the assembled response or the error that ended the stream.
    Finished(Result<ModelResponse, ProviderError>),
}

/// A streamed response.
pub type ResponseStream = Pin<Box<dyn Stream<Item = StreamEvent> + Send>>;

/// A model behind some API.
#[async_trait]
pub trait Provider: Send + Sync {
    /// The model this provider calls, for events and cost attribution.
    fn model(&self) -> &str;

    /// The provider's name for telemetry (`gen_ai.provider.name`: `openai`, `anthropic`...);
    /// wrappers report the provider they wrap.
    fn provider_name(&self) -> &str {
        "unknown"
    }

    /// One complete (non-streaming) call.
    async fn complete(&self, request: &ModelRequest<'_>) -> Result<ModelResponse, ProviderError>;

    /// One streaming call. The default makes a complete call and replays it as a stream.
    async fn stream(&self, request: &ModelRequest<'_>) -> Result<ResponseStream, ProviderError> {
        let result = self.complete(request).await;
        let mut items = Vec::with_capacity(2);
        if let Ok(response) = &result
            && let Some(text) = response.text.clone().filter(|t| !t.is_empty())
        {
            items.push(StreamEvent::TextDelta(text));
        }
        items.push(StreamEvent::Finished(result));
        Ok(Box::pin(futures_util::stream::iter(items)))
    }

    /// False for providers that ignore tool choice (then forcing a tool falls back to an
    /// injected instruction).
    fn supports_tool_choice(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn should_retry_header_wins_over_the_kind() {
        let mut err = ProviderError::new(ProviderErrorKind::RateLimited, "slow down");
        assert!(err.transient());
        err.should_retry = Some(false);
        assert!(!err.transient());
        let mut bad = ProviderError::new(ProviderErrorKind::InvalidRequest, "bad");
        assert!(!bad.transient());
        bad.should_retry = Some(true);
        assert!(bad.transient());
    }

    #[test]
    fn blank_text_without_calls_is_an_empty_reply() {
        assert!(ModelResponse::text("m", "  \n").is_empty());
        assert!(!ModelResponse::text("m", "hi").is_empty());
        let calls = ModelResponse::tool_calls("m", vec![ToolCall::new("1", "t", "{}")]);
        assert!(!calls.is_empty());
    }
}
