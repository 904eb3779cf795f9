//! The HTTP layer: axum routes that parse, ask the [`Gate`](crate::Gate), call the upstream and
//! answer in the client's format. Each conversation's state lives in the run store, so a
//! restarted gateway, or a second replica on the same store, goes on with it.

use std::sync::Arc;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, Response};
use axum::routing::{get, post};
use looprail_guardrails::replay::{ErrorClassifier, ErrorPatterns};
use looprail_journal::{JournalError, now_ms};
use looprail_loop_core::json_text::json_text;
use looprail_loop_core::message::Message;
use serde_json::Value;

use crate::compaction::{self, Plan, Summary};
use crate::conversation::{ConversationState, Stack, Verdict, final_instruction};
use crate::finish::{Done, Replied};
use crate::identity::{self, LOOKBACK, RUN_HEADER};
use crate::request::Request;
use crate::respond::{json, refused, reply};
use crate::response_chain::Start;
use crate::server_timing::Timing;
use crate::store_failure::Unprepared;
use crate::upstream::Call;
use crate::wire::Api;
use crate::{Gateway, passthrough};

/// The patterns that flag a tool result as an error, made ready to search once.
static ERROR_PATTERNS: std::sync::LazyLock<ErrorClassifier> =
    std::sync::LazyLock::new(|| ErrorPatterns::default().classifier());

/// The routes: `POST /v1/chat/completions`, `POST /v1/messages`, `POST /v1/responses`,
/// `GET /v1/models` (and
/// `/v1/models/{model}`), `POST /v1/messages/count_tokens`, `POST /v1/hooks/{agent}` (the
/// coding CLIs' hooks), `GET /healthz`.
pub fn router(gateway: Arc<Gateway>) -> Router {
    let limit = gateway.body_limit;
    Router::new()
        .route("/v1/chat/completions", post(openai))
        .route("/v1/messages", post(anthropic))
        .route("/v1/responses", post(crate::responses_route::responses))
        .route("/v1/models", get(passthrough::models))
        .route("/v1/models/{model}", get(passthrough::model))
        .route("/v1/messages/count_tokens", post(passthrough::count_tokens))
        .route("/v1/embeddings", post(passthrough::embeddings))
        .route("/v1/hooks/{agent}", post(crate::hooks_route::hooks))
        .route("/healthz", get(|| async { "ok" }))
        .fallback(passthrough::not_served)
        .layer(DefaultBodyLimit::max(limit))
        .with_state(gateway)
}

async fn openai(State(gateway): State<Arc<Gateway>>, headers: HeaderMap, body: Bytes) -> Response<Body> {
    gateway.handle(Api::OpenAi, "/v1/chat/completions", &headers, body, None).await
}

async fn anthropic(State(gateway): State<Arc<Gateway>>, headers: HeaderMap, body: Bytes) -> Response<Body> {
    gateway.handle(Api::Anthropic, "/v1/messages", &headers, body, None).await
}

impl Gateway {
    /// Checks the client's token when the gateway requires one.
    pub(crate) fn authorized(&self, headers: &HeaderMap) -> bool {
        let Some(required) = &self.require_key else { return true };
        let header =
            |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned();
        let bearer = header("authorization");
        let given = bearer.strip_prefix("Bearer ").map(str::to_owned).unwrap_or_else(|| header("x-api-key"));
        // In constant time: how much of a guess matches never shows in the time taken.
        subtle::ConstantTimeEq::ct_eq(given.as_bytes(), required.as_bytes()).into()
    }

