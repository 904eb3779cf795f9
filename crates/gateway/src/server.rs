//! The HTTP layer: axum routes that parse, ask the [`Gate`](crate::Gate), call the upstream and
//! answer in the client's format. Each conversation's state lives in the run store, so a
//! restarted gateway, or a second replica on the same store, goes on with it.

use std::sync::Arc;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, Response, StatusCode};
use axum::routing::{get, post};
use looprail_guardrails::replay::ErrorPatterns;
use looprail_journal::now_ms;
use looprail_loop_core::message::Message;
use serde_json::Value;

use crate::Gateway;
use crate::conversation::{ConversationState, Verdict, final_instruction};
use crate::identity::{self, LOOKBACK, RUN_HEADER};
use crate::wire::Api;

/// The routes: `POST /v1/chat/completions`, `POST /v1/messages`, `GET /v1/models`,
/// `GET /healthz`.
pub fn router(gateway: Arc<Gateway>) -> Router {
    let limit = gateway.body_limit;
    Router::new()
        .route("/v1/chat/completions", post(openai))
        .route("/v1/messages", post(anthropic))
        .route("/v1/models", get(models))
        .route("/healthz", get(|| async { "ok" }))
        .layer(DefaultBodyLimit::max(limit))
        .with_state(gateway)
}

fn reply(status: u16, content_type: &str, body: impl Into<Body>, run: Option<&str>) -> Response<Body> {
    let mut builder = Response::builder()
        .status(StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_GATEWAY))
        .header("content-type", content_type);
    if let Some(run) = run {
        builder = builder.header(RUN_HEADER, run);
    }
    builder.body(body.into()).unwrap_or_default()
}

fn json(status: u16, body: &Value, run: Option<&str>) -> Response<Body> {
    reply(status, "application/json", body.to_string(), run)
}

async fn openai(State(gateway): State<Arc<Gateway>>, headers: HeaderMap, body: Bytes) -> Response<Body> {
    gateway.handle(Api::OpenAi, "/v1/chat/completions", &headers, body).await
}

async fn anthropic(State(gateway): State<Arc<Gateway>>, headers: HeaderMap, body: Bytes) -> Response<Body> {
    gateway.handle(Api::Anthropic, "/v1/messages", &headers, body).await
}

async fn models(State(gateway): State<Arc<Gateway>>, headers: HeaderMap) -> Response<Body> {
    if !gateway.authorized(&headers) {
        return refused(Api::OpenAi);
    }
    let url = format!("{}/v1/models", gateway.upstream.openai.trim_end_matches('/'));
    let mut request = gateway.http.get(url);
    let key = gateway.upstream.openai_key.clone().map(|k| format!("Bearer {k}"));
    let pass = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
        .filter(|_| gateway.require_key.is_none());
    if let Some(auth) = key.or(pass) {
        request = request.header("authorization", auth);
    }
    match request.send().await {
        Ok(response) => {
            let status = response.status().as_u16();
            let body = response.bytes().await.unwrap_or_default();
            reply(status, "application/json", body, None)
        }
        Err(e) => json(502, &Api::OpenAi.error("api_error", &format!("upstream unreachable: {e}")), None),
    }
}

impl Gateway {
    /// Checks the client's token when the gateway requires one.
    fn authorized(&self, headers: &HeaderMap) -> bool {
        let Some(required) = &self.require_key else { return true };
        let header =
            |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned();
        let bearer = header("authorization");
        let given = bearer.strip_prefix("Bearer ").map(str::to_owned).unwrap_or_else(|| header("x-api-key"));
        &given == required
    }

    async fn load(&self, key: &str) -> Option<Value> {
        self.store.load_journal(key).await.ok().flatten()
    }

