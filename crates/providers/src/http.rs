//! The HTTP layer both clients share: the reqwest client, error mapping from status, headers
//! and body, and `retry-after` parsing.

use std::time::{Duration, SystemTime};

use looprail_loop_core::provider::{ProviderError, ProviderErrorKind};
use reqwest::header::HeaderMap;
use serde_json::Value;

use crate::config::ClientConfig;

/// Builds the reqwest client for a config (rustls with the ring provider).
pub(crate) fn client(config: &ClientConfig) -> Result<reqwest::Client, ProviderError> {
    // Installing twice is harmless: the first provider stays.
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .connect_timeout(config.connect_timeout)
        .timeout(config.request_timeout)
        .build()
        .map_err(|e| {
            ProviderError::new(ProviderErrorKind::Other, format!("cannot build the HTTP client: {e}"))
        })
}

/// Maps a transport failure (no HTTP status).
pub(crate) fn transport_error(error: &reqwest::Error) -> ProviderError {
    let kind = if error.is_timeout() {
        ProviderErrorKind::Timeout
    } else if error.is_connect() || error.is_request() {
        ProviderErrorKind::Connection
    } else if error.is_body() || error.is_decode() {
        ProviderErrorKind::StreamBroken
    } else {
        ProviderErrorKind::Connection
    };
    ProviderError::new(kind, format!("request failed: {error}"))
}

/// `retry-after-ms`, then `retry-after` as seconds or an HTTP date.
pub(crate) fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let text = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).map(str::trim);
    if let Some(ms) = text("retry-after-ms").and_then(|v| v.parse::<f64>().ok())
        && ms.is_finite()
        && ms >= 0.0
    {
        return Some(Duration::from_secs_f64(ms / 1000.0));
    }
    let value = text("retry-after")?;
    if let Ok(seconds) = value.parse::<f64>() {
        return (seconds.is_finite() && seconds >= 0.0).then(|| Duration::from_secs_f64(seconds));
    }
    let when = httpdate::parse_http_date(value).ok()?;
    Some(when.duration_since(SystemTime::now()).unwrap_or(Duration::ZERO))
}

fn looks_like_context_overflow(text: &str) -> bool {
    let lower = text.to_lowercase();
    [
        "context_length_exceeded",
        "maximum context length",
        "prompt is too long",
        "context window",
        "too many tokens",
        "input is too long",
    ]
    .iter()
    .any(|needle| lower.contains(needle))
}

fn kind_for(status: u16, code: Option<&str>, message: &str) -> ProviderErrorKind {
    // The provider's error type is more precise than the status when it is known.
    match code {
        Some("overloaded_error") => return ProviderErrorKind::Overloaded,
        Some("rate_limit_error" | "rate_limit_exceeded") => return ProviderErrorKind::RateLimited,
        Some("authentication_error" | "permission_error" | "invalid_api_key") => {
            return ProviderErrorKind::Auth;
        }
        Some("context_length_exceeded") => return ProviderErrorKind::ContextWindowExceeded,
        Some("model_not_found") => return ProviderErrorKind::ModelUnavailable,
        _ => {}
    }
    match status {
        400 | 413 if looks_like_context_overflow(message) => ProviderErrorKind::ContextWindowExceeded,
        413 => ProviderErrorKind::ContextWindowExceeded,
        400 | 422 => ProviderErrorKind::InvalidRequest,
        401 | 403 => ProviderErrorKind::Auth,
        404 if message.to_lowercase().contains("model") => ProviderErrorKind::ModelUnavailable,
        404 => ProviderErrorKind::InvalidRequest,
        408 | 409 | 425 => ProviderErrorKind::TryAgain,
        429 => ProviderErrorKind::RateLimited,
        529 => ProviderErrorKind::Overloaded,
        503 if message.to_lowercase().contains("overload") => ProviderErrorKind::Overloaded,
        500..=599 => ProviderErrorKind::Server,
        _ => ProviderErrorKind::Other,
    }
}

/// Reads the `{"error": {...}}` object both APIs use (OpenAI: type/code/message; Anthropic:
/// type/message and a top-level request_id).
pub(crate) fn error_fields(body: &Value) -> (Option<String>, Option<String>, Option<String>) {
    let error = body.get("error").unwrap_or(body);
    let code = error
        .get("type")
        .and_then(Value::as_str)
        .filter(|t| *t != "error")
        .or_else(|| error.get("code").and_then(Value::as_str))
        .map(str::to_owned);
    let message = error.get("message").and_then(Value::as_str).map(str::to_owned);
    let request_id = body.get("request_id").and_then(Value::as_str).map(str::to_owned);
    (code, message, request_id)
}

