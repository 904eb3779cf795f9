//! The fake upstream every system is measured against: OpenAI Chat Completions and Anthropic
//! Messages, streamed and not, always the same small reply. It reads only the `stream` flag of
//! a request (and an agent-traffic request's `metadata.user_id`: the call it answers with, or
//! a slow stream; see [`crate::agent_requests`]) and records nothing, so its own cost is the
//! same whoever calls it.

use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::http::Response;
use axum::routing::post;
use futures_util::StreamExt;
use serde_json::{Value, json};

use crate::agent_requests::Reply;

/// Whether a request asks for a stream, and which reply (the only fields the upstream reads).
#[derive(serde::Deserialize)]
struct Flag {
    #[serde(default)]
    stream: bool,
    #[serde(default)]
    metadata: Option<Metadata>,
}

#[derive(serde::Deserialize)]
struct Metadata {
    #[serde(default)]
    user_id: Option<String>,
}

/// The slow streams' vocabulary.
const WORDS: [&str; 32] = [
    "the", "build", "reads", "settings", "from", "a", "file", "then", "checks", "each", "module", "and",
    "writes", "its", "cache", "before", "linking", "tests", "run", "after", "that", "step", "with", "flags",
    "taken", "config", "path", "default", "value", "when", "missing", "set",
];

/// An SSE event of the Anthropic stream.
fn event(name: &str, data: &Value) -> Bytes {
    Bytes::from(format!("event: {name}\ndata: {data}\n\n"))
}

/// The streamed reply an agent-traffic request asks for.
fn agent_stream(reply: Reply) -> Response<Body> {
    let start = json!({"type": "message_start", "message": {"id": "msg_bench", "type": "message", "role": "assistant",
        "model": "claude-3-5-haiku-20241022", "content": [], "stop_reason": null, "stop_sequence": null,
        "usage": {"input_tokens": 120, "output_tokens": 1}}});
    let stop = |reason: &str| {
        [
            event(
                "message_delta",
                &json!({"type": "message_delta", "delta": {"stop_reason": reason, "stop_sequence": null}, "usage": {"output_tokens": 9}}),
            ),
            event("message_stop", &json!({"type": "message_stop"})),
        ]
    };
    let body = match reply {
        Reply::Call { tag, n } => {
            let input = json!({"command": crate::agent_requests::command(&tag, n), "description": "search"});
            let mut events = vec![
                event("message_start", &start),
                event(
                    "content_block_start",
                    &json!({"type": "content_block_start", "index": 0,
                    "content_block": {"type": "tool_use", "id": crate::agent_requests::call_id(&tag, n), "name": "Bash", "input": {}}}),
                ),
                event(
                    "content_block_delta",
                    &json!({"type": "content_block_delta", "index": 0,
                    "delta": {"type": "input_json_delta", "partial_json": input.to_string()}}),
                ),
                event("content_block_stop", &json!({"type": "content_block_stop", "index": 0})),
            ];
            events.extend(stop("tool_use"));
            Body::from_stream(futures_util::stream::iter(events.into_iter().map(Ok::<_, std::io::Error>)))
        }
        Reply::Slow { delay_ms, events, every_ms } => {
            let head = [
                event("message_start", &start),
                event(
                    "content_block_start",
                    &json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
                ),
            ];
            // Prose that never repeats itself (a reply that did would be cut by a gateway that
            // watches for it, as looprail's does): words drawn by a xorshift sequence.
            let delta = move |n: usize| {
                let mut x = (n as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
                let text: String = (0..8)
                    .map(|_| {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        format!("{} ", WORDS[(x % WORDS.len() as u64) as usize])
                    })
                    .collect();
                event(
                    "content_block_delta",
                    &json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}}),
                )
            };
            let tail: Vec<Bytes> = std::iter::once(event(
                "content_block_stop",
                &json!({"type": "content_block_stop", "index": 0}),
            ))
            .chain(stop("end_turn"))
            .collect();
            let stream = futures_util::stream::once(async move {
                tokio::time::sleep(Duration::from_millis(delay_ms)).await;
                head.to_vec()
            })
            .chain(futures_util::stream::unfold(0, move |sent| async move {
                (sent < events).then_some(())?;
                tokio::time::sleep(Duration::from_millis(every_ms)).await;
                Some((vec![delta(sent)], sent + 1))
            }))
            .chain(futures_util::stream::once(async move { tail }))
            .flat_map(|chunks| futures_util::stream::iter(chunks.into_iter().map(Ok::<_, std::io::Error>)));
            Body::from_stream(stream)
        }
    };
    Response::builder().status(200).header("content-type", "text/event-stream").body(body).unwrap_or_default()
}

const OPENAI: &str = r#"{"id":"chatcmpl-bench","object":"chat.completion","created":1,"model":"gpt-4o-mini","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"The configuration is in config/app.toml."}}],"usage":{"prompt_tokens":120,"completion_tokens":9,"total_tokens":129}}"#;

