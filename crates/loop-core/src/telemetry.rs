//! Spans following the OpenTelemetry GenAI semantic conventions, emitted through `tracing`
//! (libraries only emit; an exporter, such as `tracing-opentelemetry`, lives in the binary):
//! `invoke_agent` for a run, `chat` for each model call (summaries and fallback replies
//! included) and `execute_tool` for each tool call attempt, nested in that order. Attribute
//! names are the conventions' own; a failure sets `error.type` and `otel.status_code`. No
//! message content is recorded.

use tracing::Span;
use tracing::field::Empty;

use crate::provider::{CallPurpose, ModelResponse, ProviderError, StopReason};

/// `gen_ai.operation.name`.
pub const OPERATION_NAME: &str = "gen_ai.operation.name";
/// `gen_ai.provider.name`.
pub const PROVIDER_NAME: &str = "gen_ai.provider.name";
/// `gen_ai.request.model`.
pub const REQUEST_MODEL: &str = "gen_ai.request.model";
/// `gen_ai.response.model`.
pub const RESPONSE_MODEL: &str = "gen_ai.response.model";
/// `gen_ai.usage.input_tokens`.
pub const INPUT_TOKENS: &str = "gen_ai.usage.input_tokens";
/// `gen_ai.usage.output_tokens`.
pub const OUTPUT_TOKENS: &str = "gen_ai.usage.output_tokens";
/// `gen_ai.response.id`.
pub const RESPONSE_ID: &str = "gen_ai.response.id";
/// `gen_ai.response.finish_reasons`: a string array in the conventions. `tracing` records one
/// string (the reasons joined by `,`); `looprail-telemetry`'s exporter sends it as the array.
pub const FINISH_REASONS: &str = "gen_ai.response.finish_reasons";
/// `gen_ai.tool.name`.
pub const TOOL_NAME: &str = "gen_ai.tool.name";
/// `gen_ai.tool.call.id`.
pub const TOOL_CALL_ID: &str = "gen_ai.tool.call.id";
/// `error.type`.
pub const ERROR_TYPE: &str = "error.type";

/// The span of a whole run (`invoke_agent`).
pub fn agent_span(run_id: &str) -> Span {
    tracing::info_span!(
        target: "looprail",
        "invoke_agent",
        "otel.name" = "invoke_agent looprail",
        "gen_ai.operation.name" = "invoke_agent",
        "gen_ai.agent.name" = "looprail",
        "gen_ai.conversation.id" = run_id,
        "error.type" = Empty,
        "otel.status_code" = Empty,
    )
}

/// The span of one model call (`chat`): span kind CLIENT, as the conventions make a call to a
/// model served elsewhere.
pub fn chat_span(provider: &str, model: &str, purpose: CallPurpose) -> Span {
    tracing::info_span!(
        target: "looprail",
        "chat",
        "otel.name" = format!("chat {model}"),
        "otel.kind" = "client",
        "gen_ai.operation.name" = "chat",
        "gen_ai.provider.name" = provider,
        "gen_ai.request.model" = model,
        "gen_ai.response.model" = Empty,
        "gen_ai.response.id" = Empty,
        "gen_ai.usage.input_tokens" = Empty,
        "gen_ai.usage.output_tokens" = Empty,
        "gen_ai.response.finish_reasons" = Empty,
        "looprail.call.purpose" = format!("{purpose:?}").to_lowercase(),
        "error.type" = Empty,
        "otel.status_code" = Empty,
    )
}

/// The span of one tool call attempt (`execute_tool`). `gen_ai.tool.call.id` is the id the
/// model gave the call (`provider_id`), so a trace joins the provider's logs; the engine's own
/// id (`lr-0`, ...) is `looprail.tool.call.id`.
pub fn tool_span(tool: &str, provider_id: &str, engine_id: &str) -> Span {
    tracing::info_span!(
        target: "looprail",
        "execute_tool",
        "otel.name" = format!("execute_tool {tool}"),
        "gen_ai.operation.name" = "execute_tool",
        "gen_ai.tool.name" = tool,
        "gen_ai.tool.call.id" = provider_id,
        "looprail.tool.call.id" = engine_id,
        "error.type" = Empty,
        "otel.status_code" = Empty,
    )
}

/// The conventions' name for a stop reason.
pub fn finish_reason(reason: &StopReason) -> &str {
    match reason {
        StopReason::EndTurn => "stop",
        StopReason::ToolUse => "tool_calls",
        StopReason::MaxTokens => "length",
        StopReason::StopSequence => "stop",
        StopReason::Refusal => "content_filter",
        StopReason::Degenerate => "degenerate",
        StopReason::Other(other) => other,
    }
}

/// Records a model call's result on its span.
pub fn record_model_result(span: &Span, result: &Result<ModelResponse, ProviderError>) {
    match result {
        Ok(response) => {
            span.record(RESPONSE_MODEL, response.model.as_str());
            if let Some(id) = &response.id {
                span.record(RESPONSE_ID, id.as_str());
            }
            span.record(FINISH_REASONS, finish_reason(&response.stop_reason));
            if let Some(usage) = &response.usage {
                // As i64: OpenTelemetry integers are signed (an unsigned value would be exported
                // as text).
                span.record(INPUT_TOKENS, i64::try_from(usage.input_tokens).unwrap_or(i64::MAX));
                span.record(OUTPUT_TOKENS, i64::try_from(usage.output_tokens).unwrap_or(i64::MAX));
            }
        }
        Err(error) => {
            let kind = crate::event::wire_name(&error.kind);
            record_error(span, kind.as_deref().unwrap_or("provider_error"));
        }
    }
}

/// Marks a span as failed with `error_type`.
pub fn record_error(span: &Span, error_type: &str) {
    span.record(ERROR_TYPE, error_type);
    span.record("otel.status_code", "ERROR");
}
