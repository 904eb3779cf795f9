//! OpenAI Chat Completions and Anthropic Messages clients behind looprail's
//! [`Provider`](looprail_loop_core::Provider) seam.
//!
//! - [`OpenAiClient`]: OpenAI and OpenAI-compatible servers (vLLM, Ollama, OpenRouter) via the
//!   base URL, with an optional key; tools, tool choice, parallel tool calls, usage (requested
//!   with `stream_options.include_usage` when streaming), refusals.
//! - [`AnthropicClient`]: system prompt, `tool_use` / `tool_result` blocks, tool choice, stop
//!   reasons including `pause_turn`, cache-token usage, the `anthropic-version` header.
//! - Both complete and stream over SSE; tool-call arguments are assembled from deltas, `ping`
//!   events, keep-alive comments, padded JSON and unknown event types are tolerated, and every
//!   stream ends with exactly one finished signal, also when it errors or closes early.
//! - Every failure is a [`ProviderError`](looprail_loop_core::provider::ProviderError) with the
//!   status, the provider's error type, request id, `retry-after`, `x-should-retry` and rate
//!   limit headers, and a `transient()` answer for the retry layer.
//! - [`ProviderSettings`]: the config file's `[provider]` section (timeouts, fallback models,
//!   summary model).
//! - [`Recorder`] and [`Replay`] record a run's calls to JSONL and replay them offline.
//! - [`fields`]: the pieces of typed reads of an API's JSON that read each leaf as a `Value`
//!   would (the stream parsers read the usual chunk and event so, without a JSON tree).
//!
//! The clients run on tokio with timers enabled (the idle timeout between stream chunks uses
//! them). TLS is rustls with the ring provider.
//!
//! ```
//! use looprail_loop_core::prelude::*;
//! use looprail_providers::{ClientConfig, OpenAiClient};
//!
//! let client = OpenAiClient::new(ClientConfig::custom("gpt-4o", "http://127.0.0.1:8000/v1", None))?;
//! let messages = [Message::system("Be brief."), Message::user("Hi")];
//! let tools = [ToolDefinition::new("search", "web search", serde_json::json!({"type": "object"}))];
//! let request = ModelRequest {
//!     messages: &messages,
//!     tools: &tools,
//!     tool_choice: ToolChoice::Named("search".into()),
//!     max_output_tokens: Some(256),
//!     instruction: None,
//!     purpose: looprail_loop_core::provider::CallPurpose::Turn,
//! };
//! let body = client.body(&request, true);
//! assert_eq!(body["tool_choice"]["function"]["name"], "search");
//! assert_eq!(body["stream_options"]["include_usage"], true);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod anthropic;
mod assemble;
mod config;
#[cfg(feature = "fake-server")]
pub mod fake;
pub mod fields;
mod http;
pub mod openai;
mod record;
mod settings;
pub mod sse;

pub use anthropic::AnthropicClient;
pub use assemble::ToolCallAssembler;
pub use config::{ClientConfig, MaxTokensField};
pub use openai::OpenAiClient;
pub use record::{Recorder, Replay, ReplayError};
pub use settings::ProviderSettings;
