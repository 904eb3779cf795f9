//! A local fake of the OpenAI and Anthropic HTTP APIs (axum on 127.0.0.1, feature
//! `fake-server`): each request gets the next scripted reply (a body, an SSE stream that may
//! pause or break), and every request is recorded for assertions. Test code: it panics on
//! setup failures.
//!
//! ```
//! use looprail_providers::fake::{FakeServer, Reply};
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let server = FakeServer::start(vec![Reply::json(200, r#"{"ok": true}"#)]).await;
//! assert!(server.url.starts_with("http://127.0.0.1:"));
//! assert_eq!(server.replies_left(), 1);
//! # });
//! ```

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, Response, StatusCode};

/// One scripted reply.
#[derive(Clone)]
pub enum Reply {
    /// A body with a status and headers.
    Body { status: u16, headers: Vec<(String, String)>, content_type: String, body: String },
    /// An SSE body sent chunk by chunk, optionally pausing before each and breaking the
    /// connection at the end instead of closing it.
    Sse { chunks: Vec<String>, pause: Duration, break_at_end: bool },
    /// Takes the request and never answers (not even the status line).
    Silent,
    /// The inner reply, after a pause (a slow model).
    Later { delay: Duration, reply: Box<Reply> },
}

impl Reply {
    pub fn json(status: u16, body: &str) -> Self {
        Reply::Body { status, headers: vec![], content_type: "application/json".into(), body: body.into() }
    }

    pub fn with_header(self, name: &str, value: &str) -> Self {
        match self {
            Reply::Body { status, mut headers, content_type, body } => {
                headers.push((name.into(), value.into()));
                Reply::Body { status, headers, content_type, body }
            }
            other => other,
        }
    }

    /// This reply, sent after `delay`.
    pub fn after(self, delay: Duration) -> Self {
        Reply::Later { delay, reply: Box::new(self) }
    }

    pub fn html(status: u16, body: &str) -> Self {
        Reply::Body { status, headers: vec![], content_type: "text/html".into(), body: body.into() }
    }

    /// An SSE body from a recorded file, split into 64-byte network chunks (so events straddle
    /// reads, as on a real connection).
    pub fn sse_text(text: &str) -> Self {
        let chunks = text.as_bytes().chunks(64).map(|c| String::from_utf8_lossy(c).into_owned()).collect();
        Reply::Sse { chunks, pause: Duration::ZERO, break_at_end: false }
    }

    pub fn sse_events(events: &[&str]) -> Self {
        Reply::Sse {
            chunks: events.iter().map(|e| (*e).to_owned()).collect(),
            pause: Duration::ZERO,
            break_at_end: false,
        }
    }
}

/// A request the server received.
#[derive(Debug, Clone)]
pub struct Seen {
    pub path: String,
    pub headers: HeaderMap,
    pub body: serde_json::Value,
}

/// Computes a reply from a request's body (for servers many concurrent runs share).
pub type Responder = Arc<dyn Fn(&serde_json::Value) -> Reply + Send + Sync>;

#[derive(Clone)]
struct State {
    replies: Arc<Mutex<VecDeque<Reply>>>,
    seen: Arc<Mutex<Vec<Seen>>>,
    responder: Option<Responder>,
}

pub struct FakeServer {
    pub url: String,
    seen: Arc<Mutex<Vec<Seen>>>,
    replies: Arc<Mutex<VecDeque<Reply>>>,
}

impl FakeServer {
    pub async fn start(replies: Vec<Reply>) -> Self {
        Self::serve(replies, None).await
    }

    /// A server that answers every request with `responder(body)` instead of a script.
    pub async fn responding(responder: impl Fn(&serde_json::Value) -> Reply + Send + Sync + 'static) -> Self {
        Self::serve(Vec::new(), Some(Arc::new(responder))).await
    }

    async fn serve(replies: Vec<Reply>, responder: Option<Responder>) -> Self {
        let state = State {
            replies: Arc::new(Mutex::new(replies.into())),
            seen: Arc::new(Mutex::new(Vec::new())),
            responder,
        };
        let app = Router::new().fallback(handle).with_state(state.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        FakeServer { url, seen: state.seen, replies: state.replies }
    }

    pub fn requests(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }

    pub fn replies_left(&self) -> usize {
        self.replies.lock().unwrap().len()
    }
}

async fn handle(
    axum::extract::State(state): axum::extract::State<State>,
    uri: axum::http::Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response<Body> {
    let parsed = serde_json::from_slice(&body).unwrap_or(serde_json::Value::Null);
    let reply = match &state.responder {
        Some(responder) => Some(responder(&parsed)),
        None => state.replies.lock().unwrap().pop_front(),
    };
    state.seen.lock().unwrap().push(Seen { path: uri.path().to_owned(), headers, body: parsed });
    let reply = match reply {
        Some(Reply::Later { delay, reply }) => {
            tokio::time::sleep(delay).await;
            Some(*reply)
        }
        other => other,
    };
    match reply {
        None => Response::builder()
            .status(500)
            .body(Body::from("{\"error\": {\"message\": \"no scripted reply\"}}"))
            .unwrap(),
        // Nested delays are not needed: one pause per reply.
        Some(Reply::Silent | Reply::Later { .. }) => std::future::pending().await,
        Some(Reply::Body { status, headers, content_type, body }) => {
            let mut response = Response::builder()
                .status(StatusCode::from_u16(status).unwrap())
                .header("content-type", content_type);
            for (name, value) in headers {
                response = response.header(name, value);
            }
            response.body(Body::from(body)).unwrap()
        }
        Some(Reply::Sse { chunks, pause, break_at_end }) => {
            let stream = futures_util::stream::unfold(
                (chunks.into_iter(), break_at_end),
                move |(mut rest, broken)| async move {
                    match rest.next() {
                        Some(chunk) => {
                            if !pause.is_zero() {
                                tokio::time::sleep(pause).await;
                            }
                            Some((Ok::<_, std::io::Error>(Bytes::from(chunk)), (rest, broken)))
                        }
                        None if broken => {
                            // Let what was sent reach the client, then drop the connection mid-body.
                            tokio::time::sleep(Duration::from_millis(50)).await;
                            Some((Err(std::io::Error::other("connection dropped")), (rest, false)))
                        }
                        None => None,
                    }
                },
            );
            Response::builder()
                .status(200)
                .header("content-type", "text/event-stream")
                .header("x-request-id", "req_fake_stream")
                .body(Body::from_stream(stream))
                .unwrap()
        }
    }
}

/// A wire fixture shipped with this crate (`tests/fixtures/<path>`).
pub fn fixture(path: &str) -> String {
    std::fs::read_to_string(format!("{}/tests/fixtures/{path}", env!("CARGO_MANIFEST_DIR"))).unwrap()
}
