//! The fake upstream every system is measured against: OpenAI Chat Completions and Anthropic
//! Messages, streamed and not, always the same small reply. It reads only the `stream` flag of
//! a request and records nothing, so its own cost is the same whoever calls it.

use axum::Router;
use axum::body::{Body, Bytes};
use axum::http::Response;
use axum::routing::post;

/// Whether a request asks for a stream (the only field the upstream reads).
#[derive(serde::Deserialize)]
struct Flag {
    #[serde(default)]
    stream: bool,
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
    let stream = serde_json::from_slice::<Flag>(body).map(|f| f.stream).unwrap_or(false);
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

/// Serves the fake upstream on 127.0.0.1; returns its base URL (without `/v1`).
pub async fn start() -> std::io::Result<String> {
    let app = Router::new()
        .route(
            "/v1/chat/completions",
            post(|body: Bytes| async move { answer(&body, OPENAI, &OPENAI_STREAM) }),
        )
        .route(
            "/v1/messages",
            post(|body: Bytes| async move { answer(&body, ANTHROPIC, &ANTHROPIC_STREAM) }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}", listener.local_addr()?);
    // As a model server does: each event leaves when written.
    let listener = axum::serve::ListenerExt::tap_io(listener, |tcp| {
        let _ = tcp.set_nodelay(true);
    });
    tokio::spawn(async move { axum::serve(listener, app).await });
    Ok(url)
}
