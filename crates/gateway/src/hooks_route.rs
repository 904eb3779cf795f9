//! `POST /v1/hooks/{agent}`: the coding CLIs' hooks over HTTP (Claude Code's `"type": "http"`
//! hooks). An event is answered exactly as `looprail hook <agent>` answers it on stdin and
//! stdout, by the same guard stack, with no process started per tool call. A session's state
//! is a document in the gateway's store (`gateway/hook/<agent>/<session>`). Saved before the
//! answer (PostgreSQL), it is written by compare-and-swap as conversations are, so replicas on
//! one PostgreSQL share their sessions; saved after the answer (SQLite, one process), the state
//! lives in memory and is written behind the answer ([`hook_sessions`](crate::hook_sessions)).
//! A request needs the client key when the model routes do.
//!
//! Failures are the agent's non-blocking errors, never a block: a body that is no event of the
//! agent gets a 400, a store that cannot be read a 503, each with one line the agent shows, and
//! the call goes on.

use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::{Path, State};
use axum::http::{HeaderMap, Response};
use looprail_hook::agents::Agent;
use looprail_hook::event::{Answer, EventKind};
use looprail_hook::session::SessionState;

use crate::respond::reply;
use crate::{Gateway, hook_sessions};

/// Tries at a session's compare-and-swap before giving the event up (as unguarded).
const SWAP_ATTEMPTS: u32 = 16;
/// The longest session id kept as a key.
const SESSION_ID_MAX: usize = 256;

fn line(status: u16, text: &str) -> Response<Body> {
    reply(status, "text/plain; charset=utf-8", Body::from(format!("looprail gateway: {text}\n")), None)
}

/// The handler.
pub(crate) async fn hooks(
    State(gateway): State<Arc<Gateway>>,
    Path(agent): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response<Body> {
    if !gateway.authorized(&headers) {
        return line(401, "this gateway needs its client key (Authorization: Bearer …)");
    }
    let Some(agent) = Agent::from_name(&agent) else {
        return line(404, &format!("no hooks for `{agent}` ({})", Agent::names()));
    };
    let event = match agent.parse(&body) {
        Ok(event) => event,
        Err(e) => return line(400, &format!("{e}; the call goes on unguarded")),
    };
    let answer = |answer: &Answer| {
        let text = agent.render(&event.kind, answer);
        let text = if text.is_empty() { "{}".to_owned() } else { text };
        reply(200, "application/json", Body::from(text), None)
    };
    if matches!(event.kind, EventKind::Other(_)) {
        return answer(&Answer::Allow);
    }
    if event.session.is_empty()
        || event.session.len() > SESSION_ID_MAX
        || event.session.chars().any(char::is_control)
    {
        return line(400, "the event's session id is empty, too long or not printable");
    }
    let key = format!("gateway/hook/{}/{}", agent.name(), event.session);
    let now = looprail_journal::now_ms();
    let decide = |state: &mut SessionState| match &event.kind {
        // A session that ended starts afresh if its id comes back.
        EventKind::SessionEnd => {
            *state = SessionState::default();
            Answer::Allow
        }
        kind => gateway.hook.handle(state, kind, now),
    };
    if gateway.write_behind.after_answer() {
        let session = gateway.hook_sessions.session(&key);
        let mut slot = session.lock().await;
        if let Err(e) = slot.load(&gateway.store, &key).await {
            return line(503, &format!("the session store cannot be read ({e}); the call goes on unguarded"));
        }
        let state = slot.state.get_or_insert_with(SessionState::default);
        let said = decide(state);
        let document = match serde_json::to_value(&*state) {
            Ok(document) => document,
            Err(e) => return line(500, &format!("the session state: {e}")),
        };
        if slot.queue(document) {
            let writer = hook_sessions::write_behind(Arc::clone(&gateway.store), key, Arc::clone(&session));
            gateway.write_behind.spawn(writer);
        }
        return answer(&said);
    }
    for _ in 0..SWAP_ATTEMPTS {
        let stored = match gateway.store.load_journal(&key).await {
            Ok(stored) => stored,
            Err(e) => {
                return line(
                    503,
                    &format!("the session store cannot be read ({e}); the call goes on unguarded"),
                );
            }
        };
        let mut state: SessionState =
            stored.as_ref().and_then(|v| serde_json::from_value(v.clone()).ok()).unwrap_or_default();
        let said = decide(&mut state);
        let document = match serde_json::to_value(&state) {
            Ok(document) => document,
            Err(e) => return line(500, &format!("the session state: {e}")),
        };
        match gateway.store.swap_journal(&key, stored.as_ref(), &document).await {
            Ok(true) => return answer(&said),
            Ok(false) => continue, // another event of the session came first: decided again
            Err(e) => {
                return line(
                    503,
                    &format!("the session store cannot be written ({e}); the call goes on unguarded"),
                );
            }
        }
    }
    tracing::warn!(name: "gateway.hook.contended", target: "looprail", session = %event.session, "gateway: a hook session's state kept changing under this event");
    line(503, "the session's state kept changing under this event; the call goes on unguarded")
}