/// An error from a non-2xx response.
pub(crate) fn status_error(status: u16, headers: &HeaderMap, body: &str) -> ProviderError {
    let parsed: Option<Value> = serde_json::from_str(body).ok();
    let (code, message, body_request_id) = parsed.as_ref().map(error_fields).unwrap_or_default();
    let message = message.unwrap_or_else(|| {
        let snippet = one_line(body, 300);
        if snippet.is_empty() { format!("HTTP {status} with an empty body") } else { snippet }
    });
    let mut error = ProviderError::new(kind_for(status, code.as_deref(), &message), message);
    error.status = Some(status);
    error.provider_code = code;
    error.retry_after = retry_after(headers);
    error.should_retry =
        headers.get("x-should-retry").and_then(|v| v.to_str().ok()).and_then(|v| match v.trim() {
            "true" => Some(true),
            "false" => Some(false),
            _ => None,
        });
    error.request_id = ["x-request-id", "request-id"]
        .iter()
        .find_map(|h| headers.get(*h).and_then(|v| v.to_str().ok()).map(str::to_owned))
        .or(body_request_id);
    error.rate_limits = headers
        .iter()
        .filter(|(name, _)| {
            let name = name.as_str();
            name.starts_with("x-ratelimit-") || name.starts_with("anthropic-ratelimit-")
        })
        .filter_map(|(name, value)| Some((name.as_str().to_owned(), value.to_str().ok()?.to_owned())))
        .collect();
    error
}

/// An error carried inside a stream (`{"type": "error", ...}` or `{"error": {...}}`).
pub(crate) fn stream_error(body: &Value) -> ProviderError {
    let (code, message, request_id) = error_fields(body);
    let message = message.unwrap_or_else(|| "the stream reported an error".to_owned());
    let kind = match code.as_deref() {
        Some("overloaded_error") => ProviderErrorKind::Overloaded,
        Some("rate_limit_error" | "rate_limit_exceeded") => ProviderErrorKind::RateLimited,
        Some("api_error" | "server_error") => ProviderErrorKind::Server,
        Some("invalid_request_error") => ProviderErrorKind::InvalidRequest,
        _ => ProviderErrorKind::StreamBroken,
    };
    let mut error = ProviderError::new(kind, message);
    error.provider_code = code;
    error.request_id = request_id;
    error
}

/// Posts `body` and returns the response once its status is 2xx; any other status becomes a
/// [`ProviderError`] built from the status, headers and body. With `first_byte`, a response
/// whose status and headers take longer is given up as a [`ProviderErrorKind::Timeout`].
pub(crate) async fn post(
    client: &reqwest::Client,
    url: &str,
    headers: &[(String, String)],
    body: &Value,
    first_byte: Option<Duration>,
) -> Result<reqwest::Response, ProviderError> {
    let payload = serde_json::to_vec(body).map_err(|e| {
        ProviderError::new(ProviderErrorKind::InvalidRequest, format!("cannot encode the request: {e}"))
    })?;
    let mut request = client.post(url).header("content-type", "application/json").body(payload);
    for (name, value) in headers {
        request = request.header(name.as_str(), value.as_str());
    }
    let sent = request.send();
    let response = match first_byte {
        Some(limit) => tokio::time::timeout(limit, sent).await.map_err(|_| {
            ProviderError::new(
                ProviderErrorKind::Timeout,
                format!(
                    "no answer within {} s of sending the request (first-byte timeout)",
                    limit.as_secs_f32()
                ),
            )
        })?,
        None => sent.await,
    }
    .map_err(|e| transport_error(&e))?;
    let status = response.status().as_u16();
    if (200..300).contains(&status) {
        return Ok(response);
    }
    let response_headers = response.headers().clone();
    let text = response.text().await.unwrap_or_default();
    Err(status_error(status, &response_headers, &text))
}

/// At most `max` characters of `text` on one line (an HTML error page's CRLFs and
/// indentation folded to single spaces), so error messages stay one readable line.
pub(crate) fn one_line(text: &str, max: usize) -> String {
    let folded = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match folded.char_indices().nth(max) {
        Some((cut, _)) => format!("{}…", &folded[..cut]),
        None => folded,
    }
}

