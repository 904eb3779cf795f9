//! Which failures are worth another attempt, and which should move to the next model.

use looprail_loop_core::provider::{ProviderError, ProviderErrorKind};
use looprail_loop_core::tool::{ToolError, ToolErrorKind};

/// How a model-call failure is handled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorClass {
    /// May pass if tried again (timeouts, connection errors, 408/409/425, 429, 5xx, overload):
    /// retried, then handed to the next model of a fallback chain.
    Transient,
    /// This model cannot serve the call (not found, not served right now): not retried, but the
    /// next model may serve it.
    ModelUnavailable,
    /// Would fail anywhere (bad credentials, an invalid request): neither retried nor handed on.
    Permanent,
}

/// Classifies a provider error. `x-should-retry` wins over the kind (see
/// [`ProviderError::transient`]).
pub fn classify(error: &ProviderError) -> ErrorClass {
    if error.transient() {
        ErrorClass::Transient
    } else if error.kind == ProviderErrorKind::ModelUnavailable {
        ErrorClass::ModelUnavailable
    } else {
        ErrorClass::Permanent
    }
}

/// The tool-error kind for an HTTP status a tool received, so HTTP-backed tools classify their
/// failures the same way: 408 and timeouts → timeout, 429 → rate limited, 5xx → server.
pub fn tool_error_for_status(status: u16, message: impl Into<String>) -> ToolError {
    let kind = match status {
        408 | 504 => ToolErrorKind::Timeout,
        429 => ToolErrorKind::RateLimited,
        500..=599 => ToolErrorKind::Server,
        _ => ToolErrorKind::Failed,
    };
    ToolError::new(kind, message)
}

/// Classifies an error text from a tool that only reports text (a shell, a wrapped client):
/// timeouts, refused or reset connections, 429 and 5xx mentions are transient.
pub fn tool_error_from_text(message: &str) -> ToolError {
    let lower = message.to_lowercase();
    let kind = if lower.contains("timed out") || lower.contains("timeout") {
        ToolErrorKind::Timeout
    } else if lower.contains("connection refused") || lower.contains("connection reset") {
        ToolErrorKind::Connection
    } else if lower.contains("429") || lower.contains("too many requests") {
        ToolErrorKind::RateLimited
    } else if ["500", "502", "503", "504", "internal server error", "service unavailable", "bad gateway"]
        .iter()
        .any(|n| lower.contains(n))
    {
        ToolErrorKind::Server
    } else {
        ToolErrorKind::Failed
    };
    ToolError::new(kind, message)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auth_and_invalid_requests_are_permanent_and_unavailable_models_hand_on() {
        let e = |kind| ProviderError::new(kind, "x");
        assert_eq!(classify(&e(ProviderErrorKind::Auth)), ErrorClass::Permanent);
        assert_eq!(classify(&e(ProviderErrorKind::InvalidRequest)), ErrorClass::Permanent);
        assert_eq!(classify(&e(ProviderErrorKind::ModelUnavailable)), ErrorClass::ModelUnavailable);
        assert_eq!(classify(&e(ProviderErrorKind::Overloaded)), ErrorClass::Transient);
        let mut advised = e(ProviderErrorKind::RateLimited);
        advised.should_retry = Some(false);
        assert_eq!(classify(&advised), ErrorClass::Permanent);
    }

    #[test]
    fn tool_errors_are_classified_from_status_and_text() {
        assert!(tool_error_for_status(503, "down").transient());
        assert!(tool_error_for_status(429, "slow").transient());
        assert!(!tool_error_for_status(404, "missing").transient());
        assert!(tool_error_from_text("curl: (7) Failed to connect: Connection refused").transient());
        assert!(tool_error_from_text("request timed out after 30s").transient());
        assert!(!tool_error_from_text("No such file or directory").transient());
    }
}
