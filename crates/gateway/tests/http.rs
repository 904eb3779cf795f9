//! The gateway's HTTP edges, with a plain HTTP client: the client token, malformed requests
//! answered in each API's own error format, an upstream that keeps failing (retried, then its
//! error passed through as the provider sent it), an unreachable upstream, and the health check.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::time::Duration;

use looprail_gateway::GatewayConfig;
use looprail_providers::fake::{FakeServer, Reply};
use serde_json::{Value, json};

async fn start(upstream: &str, require_key: Option<&str>) -> String {
    start_with(upstream, require_key, |_| {}).await
}

async fn start_with(
    upstream: &str,
    require_key: Option<&str>,
    adjust: impl FnOnce(&mut GatewayConfig),
) -> String {
    let mut settings = GatewayConfig::new(Default::default(), Default::default());
    settings.upstream.openai = upstream.to_owned();
    settings.upstream.anthropic = upstream.to_owned();
    settings.upstream.openai_key = None;
    settings.upstream.anthropic_key = None;
    settings.upstream.retries = 2;
    settings.upstream.backoff = Duration::from_millis(5);
    settings.require_key = require_key.map(str::to_owned);
    adjust(&mut settings);
    common::serve(settings, "http").await
}

async fn post(url: &str, headers: &[(&str, &str)], body: &str) -> (u16, Value) {
    let mut request =
        reqwest::Client::new().post(url).header("content-type", "application/json").body(body.to_owned());
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    (status, serde_json::from_slice(&response.bytes().await.unwrap()).unwrap_or(Value::Null))
}