const OPENAI_STREAM: [&str; 5] = [
    "data: {\"id\":\"chatcmpl-bench\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-4o-mini\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":null}]}\n\n",
    "data: {\"id\":\"chatcmpl-bench\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-4o-mini\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"The configuration is in config/app.toml.\"},\"finish_reason\":null}]}\n\n",
    "data: {\"id\":\"chatcmpl-bench\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-4o-mini\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n",
    "data: {\"id\":\"chatcmpl-bench\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-4o-mini\",\"choices\":[],\"usage\":{\"prompt_tokens\":120,\"completion_tokens\":9,\"total_tokens\":129}}\n\n",
    "data: [DONE]\n\n",
];

const ANTHROPIC: &str = r#"{"id":"msg_bench","type":"message","role":"assistant","model":"claude-3-5-haiku-20241022","content":[{"type":"text","text":"The configuration is in config/app.toml."}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":120,"output_tokens":9}}"#;

const ANTHROPIC_STREAM: [&str; 6] = [
    "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_bench\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude-3-5-haiku-20241022\",\"content\":[],\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":120,\"output_tokens\":1}}}\n\n",
    "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
    "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"The configuration is in config/app.toml.\"}}\n\n",
    "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
    "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":9}}\n\n",
    "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
];

fn answer(body: &Bytes, whole: &'static str, events: &'static [&'static str]) -> Response<Body> {
    let flag = serde_json::from_slice::<Flag>(body).ok();
    let stream = flag.as_ref().is_some_and(|f| f.stream);
    let asked = flag.and_then(|f| f.metadata?.user_id).and_then(|id| Reply::of(&id));
    if let (Some(reply), true) = (asked, stream) {
        return agent_stream(reply);
    }
    let builder = Response::builder().status(200);
    if stream {
        // One network write per event, as a model server sends them.
        let chunks = futures_util::stream::iter(
            events.iter().map(|e| Ok::<_, std::io::Error>(Bytes::from_static(e.as_bytes()))),
        );
        builder.header("content-type", "text/event-stream").body(Body::from_stream(chunks))
    } else {
        builder.header("content-type", "application/json").body(Body::from(whole))
    }
    .unwrap_or_default()
}

/// The routes.
fn app() -> Router {
    Router::new()
        .route(
            "/v1/chat/completions",
            post(|body: Bytes| async move { answer(&body, OPENAI, &OPENAI_STREAM) }),
        )
        .route("/v1/messages", post(|body: Bytes| async move { answer(&body, ANTHROPIC, &ANTHROPIC_STREAM) }))
}

/// Serves the fake upstream on 127.0.0.1; returns its base URL (without `/v1`).
pub async fn start() -> std::io::Result<String> {
    let app = app();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}", listener.local_addr()?);
    // As a model server does: each event leaves when written.
    let listener = axum::serve::ListenerExt::tap_io(listener, |tcp| {
        let _ = tcp.set_nodelay(true);
    });
    tokio::spawn(async move { axum::serve(listener, app).await });
    Ok(url)
}

/// The local certificate authority every system is told to trust for the HTTPS upstream
/// (benches/peers/tls: a CA made for this bench alone, its key thrown away, and the upstream's
/// certificate for `localhost` and 127.0.0.1 with its key).
pub fn tls_dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/peers/tls")
}

/// Serves the fake upstream over HTTPS (TLS 1.3; HTTP/2 or HTTP/1.1, as the client's ALPN
/// asks, as the model APIs do) on 127.0.0.1; returns its base URL.
pub async fn start_tls() -> Result<String, String> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let dir = tls_dir();
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(dir.join("upstream.pem"))
        .map_err(|e| e.to_string())?
        .collect::<Result<_, _>>()
        .map_err(|e| e.to_string())?;
    let key = PrivateKeyDer::from_pem_file(dir.join("upstream-key.pem")).map_err(|e| e.to_string())?;
    let mut config = rustls::ServerConfig::builder()
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| e.to_string())?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    let acceptor = tokio_rustls::TlsAcceptor::from(std::sync::Arc::new(config));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.map_err(|e| e.to_string())?;
    let url = format!("https://{}", listener.local_addr().map_err(|e| e.to_string())?);
    let app = app();
    tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else { continue };
            let _ = tcp.set_nodelay(true);
            let (acceptor, app) = (acceptor.clone(), app.clone());
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(tcp).await else { return };
                let service = hyper_util::service::TowerToHyperService::new(app);
                let mut builder =
                    hyper_util::server::conn::auto::Builder::new(hyper_util::rt::TokioExecutor::new());
                // As many streams on one connection as a client opens (the APIs allow hundreds).
                // And no cap on the streams it resets itself: past h2's default (1,024 such
                // resets) it sends GOAWAY and closes the connection, every stream on it broken.
                builder
                    .http2()
                    .max_concurrent_streams(20_000)
                    .max_local_error_reset_streams(None)
                    .max_pending_accept_reset_streams(None);
                if let Err(e) = builder.serve_connection(hyper_util::rt::TokioIo::new(tls), service).await {
                    // A connection that fails takes every stream on it: say why (a few times).
                    static TOLD: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
                    if TOLD.fetch_add(1, std::sync::atomic::Ordering::Relaxed) < 5 {
                        eprintln!("the HTTPS upstream's connection failed: {e:?}");
                    }
                }
            });
        }
    });
    Ok(url)
}