    /// The conversation a request continues: the one the client names (`x-looprail-run`), else
    /// the one whose answered history the request extends, `None` for a new one. A history is
    /// known by the fingerprints of its last few prefixes (longest first), computed one at a
    /// time while this replica's memory knows none of them (a request usually extends the
    /// history answered last by a message or two); then a save still running behind its answer
    /// and the store are asked for all of them, the store in one query.
    async fn recognise(
        &self,
        headers: &HeaderMap,
        request: &mut Request<'_>,
        head: u64,
        last: Option<u64>,
    ) -> Result<Option<String>, Unprepared> {
        // A client-chosen id is a store key: short and printable, or ignored.
        let named = headers
            .get(RUN_HEADER)
            .and_then(|v| v.to_str().ok())
            .filter(|id| identity::storable_id(id))
            .map(str::to_owned);
        if named.is_some() {
            return Ok(named);
        }
        let len = request.len();
        let mut hashes: Vec<u64> = last.into_iter().collect(); // hashes[j] is message len - 1 - j
        let mut candidates = Vec::new();
        for j in 0..len.min(LOOKBACK) {
            if j + 1 < len && hashes.len() < j + 2 {
                hashes.push(request.identity_hash(len - 2 - j)?);
            }
            let candidate = identity::anchor(head, len - j, hashes.get(j + 1).copied(), hashes[j]);
            let remembered = self.recent.lock().ok().and_then(|recent| recent.get(&candidate).cloned());
            if remembered.is_some() {
                return Ok(remembered);
            }
            candidates.push(candidate);
        }
        let keys: Vec<String> = candidates.iter().map(|f| identity::prefix_key(*f)).collect();
        // A history whose save still runs behind its answer, else the store.
        if let Some(id) = keys.iter().find_map(|k| self.write_behind.pending_conversation(k)) {
            return Ok(Some(id));
        }
        if keys.is_empty() {
            return Ok(None);
        }
        let found = self.store.load_journals(&keys).await.map_err(Unprepared::Store)?;
        // The longest answered history the request extends.
        Ok(keys
            .iter()
            .find_map(|k| found.iter().find(|(key, _)| key == k))
            .and_then(|(_, v)| v["id"].as_str().map(str::to_owned)))
    }

