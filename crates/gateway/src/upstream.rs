//! Calls to the operator's upstream: fixed hosts, the gateway's own key or the client's,
//! retries with backoff that honour `retry-after` on 429, 5xx and 529, and then the model
//! fallback chain (F23): when the client's model keeps failing, the same request goes to each
//! fallback model in turn, with its own retries.

use std::time::Duration;

use axum::http::{HeaderMap, HeaderValue, Method};
use looprail_loop_core::json_text::json_text;
use serde_json::Value;

use crate::http_client::Outgoing;
use crate::wire::Api;

/// An upstream answer: its status and body (a provider error passes through as it came).
#[derive(Debug, Clone)]
pub struct Answer {
    /// The HTTP status.
    pub status: u16,
    /// The JSON body.
    pub body: Value,
}

/// Where to send requests and with which key.
#[derive(Debug, Clone)]
pub struct Upstream {
    /// The OpenAI-compatible base URL (without `/v1`).
    pub openai: String,
    /// The Anthropic base URL (without `/v1`).
    pub anthropic: String,
    /// The gateway's OpenAI key; `None` passes the client's own key through.
    pub openai_key: Option<String>,
    /// The gateway's Anthropic key; likewise.
    pub anthropic_key: Option<String>,
    /// Retries after the first attempt.
    pub retries: u32,
    /// The longest `retry-after` honoured (a longer one ends the retries).
    pub max_retry_after: Duration,
    /// The first backoff delay (doubled each retry).
    pub backoff: Duration,
    /// Models tried in order on the OpenAI API when the client's model keeps failing.
    pub openai_fallbacks: Vec<String>,
    /// Likewise on the Anthropic API.
    pub anthropic_fallbacks: Vec<String>,
}

/// One client request's call upstream: over which client, on which API and path, with the
/// client's headers (for its key and version headers) and whether its key may go upstream.
#[derive(Debug, Clone, Copy)]
pub struct Call<'a> {
    /// The HTTP client.
    pub http: &'a crate::http_client::HttpClient,
    /// The API the client spoke.
    pub api: Api,
    /// The path called (`/v1/chat/completions`, `/v1/messages`).
    pub path: &'a str,
    /// The client's request headers.
    pub client: &'a HeaderMap,
    /// Whether the client's own key is passed upstream when the gateway has none.
    pub pass_key: bool,
}

fn retryable(status: u16) -> bool {
    matches!(status, 408 | 429 | 500 | 502 | 503 | 504 | 529)
}

/// `retry-after-ms`, or `retry-after` in seconds.
fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    let read = |name: &str| headers.get(name)?.to_str().ok()?.trim().parse::<f64>().ok();
    read("retry-after-ms")
        .map(|ms| Duration::from_secs_f64(ms.max(0.0) / 1000.0))
        .or_else(|| read("retry-after").map(|s| Duration::from_secs_f64(s.max(0.0))))
}

impl Upstream {
    /// A `GET` of `call.path` on the API's upstream, with the same keys and version headers as
    /// its requests (`GET /v1/models`).
    pub fn get(&self, call: &Call<'_>) -> Outgoing {
        self.outgoing(call, Method::GET)
    }