/// Checks that a 2xx answer to a streaming request is an event stream. Anything else (a
/// proxy's HTML page with status 200) is a malformed response, reported as such, not a broken
/// stream to retry.
pub(crate) async fn event_stream(response: reqwest::Response) -> Result<reqwest::Response, ProviderError> {
    let content_type =
        response.headers().get("content-type").and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned();
    if content_type.is_empty() || content_type.starts_with("text/event-stream") {
        return Ok(response);
    }
    let request_id = response.headers().get("x-request-id").and_then(|v| v.to_str().ok()).map(str::to_owned);
    let text = response.text().await.unwrap_or_default();
    let mut error = ProviderError::new(
        ProviderErrorKind::MalformedResponse,
        format!("expected an event stream, got `{content_type}`: {}", one_line(&text, 200)),
    );
    error.request_id = request_id;
    Err(error)
}

/// Reads a 2xx response as JSON; anything else (an HTML page from a proxy) is a typed error.
pub(crate) async fn json_body(response: reqwest::Response) -> Result<Value, ProviderError> {
    let content_type =
        response.headers().get("content-type").and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned();
    let request_id = response.headers().get("x-request-id").and_then(|v| v.to_str().ok()).map(str::to_owned);
    let text = response.text().await.map_err(|e| transport_error(&e))?;
    serde_json::from_str(&text).map_err(|e| {
        let snippet = one_line(&text, 200);
        let mut error = ProviderError::new(
            ProviderErrorKind::MalformedResponse,
            format!("expected a JSON body, got `{content_type}` ({e}): {snippet}"),
        );
        error.request_id = request_id;
        error
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::{HeaderName, HeaderValue};

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (k, v) in pairs {
            map.insert(HeaderName::from_static(k), HeaderValue::from_str(v).unwrap());
        }
        map
    }

    #[test]
    fn error_text_is_folded_to_one_line() {
        let page = "<html>\r\n  <body>\r\n<h1>502 Bad Gateway</h1>\r\n</body></html>";
        let e = status_error(502, &HeaderMap::new(), page);
        assert!(!e.message.contains('\n') && !e.message.contains('\r'), "{}", e.message);
        assert!(e.message.contains("<h1>502 Bad Gateway</h1>"));
        assert_eq!(one_line(&"x ".repeat(500), 10), "x x x x x …");
    }

    #[test]
    fn retry_after_reads_milliseconds_seconds_and_dates() {
        assert_eq!(retry_after(&headers(&[("retry-after", "7")])), Some(Duration::from_secs(7)));
        assert_eq!(
            retry_after(&headers(&[("retry-after-ms", "1500"), ("retry-after", "9")])),
            Some(Duration::from_millis(1500))
        );
        let future = httpdate::fmt_http_date(SystemTime::now() + Duration::from_secs(120));
        let parsed = retry_after(&headers(&[("retry-after", &future)])).unwrap();
        assert!(parsed > Duration::from_secs(100) && parsed <= Duration::from_secs(120), "{parsed:?}");
        assert_eq!(retry_after(&headers(&[("retry-after", "soon")])), None);
    }

    #[test]
    fn statuses_and_error_types_map_to_kinds() {
        let e = status_error(
            400,
            &HeaderMap::new(),
            r#"{"error": {"message": "This model's maximum context length is 128000 tokens", "type": "invalid_request_error", "code": "context_length_exceeded"}}"#,
        );
        assert_eq!(e.kind, ProviderErrorKind::ContextWindowExceeded);
        let e = status_error(
            529,
            &HeaderMap::new(),
            r#"{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}"#,
        );
        assert_eq!(e.kind, ProviderErrorKind::Overloaded);
        assert!(e.transient());
        let e = status_error(
            401,
            &HeaderMap::new(),
            r#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}"#,
        );
        assert_eq!(e.kind, ProviderErrorKind::Auth);
        assert!(!e.transient());
        for (status, kind) in [
            (408, ProviderErrorKind::TryAgain),
            (409, ProviderErrorKind::TryAgain),
            (425, ProviderErrorKind::TryAgain),
            (502, ProviderErrorKind::Server),
        ] {
            let e = status_error(status, &HeaderMap::new(), "");
            assert_eq!(e.kind, kind, "{status}");
            assert!(e.transient());
        }
    }
}