    /// The conversation a request continues (or a new one): the header's, else the one whose
    /// answered history the request extends, looked up in this replica's memory first and then
    /// in the store, every candidate in one query.
    async fn identify(&self, api: Api, headers: &HeaderMap, fingerprints: &[u64]) -> ConversationState {
        // A client-chosen id is a store key: short and printable, or ignored.
        let named = headers
            .get(RUN_HEADER)
            .and_then(|v| v.to_str().ok())
            .filter(|id| !id.is_empty() && id.len() <= 128 && id.chars().all(|c| c.is_ascii_graphic()))
            .map(str::to_owned);
        let last = fingerprints.len().saturating_sub(1);
        let candidates = &fingerprints[last.saturating_sub(LOOKBACK)..];
        let id = match named {
            Some(id) => Some(id),
            None => {
                let remembered = self
                    .recent
                    .lock()
                    .ok()
                    .and_then(|recent| candidates.iter().rev().find_map(|f| recent.get(f).cloned()));
                match remembered {
                    Some(id) => Some(id),
                    None => {
                        let keys: Vec<String> = candidates.iter().map(|f| identity::prefix_key(*f)).collect();
                        let found = self.store.load_journals(&keys).await.unwrap_or_default();
                        // The longest answered history the request extends.
                        keys.iter()
                            .rev()
                            .find_map(|k| found.iter().find(|(key, _)| key == k))
                            .and_then(|(_, v)| v["id"].as_str().map(str::to_owned))
                    }
                }
            }
        };
        let Some(id) = id else {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos());
            let id = identity::new_id(fingerprints[0] ^ u64::from(api == Api::Anthropic), now);
            return ConversationState { id, ..ConversationState::default() };
        };
        match self.load(&identity::state_key(&id)).await.and_then(|v| serde_json::from_value(v).ok()) {
            Some(state) => state,
            None => ConversationState { id, ..ConversationState::default() },
        }
    }

    /// One chat request, end to end.
    pub(crate) async fn handle(
        self: &Arc<Self>,
        api: Api,
        path: &str,
        headers: &HeaderMap,
        raw: Bytes,
    ) -> Response<Body> {
        if !self.authorized(headers) {
            return refused(api);
        }
        let mut body: Value = match serde_json::from_slice(&raw) {
            Ok(body @ Value::Object(_)) => body,
            _ => {
                return json(400, &api.error("invalid_request_error", "the body is not a JSON object"), None);
            }
        };
        let mut messages = match api.messages(&body) {
            Ok(messages) => messages,
            Err(e) => return json(400, &api.error("invalid_request_error", &e), None),
        };
        let tools = api.tool_names(&body);
        let fingerprints = identity::prefixes(api_name(api), &body["tools"], &messages);
        let mut state = self.identify(api, headers, &fingerprints).await;
        // Only what the guards see for the first time needs its error flags.
        let new = if state.seen <= messages.len() { state.seen } else { 0 };
        ErrorPatterns::default().classify(&mut messages[new..]);
        let verdict = self.gate.observe(&mut state, &messages, &tools, now_ms());
        let stream = api.wants_stream(&body);
        let include_usage =
            body.pointer("/stream_options/include_usage").and_then(Value::as_bool).unwrap_or(false);
        let relay = stream && matches!(verdict, Verdict::Forward { .. });
        let untouched = body.get("stream").is_none_or(|_| relay)
            && matches!(&verdict, Verdict::Forward { instructions, force_tool: None } if instructions.is_empty());
        match &verdict {
            Verdict::Forward { instructions, force_tool } => {
                for text in instructions {
                    api.add_instruction(&mut body, text);
                }
                if let Some(tool) = force_tool {
                    api.force_tool(&mut body, tool);
                }
            }
            Verdict::Conclude { reason } => {
                // Asked for whole (the final answer is re-emitted as a stream when wanted).
                tracing::info!(name: "agent.fallback.reply", target: "looprail", conversation = %state.id, %reason, "gateway concluded the conversation");
                api.without_tools(&mut body);
                api.add_instruction(&mut body, &final_instruction(reason));
            }
        }
        // An unchanged request goes upstream as the client sent it, not serialised again.
        let outgoing = if untouched { raw } else { Bytes::from(body.to_string()) };
        let pass_key = self.require_key.is_none();
        let history = fingerprints.last().copied().unwrap_or_default();
        let done = Done { api, state, messages, new, history };
        let response = match self.upstream.open(&self.http, api, path, headers, pass_key, outgoing).await {
            Ok(response) => response,
            Err(answer) => {
                self.save(&done.state, None).await;
                return json(answer.status, &answer.body, Some(&done.state.id));
            }
        };
        let is_stream = response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|t| t.starts_with("text/event-stream"));
        if relay && is_stream {
            return self.relay(done, &body, response);
        }
        let answer = crate::upstream::read_json(api, response).await;
        let id = done.state.id.clone();
        let (input, output) = api.usage(&answer);
        self.finish(done, api.reply_message(&answer), input, output).await;
        if stream {
            reply(200, "text/event-stream", api.to_stream(&answer, include_usage), Some(&id))
        } else {
            json(200, &answer, Some(&id))
        }
    }

    /// Passes the upstream's event stream to the client as it arrives and, when it ends, counts
    /// the reply it carried and stores the conversation. A stream that breaks ends with the
    /// API's error event.
    fn relay(self: &Arc<Self>, done: Done, body: &Value, response: reqwest::Response) -> Response<Body> {
        let id = done.state.id.clone();
        let reader = crate::relay::Reader::new(done.api, &crate::relay::model_of(body));
        let upstream = Box::pin(response.bytes_stream());
        let start = (upstream, Some((reader, done, Arc::clone(self))));
        let events = futures_util::stream::unfold(start, |(mut upstream, open)| async move {
            let (mut reader, done, gateway) = open?;
            match futures_util::StreamExt::next(&mut upstream).await {
                Some(Ok(bytes)) => {
                    reader.feed(&bytes);
                    if !reader.is_done() {
                        return Some((
                            Ok::<Bytes, std::io::Error>(bytes),
                            (upstream, Some((reader, done, gateway))),
                        ));
                    }
                    // The terminal event: the conversation is stored before the client sees it,
                    // so its next request already finds it.
                    gateway.complete(reader, done).await;
                    Some((Ok(bytes), (upstream, None)))
                }
                Some(Err(e)) => {
                    let api = done.api;
                    gateway.save(&done.state, None).await;
                    Some((
                        Ok(Bytes::from(api.stream_error(&format!("upstream stream broke: {e}")))),
                        (upstream, None),
                    ))
                }
                None => {
                    gateway.complete(reader, done).await;
                    None
                }
            }
        });
        let mut response = reply(200, "text/event-stream", Body::from_stream(events), Some(&id));
        response.headers_mut().insert("cache-control", axum::http::HeaderValue::from_static("no-cache"));
        response
    }

    /// Ends a relayed stream: stores what the reply it carried changed, or, when it ended early,
    /// only the state.
    async fn complete(&self, reader: crate::relay::Reader, done: Done) {
        match reader.finish() {
            Ok(reply) => {
                let (input, output) = crate::relay::usage_of(&reply);
                self.finish(done, Some(crate::relay::message_of(&reply)), input, output).await;
            }
            Err(e) => {
                tracing::warn!(conversation = %done.state.id, error = %e, "gateway: a relayed stream ended early");
                self.save(&done.state, None).await;
            }
        }
    }

    /// Counts a reply's tokens, records the new messages and the reply, and stores the state
    /// with the fingerprint of the history the client now has.
    async fn finish(&self, done: Done, reply: Option<Message>, input: u64, output: u64) {
        let Done { mut state, mut messages, new, history, .. } = done;
        self.gate.replied(&mut state, input, output);
        let fingerprint = reply.as_ref().map(|reply| identity::extend(history, reply));
        if let Some(dir) = &self.record_dir {
            // The previous reply comes back at the start of the new messages: recorded once.
            let from = if state.recorded <= messages.len() { state.recorded } else { new };
            messages.drain(..from);
            messages.extend(reply);
            match crate::record::append(dir, &state.id, &messages) {
                Ok(()) => state.recorded = from + messages.len(),
                Err(e) => {
                    tracing::warn!(conversation = %state.id, error = %e, "gateway: conversation not recorded")
                }
            }
        }
        self.save(&state, fingerprint).await;
    }

    /// Stores the state and the fingerprint of the history the client now has, in one
    /// transaction.
    async fn save(&self, state: &ConversationState, fingerprint: Option<u64>) {
        let mut entries =
            vec![(identity::state_key(&state.id), serde_json::to_value(state).unwrap_or_default())];
        entries.extend(fingerprint.map(|f| (identity::prefix_key(f), serde_json::json!({ "id": state.id }))));
        if let Err(e) = self.store.save_journals(&entries).await {
            tracing::warn!(conversation = %state.id, error = %e, "gateway: conversation state not saved");
        }
        if let Some(fingerprint) = fingerprint
            && let Ok(mut recent) = self.recent.lock()
        {
            if recent.len() > 10_000 {
                recent.clear();
            }
            recent.insert(fingerprint, state.id.clone());
        }
    }
}

/// What a request leaves to do once its reply is known.
struct Done {
    api: Api,
    state: ConversationState,
    /// The client's history.
    messages: Vec<Message>,
    /// How much of it the guards had seen before this request.
    new: usize,
    /// The fingerprint of the client's history.
    history: u64,
}

fn refused(api: Api) -> Response<Body> {
    json(401, &api.error("authentication_error", "missing or wrong gateway key"), None)
}

fn api_name(api: Api) -> &'static str {
    match api {
        Api::OpenAi => "openai",
        Api::Anthropic => "anthropic",
    }
}