    /// Conversation `id`'s state, the document it was read as and its live guard stack when
    /// kept (a new conversation's state when `id` is `None` or nothing is stored under it).
    async fn conversation(
        &self,
        id: Option<String>,
        head: u64,
    ) -> Result<(ConversationState, Option<Arc<Value>>, Option<Stack>), JournalError> {
        let Some(id) = id else {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos());
            let state = ConversationState { id: identity::new_id(head, now), ..ConversationState::default() };
            return Ok((state, None, None));
        };
        Ok(match self.load_state(&id).await? {
            Some((state, document, stack)) => (state, Some(document), stack),
            None => (ConversationState { id, ..ConversationState::default() }, None, None),
        })
    }

    /// Identifies the request's conversation and reads what is new in it: the head and the
    /// last few messages for identity, then the messages the guards have not seen (tool results
    /// flagged by the error patterns).
    async fn prepare(
        &self,
        api: Api,
        headers: &HeaderMap,
        request: &mut Request<'_>,
    ) -> Result<Done, Unprepared> {
        let len = request.len();
        let declared = self.declarations.of(request);
        let first = if request.is_empty() { None } else { Some(self.first_messages.identity_hash(request)?) };
        let head = identity::head_of(declared.head, first);
        let last = if len == 0 { None } else { Some(request.identity_hash(len - 1)?) };
        let id = self.recognise(headers, request, head, last).await?;
        let (mut state, stored, stack) = self.conversation(id, head).await.map_err(Unprepared::Store)?;
        let from = state.resume_at(len);
        // The last reply's items, for the references to them among the new items.
        request.know_items(&state.reply_items);
        let (mut new, starts) = request.messages(from..len)?;
        ERROR_PATTERNS.classify(&mut new);
        // Anthropic's system prompt comes apart from the messages: recorded once, first.
        let system =
            (from == 0).then(|| request.system_text()).filter(|s| !s.is_empty()).map(Message::system);
        Ok(Done {
            api,
            state,
            new,
            starts,
            from,
            len,
            tools: declared.tools,
            head,
            last,
            system,
            link: None,
            referable: false,
            stored,
            stack,
        })
    }

    /// Compacts the request when it passes the threshold (and compaction is on): the summary
    /// the conversation keeps is reused, or extended by one upstream call. `Some((leading,
    /// upto, summary))` replaces messages `leading..upto` upstream. A summary call that fails
    /// leaves the request as it was (or with the summary kept before).
    async fn compact(
        &self,
        call: &Call<'_>,
        request: &mut Request<'_>,
        state: &mut ConversationState,
        body_len: usize,
    ) -> Result<Option<(usize, usize, String)>, String> {
        let Some(settings) = &self.compaction else { return Ok(None) };
        let api = call.api;
        let leading = compaction::leading_system(request)?;
        let (from, upto) = match compaction::plan(settings, request, state.summary.as_ref(), body_len)? {
            Plan::Keep => return Ok(None),
            Plan::Reuse { upto } => {
                return Ok(state.summary.as_ref().map(|s| (leading, upto, s.text.clone())));
            }
            Plan::Summarise { from, upto } => (from, upto),
        };
        let kept = state.summary.clone().filter(|s| s.upto == from);
        let (messages, _) = request.messages(from..upto)?;
        let body = compaction::summary_request(
            api,
            settings,
            &request.model,
            kept.as_ref().map(|s| s.text.as_str()),
            &messages,
        );
        let answer = Box::pin(self.upstream.send(call, Bytes::from(json_text(&body)))).await;
        let (input, output) = api.usage(&answer.body);
        self.gate.replied(state, self.gate.spent(&request.model, input, output));
        let text = (answer.status == 200)
            .then(|| api.reply_message(&answer.body))
            .flatten()
            .and_then(|m| m.joined_text())
            .filter(|t| !t.trim().is_empty());
        let Some(text) = text else {
            tracing::warn!(conversation = %state.id, status = answer.status, "gateway: the summary call failed; the request goes without it");
            return Ok(kept.map(|s| (leading, s.upto, s.text)));
        };
        tracing::info!(name: "agent.compaction.run", target: "looprail", conversation = %state.id, summarised = upto - from, upto, "gateway compacted the conversation");
        state.summary = Some(Summary { upto, text: text.clone() });
        Ok(Some((leading, upto, text)))
    }

    /// One chat request, end to end.
    pub(crate) async fn handle(
        self: &Arc<Self>,
        api: Api,
        path: &str,
        headers: &HeaderMap,
        raw: Bytes,
        chain: Option<Start>,
    ) -> Response<Body> {
        if !self.authorized(headers) {
            return refused(api);
        }
        let mut timing = Timing::start();
        let (mut request, to_keep) = match self.layouts.read(api, &raw) {
            Ok((text, layout, to_keep)) => (Request::with_layout(api, text, &layout), to_keep),
            Err(e) => return json(400, &api.error("invalid_request_error", &e), None),
        };
        let mut done = match self.prepare(api, headers, &mut request).await {
            Ok(done) => done,
            Err(Unprepared::Request(e)) => return json(400, &api.error("invalid_request_error", &e), None),
            Err(Unprepared::Store(e)) => {
                // Boxed: a rare path, kept out of every request's future.
                return Box::pin(self.store_failed(api, path, headers, raw, &e)).await;
            }
        };
        // A Responses request with `store` on: the client may send the reply's items back as
        // references (with `store: false` the API refuses references, so none are kept).
        done.referable = chain.is_some();
        done.link = chain.and_then(|start| start.link(done.from, &request));
        // The guard stack kept from the conversation's last request, else restored from its state.
        let mut stack = match done.stack.take() {
            Some(stack) => stack,
            None => Stack::new(self.gate.stack(&mut done.state)),
        };
        let verdict = self.gate.observe_live(
            &mut done.state,
            stack.guards(),
            &done.new,
            done.len,
            &done.tools,
            now_ms(),
        );
        done.state.guards.clear(); // the save writes the stack's
        done.stack = Some(stack);
        let stream = request.stream;
        let relay = stream && matches!(verdict, Verdict::Forward { .. });
        let pass_key = self.pass_client_key && self.require_key.is_none();
        let call = Call { http: &self.http, api, path, client: headers, pass_key };
        let compacted = match self.compact(&call, &mut request, &mut done.state, raw.len()).await {
            Ok(compacted) => compacted,
            Err(e) => return json(400, &api.error("invalid_request_error", &e), None),
        };
        let untouched = compacted.is_none()
            && matches!(&verdict, Verdict::Forward { instructions, force_tool: None } if instructions.is_empty());
        // An unchanged request goes upstream as the client sent it; a changed one is read whole
        // (only then).
        let outgoing = if untouched {
            raw.clone()
        } else {
            let mut body: Value = serde_json::from_slice(&raw).unwrap_or_default();
            if let Some((leading, upto, summary)) = &compacted {
                crate::compaction::apply(api, &mut body, *leading, *upto, summary);
            }
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
                    tracing::info!(name: "agent.fallback.reply", target: "looprail", conversation = %done.state.id, %reason, "gateway concluded the conversation");
                    api.text_only(&mut body);
                    api.add_instruction(&mut body, &final_instruction(reason));
                }
            }
            Bytes::from(json_text(&body))
        };
        let (model, include_usage) = (request.model.clone(), request.include_usage);
        // A concluded conversation ends with a text answer whatever the upstream does (F11): the
        // deterministic one stands by, from the last messages.
        let fallback = match &verdict {
            Verdict::Conclude { reason } => Some(concluded_text(&mut request, reason)),
            Verdict::Forward { .. } => None,
        };
        drop(request);
        if let Some(to_keep) = to_keep {
            // Copied beside the upstream call (a task run when this one waits for the answer),
            // not before it.
            let gateway = Arc::clone(self);
            tokio::spawn(async move { gateway.layouts.keep_body(to_keep) });
        }
        timing.sent();
        let opened = self.upstream.open(&call, outgoing).await;
        timing.answered();
        let response = match (opened, &fallback) {
            (Ok(response), _) => response,
            (Err(answer), Some(text)) => {
                tracing::warn!(name: "agent.fallback.deterministic", target: "looprail", conversation = %done.state.id, status = answer.status, "gateway: the final answer could not be fetched; the deterministic one is given");
                return timing.stamp(self.deterministic(done, &model, text, stream, include_usage).await);
            }
            (Err(answer), None) => return timing.stamp(self.failed(done, answer.status, &answer.body).await),
        };
        let is_stream = response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|t| t.starts_with("text/event-stream"));
        if relay && is_stream {
            return timing.stamp(self.relay(done, &model, response));
        }
        // The upstream's bytes go to the client as they came unless the answer is changed here.
        let read = crate::upstream::read_answer(api, response).await;
        timing.answered();
        let (mut answer, mut raw) = match (read, &fallback) {
            (Ok((answer, raw)), _) => (answer, Some(raw)),
            // A 2xx whose body is no answer: a concluded conversation still ends with its text
            // answer; any other request gets a 502, never a 200 carrying an error.
            (Err(_), Some(text)) => {
                tracing::warn!(name: "agent.fallback.deterministic", target: "looprail", conversation = %done.state.id, "gateway: the final answer's body was not JSON; the deterministic one is given");
                return timing.stamp(self.deterministic(done, &model, text, stream, include_usage).await);
            }
            (Err(error), None) => return timing.stamp(self.failed(done, 502, &error).await),
        };
        // The reply as a looprail message, read once (again only when the answer changes).
        let mut message = api.reply_message(&answer);
        if let Some(text) = &fallback
            && message.as_ref().is_some_and(|m| m.tool_calls().next().is_some())
        {
            // The upstream ignored `tool_choice: none`: its calls never reach the client, but
            // the tokens it spent on them are counted.
            tracing::warn!(name: "agent.fallback.deterministic", target: "looprail", conversation = %done.state.id, "gateway: the upstream answered the final-answer request with tool calls; the deterministic answer is given");
            let spent = api.usage(&answer);
            answer = crate::wire::final_text::text_reply_with_usage(api, &model, text, spent);
            raw = None;
            message = api.reply_message(&answer);
        }
        // A reply that repeats itself (B14) is cut to its first copy, as by the output limit.
        if let (Some(mut watch), Some(read)) = (self.gate.reply_watch(), &message) {
            let text = read.joined_text().unwrap_or_default();
            let found = watch.text(&text).or_else(|| {
                read.tool_calls().enumerate().find_map(|(i, call)| watch.arguments(i, &call.arguments))
            });
            if let Some(found) = found {
                let keep = match found.part {
                    looprail_loop_core::watch::WatchedPart::Text => {
                        looprail_loop_core::watch::cut(&text, found.keep)
                    }
                    looprail_loop_core::watch::WatchedPart::Arguments { .. } => text.as_str(),
                };
                tracing::info!(name: "agent.reply.degenerate", target: "looprail", conversation = %done.state.id, period = found.period, "gateway cut a reply that repeated itself");
                crate::wire::cut::cut_reply(api, &mut answer, keep);
                raw = None;
                message = api.reply_message(&answer);
                done.state.degenerate_reply = true;
            }
        }
        timing.stamp(self.answer(done, answer, raw, message, stream, include_usage).await)
    }

    /// The deterministic final answer `text` (F11) of a concluded conversation, in place of one
    /// the upstream could not give.
    async fn deterministic(
        self: &Arc<Self>,
        done: Done,
        model: &str,
        text: &str,
        stream: bool,
        include_usage: bool,
    ) -> Response<Body> {
        let api = done.api;
        let answer = crate::wire::final_text::text_reply(api, model, text);
        let message = api.reply_message(&answer);
        self.answer(done, answer, None, message, stream, include_usage).await
    }

    /// Saves the conversation's state alone and gives the client the failure `body`.
    async fn failed(self: &Arc<Self>, done: Done, status: u16, body: &Value) -> Response<Body> {
        let id = done.state.id.clone();
        self.save(crate::save::Save::state_only(done)).await;
        json(status, body, Some(&id))
    }

    /// Counts and stores a complete answer (`message`: its reply as a looprail message), then
    /// gives it to the client: as the API's event stream when it asked for one, else as `raw`
    /// (the upstream's JSON as it came) when given, else encoded.
    async fn answer(
        self: &Arc<Self>,
        done: Done,
        answer: Value,
        raw: Option<Bytes>,
        message: Option<Message>,
        stream: bool,
        include_usage: bool,
    ) -> Response<Body> {
        let api = done.api;
        let id = done.state.id.clone();
        let (input, output) = api.usage(&answer);
        let spent = self.gate.spent(answer["model"].as_str().unwrap_or_default(), input, output);
        let outcome = Replied::of(api, &answer);
        self.finish(done, message, spent, outcome).await;
        match raw {
            _ if stream => reply(200, "text/event-stream", api.to_stream(&answer, include_usage), Some(&id)),
            Some(raw) => reply(200, "application/json", raw, Some(&id)),
            None => json(200, &answer, Some(&id)),
        }
    }
}

/// The final answer built without the model (F11) for a conversation concluded for `reason`:
/// the model's latest notes and tool results from the request's last messages.
fn concluded_text(request: &mut Request<'_>, reason: &str) -> String {
    let len = request.len();
    let recent = request.messages(len.saturating_sub(LOOKBACK * 4)..len).map(|(m, _)| m).unwrap_or_default();
    let cause = looprail_loop_core::outcome::StopCause::Guard {
        guard: "the looprail gateway".to_owned(),
        detail: reason.to_owned(),
    };
    looprail_loop_core::engine::fallback::deterministic_reply(&cause, &recent)
}