    /// `method` on `call.path` at the API's upstream, with the gateway's key (or the client's,
    /// when it may pass) and the client's organisation, project and version headers.
    fn outgoing(&self, call: &Call<'_>, method: Method) -> Outgoing {
        let Call { api, path, client, pass_key, .. } = *call;
        // A client's header passes as it came, when it is text (as reqwest took it).
        let header = |name: &str| client.get(name).filter(|v| v.to_str().is_ok()).cloned();
        let (base, key_header, own_key, passed): (&str, _, _, &[&'static str]) = match api {
            Api::OpenAi | Api::Responses => (
                &self.openai,
                "authorization",
                self.openai_key.as_ref().map(|k| format!("Bearer {k}")),
                &["openai-organization", "openai-project"],
            ),
            Api::Anthropic => (&self.anthropic, "x-api-key", self.anthropic_key.clone(), &["anthropic-beta"]),
        };
        let mut outgoing = Outgoing::new(method, format!("{}{path}", base.trim_end_matches('/')));
        match (own_key, header(key_header).filter(|_| pass_key)) {
            (Some(own), _) => outgoing = outgoing.header(key_header, own, true),
            (None, Some(client_key)) => outgoing = outgoing.header(key_header, client_key, true),
            (None, None) => {}
        }
        for &name in passed {
            if let Some(value) = header(name) {
                outgoing = outgoing.header(name, value, false);
            }
        }
        if api == Api::Anthropic {
            let version = header("anthropic-version").unwrap_or(HeaderValue::from_static("2023-06-01"));
            outgoing = outgoing.header("anthropic-version", version, false);
        }
        outgoing
    }

    /// The fallback models of `api`, in order.
    pub fn fallbacks(&self, api: Api) -> &[String] {
        match api {
            Api::OpenAi | Api::Responses => &self.openai_fallbacks,
            Api::Anthropic => &self.anthropic_fallbacks,
        }
    }

    /// Sends `body` and returns the upstream's response once it answers 2xx (its body not
    /// read: it may be a stream), retrying transient failures before that, then trying each
    /// fallback model. A failure that outlasts them all is the [`Answer`] the last attempt gave
    /// (a provider error) or, when no upstream answered, a 502 in the API's format.
    pub async fn open(&self, call: &Call<'_>, body: axum::body::Bytes) -> Result<reqwest::Response, Answer> {
        let failed = match self.open_model(call, body.clone()).await {
            Ok(response) => return Ok(response),
            Err(answer) => answer,
        };
        let fallbacks = self.fallbacks(call.api);
        if fallbacks.is_empty() || !retryable(failed.status) {
            return Err(failed);
        }
        let Ok(mut request) = serde_json::from_slice::<Value>(&body) else { return Err(failed) };
        let mut last = failed;
        let first = request["model"].as_str().unwrap_or_default().to_owned();
        for model in fallbacks.iter().filter(|m| **m != first) {
            tracing::warn!(name: "agent.model.fallback", target: "looprail", from = %first, to = %model, status = last.status, "gateway falls back to another model");
            request["model"] = Value::String(model.clone());
            let body = axum::body::Bytes::from(json_text(&request));
            match self.open_model(call, body).await {
                Ok(response) => return Ok(response),
                Err(answer) if retryable(answer.status) => last = answer,
                Err(answer) => return Err(answer),
            }
        }
        Err(last)
    }

    /// One model, with its retries.
    async fn open_model(
        &self,
        call: &Call<'_>,
        body: axum::body::Bytes,
    ) -> Result<reqwest::Response, Answer> {
        let mut attempt = 0;
        loop {
            let request = self
                .outgoing(call, Method::POST)
                .header("content-type", HeaderValue::from_static("application/json"), false)
                .body(body.clone());
            let sent = call.http.send(request).await;
            let (status, wait, answer) = match sent {
                Ok(response) if response.status().is_success() => return Ok(response),
                Ok(response) => {
                    let status = response.status().as_u16();
                    let wait = retry_after(response.headers());
                    (status, wait, Answer { status, body: read_json(call.api, response).await })
                }
                Err(e) => (
                    502,
                    None,
                    Answer {
                        status: 502,
                        body: call.api.error("api_error", &format!("upstream unreachable: {e}")),
                    },
                ),
            };
            if !retryable(status) || attempt >= self.retries {
                return Err(answer);
            }
            let backoff = self.backoff.saturating_mul(1 << attempt.min(10));
            let delay = match wait {
                Some(wait) if wait > self.max_retry_after => return Err(answer),
                Some(wait) => wait,
                None => backoff,
            };
            tracing::info!(name: "agent.model.retry", target: "looprail", status, attempt, delay_ms = delay.as_millis() as u64, "gateway upstream retry");
            tokio::time::sleep(delay).await;
            attempt += 1;
        }
    }

    /// [`Upstream::open`] and the whole JSON body.
    pub async fn send(&self, call: &Call<'_>, body: axum::body::Bytes) -> Answer {
        match self.open(call, body).await {
            Ok(response) => {
                let status = response.status().as_u16();
                match read_answer(call.api, response).await {
                    Ok((body, _)) => Answer { status, body },
                    // A success whose body is no answer is the upstream's failure.
                    Err(body) => Answer { status: 502, body },
                }
            }
            Err(answer) => answer,
        }
    }
}

/// A response's body as JSON, or an error body in the API's format saying why not.
pub(crate) async fn read_json(api: Api, response: reqwest::Response) -> Value {
    read_answer(api, response).await.map_or_else(|error| error, |(body, _)| body)
}

/// A response's body as JSON with the bytes it was read from, or the error body in the API's
/// format saying why it is not JSON.
pub(crate) async fn read_answer(
    api: Api,
    response: reqwest::Response,
) -> Result<(Value, axum::body::Bytes), Value> {
    let status = response.status().as_u16();
    match response.bytes().await {
        Ok(bytes) => {
            match serde_json::from_slice::<Value>(bytes.as_ref()) {
                Ok(value) => Ok((value, bytes)),
                Err(_) => Err(api
                    .error("api_error", &format!("upstream answered {status} with a body that is not JSON"))),
            }
        }
        Err(e) => Err(api.error("api_error", &format!("upstream body broke: {e}"))),
    }
}