fn chat() -> String {
    json!({ "model": "m", "messages": [{ "role": "user", "content": "hi" }] }).to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_tokens_and_malformed_requests_get_each_apis_own_errors() {
    let upstream = FakeServer::start(vec![]).await;
    let gw = start(&upstream.url, Some("gw-secret")).await;
    let openai = format!("{gw}/v1/chat/completions");
    let (status, body) = post(&openai, &[], &chat()).await;
    assert_eq!((status, body["error"]["type"].as_str()), (401, Some("authentication_error")));
    let (status, body) = post(&openai, &[("authorization", "Bearer gw-secret")], "{not json").await;
    assert_eq!((status, body["error"]["type"].as_str()), (400, Some("invalid_request_error")));
    // An array would fill the request's fields by position: it is no request.
    let array = r#"[[{"role": "user", "content": "hi"}]]"#;
    let (status, body) = post(&openai, &[("authorization", "Bearer gw-secret")], array).await;
    assert_eq!((status, body["error"]["type"].as_str()), (400, Some("invalid_request_error")));
    let anthropic = format!("{gw}/v1/messages");
    let (status, body) = post(&anthropic, &[("x-api-key", "gw-secret")], r#"{"messages": 3}"#).await;
    assert_eq!(
        (status, body["type"].as_str(), body["error"]["type"].as_str()),
        (400, Some("error"), Some("invalid_request_error"))
    );
    assert!(upstream.requests().is_empty(), "nothing reached the upstream");
    let health = reqwest::get(format!("{gw}/healthz")).await.unwrap().text().await.unwrap();
    assert_eq!(health, "ok");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_upstream_is_retried_then_its_error_passed_through() {
    let overloaded = r#"{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}"#;
    let upstream = FakeServer::responding(move |_| Reply::json(529, overloaded)).await;
    let gw = start(&upstream.url, None).await;
    let body = json!({ "model": "c", "max_tokens": 10, "messages": [{ "role": "user", "content": "hi" }] });
    let (status, answer) =
        post(&format!("{gw}/v1/messages"), &[("x-api-key", "client-key")], &body.to_string()).await;
    assert_eq!((status, answer["error"]["type"].as_str()), (529, Some("overloaded_error")));
    let seen = upstream.requests();
    assert_eq!(seen.len(), 3, "the first attempt and two retries");
    assert_eq!(seen[0].headers["x-api-key"], "client-key", "the client's own key went upstream");

    let gw = start("http://127.0.0.1:9", None).await; // nothing listens on the discard port
    let (status, answer) = post(&format!("{gw}/v1/chat/completions"), &[], &chat()).await;
    assert_eq!(status, 502);
    assert!(answer["error"]["message"].as_str().unwrap().contains("unreachable"), "{answer}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_that_keeps_failing_falls_back_along_the_chain() {
    // "big" is overloaded and "medium" rate-limited for good; "small" answers.
    let upstream = FakeServer::responding(|request| match request["model"].as_str() {
        Some("small") => Reply::json(200, &json!({"id": "r", "object": "chat.completion", "created": 1, "model": "small",
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "done"}}]}).to_string()),
        Some("medium") => Reply::json(429, r#"{"error": {"message": "slow down", "type": "rate_limit_error", "code": null}}"#),
        _ => Reply::json(503, r#"{"error": {"message": "overloaded", "type": "server_error", "code": null}}"#),
    })
    .await;
    let gw = start_with(&upstream.url, None, |settings| {
        settings.upstream.retries = 1;
        settings.upstream.openai_fallbacks = vec!["big".into(), "medium".into(), "small".into()];
    })
    .await;
    let body = json!({ "model": "big", "messages": [{ "role": "user", "content": "hi" }] }).to_string();
    let (status, answer) = post(&format!("{gw}/v1/chat/completions"), &[], &body).await;
    assert_eq!((status, answer["model"].as_str()), (200, Some("small")), "{answer}");
    let models: Vec<String> =
        upstream.requests().iter().map(|r| r.body["model"].as_str().unwrap().to_owned()).collect();
    // Each model with its retry; the client's own model is not tried twice.
    assert_eq!(models, ["big", "big", "medium", "medium", "small"]);

    // A request the upstream rejects as malformed is not sent to another model.
    let upstream = FakeServer::responding(|_| {
        Reply::json(400, r#"{"error": {"message": "bad", "type": "invalid_request_error", "code": null}}"#)
    })
    .await;
    let gw =
        start_with(&upstream.url, None, |settings| settings.upstream.openai_fallbacks = vec!["small".into()])
            .await;
    let (status, _) = post(&format!("{gw}/v1/chat/completions"), &[], &body).await;
    assert_eq!((status, upstream.requests().len()), (400, 1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_that_breaks_upstream_ends_with_the_apis_error_event() {
    let first = "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"Hel\"}}]}\n\n";
    let upstream = FakeServer::responding(move |_| Reply::Sse {
        chunks: vec![first.to_owned()],
        pause: Duration::from_millis(10),
        break_at_end: true,
    })
    .await;
    let gw = start(&upstream.url, None).await;
    let body = json!({ "model": "m", "stream": true, "messages": [{ "role": "user", "content": "hi" }] });
    let response =
        common::post_json(&reqwest::Client::new(), &format!("{gw}/v1/chat/completions"), &body).await;
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let text =
        tokio::time::timeout(Duration::from_secs(10), response.text()).await.expect("never a hang").unwrap();
    assert!(text.starts_with(first), "the upstream's bytes were passed on: {text}");
    let last = text.trim_end().lines().last().unwrap();
    let error: Value = serde_json::from_str(last.strip_prefix("data: ").unwrap()).unwrap();
    assert_eq!(error["error"]["type"], "api_error", "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_first_event_that_is_not_json_reaches_the_client_and_ends_the_stream() {
    // A first piece that cannot end a stream leaves before the gateway reads it; read after,
    // it is what ends the relay (the rest of the upstream's stream is not passed on).
    let first = "data: {\"id\": \"c1\", \"choices\": [\n\n";
    let rest = "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"lo\"}}]}\n\ndata: [DONE]\n\n";
    let answer = json!({"id": "c2", "object": "chat.completion", "created": 1, "model": "m",
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "Hello."}}]});
    let upstream = FakeServer::responding(move |body| match body["stream"].as_bool() {
        Some(true) => Reply::Sse {
            chunks: vec![first.to_owned(), rest.to_owned()],
            pause: Duration::from_millis(300),
            break_at_end: false,
        },
        _ => Reply::json(200, &answer.to_string()),
    })
    .await;
    let gw = start(&upstream.url, None).await;
    let url = format!("{gw}/v1/chat/completions");
    let body = json!({ "model": "m", "stream": true, "messages": [{ "role": "user", "content": "hi" }] });
    let response = common::post_json(&reqwest::Client::new(), &url, &body).await;
    let text =
        tokio::time::timeout(Duration::from_secs(10), response.text()).await.expect("never a hang").unwrap();
    assert_eq!(text, first, "the first piece as it came, and nothing after it");
    let (status, answer) = post(&url, &[], &chat()).await;
    assert_eq!(
        (status, &answer["choices"][0]["message"]["content"]),
        (200, &json!("Hello.")),
        "it keeps serving"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_relayed_stream_is_stored_before_its_terminal_event_reaches_the_client() {
    // SDKs stop reading at the terminal event and send the next request at once: by then the
    // conversation must be stored, or the next request starts a new one.
    let reply = json!({"id": "c", "object": "chat.completion", "created": 1, "model": "m", "choices": [{"index": 0, "finish_reason": "tool_calls",
        "message": {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "search", "arguments": "{}"}}]}}]});
    let sse = looprail_gateway::Api::OpenAi.to_stream(&reply, false);
    // Whole in one piece, and one event a piece (the first then leaves before it is read).
    for chunks in [vec![sse.clone()], sse.split_inclusive("\n\n").map(str::to_owned).collect()] {
        stored_before_the_terminal_event(chunks).await;
    }
}

/// Five turns of a conversation whose upstream streams `chunks` each time.
async fn stored_before_the_terminal_event(mut chunks: Vec<String>) {
    // The upstream holds its connection open a moment after the terminal event (as real ones
    // may), so a gateway that stored the conversation only at the end of the body loses it.
    chunks.push(String::new());
    let upstream = FakeServer::responding(move |_| Reply::Sse {
        chunks: chunks.clone(),
        pause: Duration::from_millis(200),
        break_at_end: false,
    })
    .await;
    let gw = start(&upstream.url, None).await;
    let url = format!("{gw}/v1/chat/completions");
    let tools =
        json!([{"type": "function", "function": {"name": "search", "parameters": {"type": "object"}}}]);
    let mut messages = vec![json!({"role": "user", "content": "find it"})];
    let client = reqwest::Client::new();
    let mut ids = Vec::new();
    for _ in 0..5 {
        let body = json!({"model": "m", "stream": true, "messages": messages, "tools": tools});
        let response = common::post_json(&client, &url, &body).await;
        ids.push(response.headers()["x-looprail-run"].to_str().unwrap().to_owned());
        let mut stream = response.bytes_stream();
        let mut seen = String::new();
        while !seen.contains("[DONE]") {
            let chunk = futures_util::StreamExt::next(&mut stream)
                .await
                .expect("the stream ends with [DONE]")
                .unwrap();
            seen.push_str(&String::from_utf8_lossy(&chunk));
        }
        drop(stream); // as an SDK does: the next request goes out at once
        messages.push(json!({"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "search", "arguments": "{}"}}]}));
        messages.push(json!({"role": "tool", "tool_call_id": "call_1", "content": "nothing"}));
    }
    assert!(ids.windows(2).all(|w| w[0] == w[1]), "one conversation: {ids:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streamed_anthropic_tool_call_echoed_by_the_client_continues_its_conversation() {
    // Anthropic streams tool input as JSON text with spaces (`{"path": "..."}`, as in its
    // recorded SSE); an SDK echoes the input it parsed, serialised its own way.
    let counter = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let upstream = FakeServer::responding({
        let counter = std::sync::Arc::clone(&counter);
        move |_| {
            let n = counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let event = |name: &str, data: Value| format!("event: {name}\ndata: {data}\n\n");
            let chunks = vec![
                event("message_start", json!({"type": "message_start", "message": {"id": format!("msg_{n}"), "type": "message", "role": "assistant",
                    "model": "c", "content": [], "stop_reason": null, "usage": {"input_tokens": 10, "output_tokens": 1}}})),
                event("content_block_start", json!({"type": "content_block_start", "index": 0,
                    "content_block": {"type": "tool_use", "id": format!("toolu_{n}"), "name": "read", "input": {}}})),
                event("content_block_delta", json!({"type": "content_block_delta", "index": 0,
                    "delta": {"type": "input_json_delta", "partial_json": "{\"path\": \"src/f"}})),
                event("content_block_delta", json!({"type": "content_block_delta", "index": 0,
                    "delta": {"type": "input_json_delta", "partial_json": format!("{n}.rs\", \"lines\": 40}}")}})),
                event("content_block_stop", json!({"type": "content_block_stop", "index": 0})),
                event("message_delta", json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 12}})),
                event("message_stop", json!({"type": "message_stop"})),
            ];
            Reply::Sse { chunks, pause: Duration::from_millis(1), break_at_end: false }
        }
    })
    .await;
    let gw = start(&upstream.url, None).await;
    let url = format!("{gw}/v1/messages");
    let tools = json!([{"name": "read", "input_schema": {"type": "object"}}]);
    let mut messages = vec![json!({"role": "user", "content": "Review the crate"})];
    let client = reqwest::Client::new();
    let mut ids = Vec::new();
    for _ in 0..5 {
        let body =
            json!({"model": "c", "max_tokens": 100, "stream": true, "messages": messages, "tools": tools});
        let response = client
            .post(&url)
            .header("content-type", "application/json")
            .header("x-api-key", "k")
            .body(body.to_string())
            .send()
            .await
            .unwrap();
        ids.push(response.headers()["x-looprail-run"].to_str().unwrap().to_owned());
        let text = response.text().await.unwrap();
        // The client assembles the tool call and echoes it with the input it parsed.
        let mut id = String::new();
        let mut input = String::new();
        for line in text.lines().filter_map(|l| l.strip_prefix("data: ")) {
            let event: Value = serde_json::from_str(line).unwrap();
            if let Some(block_id) = event.pointer("/content_block/id").and_then(Value::as_str) {
                id = block_id.to_owned();
            }
            if let Some(part) = event.pointer("/delta/partial_json").and_then(Value::as_str) {
                input.push_str(part);
            }
        }
        let input: Value = serde_json::from_str(&input).unwrap();
        messages.push(json!({"role": "assistant", "content": [{"type": "tool_use", "id": id, "name": "read", "input": input}]}));
        messages.push(json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": id, "content": "fn main() {}"}]}));
    }
    assert!(ids.windows(2).all(|w| w[0] == w[1]), "one conversation: {ids:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn anthropic_token_counting_is_relayed_with_the_clients_headers() {
    let upstream = FakeServer::start(vec![Reply::json(200, r#"{"input_tokens": 42}"#)]).await;
    let gw = start(&upstream.url, None).await;
    let body = json!({"model": "claude-x", "messages": [{"role": "user", "content": "hi"}]}).to_string();
    let headers =
        [("x-api-key", "client-key"), ("anthropic-version", "2023-06-01"), ("anthropic-beta", "b1")];
    let (status, answer) = post(&format!("{gw}/v1/messages/count_tokens"), &headers, &body).await;
    assert_eq!((status, answer["input_tokens"].as_u64()), (200, Some(42)));
    let seen = upstream.requests();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].path, "/v1/messages/count_tokens");
    assert_eq!(seen[0].body["messages"][0]["content"], "hi", "the body goes as the client sent it");
    assert_eq!(seen[0].headers["anthropic-beta"], "b1");
    // A gateway that requires its own token refuses a client without it, in Anthropic's format.
    let guarded = start(&upstream.url, Some("gw-secret")).await;
    let (status, answer) = post(&format!("{guarded}/v1/messages/count_tokens"), &[], &body).await;
    assert_eq!((status, answer["type"].as_str()), (401, Some("error")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embeddings_are_relayed_to_the_openai_upstream() {
    let vector = r#"{"object": "list", "data": [{"object": "embedding", "index": 0, "embedding": [0.1, -0.2]}],
        "model": "text-embedding-3-small", "usage": {"prompt_tokens": 2, "total_tokens": 2}}"#;
    let upstream = FakeServer::start(vec![Reply::json(200, vector)]).await;
    let gw = start(&upstream.url, None).await;
    let body = json!({"model": "text-embedding-3-small", "input": "find the report"}).to_string();
    let (status, answer) =
        post(&format!("{gw}/v1/embeddings"), &[("authorization", "Bearer k")], &body).await;
    assert_eq!((status, answer["data"][0]["embedding"][1].as_f64()), (200, Some(-0.2)));
    let seen = upstream.requests();
    assert_eq!((seen.len(), seen[0].path.as_str()), (1, "/v1/embeddings"));
    assert_eq!(seen[0].body["input"], "find the report", "the body goes as the client sent it");
    let guarded = start(&upstream.url, Some("gw-secret")).await;
    let (status, answer) = post(&format!("{guarded}/v1/embeddings"), &[], &body).await;
    assert_eq!((status, answer["error"]["type"].as_str()), (401, Some("authentication_error")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_route_the_gateway_does_not_serve_is_named_in_the_apis_error_format() {
    let upstream = FakeServer::start(vec![]).await;
    let gw = start(&upstream.url, None).await;
    // Files are not served: the client is told so, not left with an empty 404.
    let (status, body) = post(&format!("{gw}/v1/files"), &[], "{}").await;
    assert_eq!(status, 404);
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains("POST /v1/files") && message.contains("/v1/responses"), "{message}");
    assert!(upstream.requests().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_models_list_comes_from_the_upstream_of_the_clients_api() {
    let upstream = FakeServer::start(vec![
        Reply::json(200, r#"{"object": "list", "data": [{"id": "gpt-x", "object": "model"}]}"#),
        Reply::json(200, r#"{"data": [{"id": "claude-x", "type": "model"}], "has_more": false}"#),
        Reply::json(200, r#"{"id": "gpt-x", "object": "model"}"#),
    ])
    .await;
    let gw = start(&upstream.url, None).await;
    let get = |headers: &'static [(&'static str, &'static str)]| {
        let mut request = reqwest::Client::new().get(format!("{gw}/v1/models"));
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        request
    };
    let openai: Value = serde_json::from_slice(
        &get(&[("authorization", "Bearer sk-client")]).send().await.unwrap().bytes().await.unwrap(),
    )
    .unwrap();
    assert_eq!(openai["data"][0]["id"], "gpt-x");
    let anthropic =
        get(&[("x-api-key", "sk-ant-client"), ("anthropic-version", "2023-06-01")]).send().await.unwrap();
    assert_eq!(anthropic.status(), 200);
    let one = reqwest::Client::new().get(format!("{gw}/v1/models/gpt-x")).send().await.unwrap();
    assert_eq!(one.status(), 200);
    // An id that would climb out of the models path upstream is refused here.
    for bad in ["..", "%2e%2e", "a%2Fb", "x%20y"] {
        let refused = reqwest::Client::new().get(format!("{gw}/v1/models/{bad}")).send().await.unwrap();
        assert_eq!(refused.status(), 404, "{bad}");
    }
    let seen = upstream.requests();
    assert_eq!(
        seen.iter().map(|s| s.path.as_str()).collect::<Vec<_>>(),
        ["/v1/models", "/v1/models", "/v1/models/gpt-x"]
    );
    assert_eq!(seen[0].headers["authorization"], "Bearer sk-client");
    assert_eq!(
        seen[1].headers["x-api-key"], "sk-ant-client",
        "an Anthropic client's key goes as Anthropic's"
    );
    assert_eq!(seen[1].headers["anthropic-version"], "2023-06-01");
    assert!(seen[1].headers.get("authorization").is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_the_gateway_leaves_alone_reaches_the_client_byte_for_byte() {
    // The upstream's field order and number spellings, which an encoder of its own would change
    // (keys sorted, `1.50` written `1.5`).
    let reply = r#"{"id":"chatcmpl-1","object":"chat.completion","created":1730000000,"model":"m",
        "choices":[{"index":0,"message":{"role":"assistant","content":"done"},"finish_reason":"stop"}],
        "usage":{"prompt_tokens":5,"completion_tokens":1,"total_tokens":6},"x_cost":1.50}"#;
    let upstream = FakeServer::start(vec![Reply::json(200, reply)]).await;
    let gw = start(&upstream.url, None).await;
    let response = reqwest::Client::new()
        .post(format!("{gw}/v1/chat/completions"))
        .header("content-type", "application/json")
        .body(chat())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "application/json");
    assert!(response.headers().contains_key(looprail_gateway::identity::RUN_HEADER));
    assert_eq!(response.text().await.unwrap(), reply);
}
