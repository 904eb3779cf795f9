//! The OpenAI client against a local server speaking the Chat Completions wire format.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use futures_util::StreamExt;
use looprail_loop_core::prelude::*;
use looprail_loop_core::provider::{CallPurpose, StreamEvent};
use looprail_providers::fake::{FakeServer, Reply, fixture};
use looprail_providers::{ClientConfig, OpenAiClient, sse};

fn client(server: &FakeServer) -> OpenAiClient {
    let config = ClientConfig::custom("gpt-4o", &format!("{}/v1", server.url), Some("sk-test"))
        .with_timeouts(Duration::from_secs(2), Duration::from_secs(10), Duration::from_millis(400));
    OpenAiClient::new(config).unwrap()
}

fn conversation() -> Vec<Message> {
    vec![
        Message::system("You are terse."),
        Message::user("Weather in Edinburgh and Lisbon?"),
        Message::assistant_with_calls(
            None,
            vec![
                ToolCall::new("call_a", "weather", r#"{"city":"Edinburgh"}"#),
                ToolCall::new("call_b", "weather", r#"{"city":"Lisbon"}"#),
            ],
        ),
        Message::tool_result(ToolResult::ok("call_a", "9C rain")),
        Message::tool_result(ToolResult::error("call_b", "Error: timeout")),
    ]
}

fn tools() -> Vec<ToolDefinition> {
    vec![ToolDefinition::new(
        "weather",
        "Current weather",
        serde_json::json!({"type": "object", "properties": {"city": {"type": "string"}}}),
    )]
}

fn request<'a>(messages: &'a [Message], tools: &'a [ToolDefinition], choice: ToolChoice) -> ModelRequest<'a> {
    ModelRequest {
        messages,
        tools,
        tool_choice: choice,
        max_output_tokens: Some(300),
        instruction: None,
        purpose: CallPurpose::Turn,
    }
}

#[tokio::test]
async fn complete_sends_the_exact_body_and_parses_parallel_tool_calls() {
    let reply = r#"{"id":"chatcmpl-1","object":"chat.completion","model":"gpt-4o-2024-08-06","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[
        {"id":"call_1","type":"function","function":{"name":"weather","arguments":"{\"city\":\"Porto\"}"}},
        {"id":"call_2","type":"function","function":{"name":"weather","arguments":"{\"city\":\"Faro\"}"}}]},"finish_reason":"tool_calls"}],
        "usage":{"prompt_tokens":120,"completion_tokens":40,"total_tokens":160,"prompt_tokens_details":{"cached_tokens":64}}}"#;
    let server = FakeServer::start(vec![Reply::json(200, reply)]).await;
    let (messages, tools) = (conversation(), tools());
    let response = client(&server)
        .complete(&request(&messages, &tools, ToolChoice::Named("weather".into())))
        .await
        .unwrap();

    assert_eq!(response.stop_reason, StopReason::ToolUse);
    assert_eq!(
        response.tool_calls,
        [
            ToolCall::new("call_1", "weather", r#"{"city":"Porto"}"#),
            ToolCall::new("call_2", "weather", r#"{"city":"Faro"}"#)
        ]
    );
    assert_eq!(
        response.usage,
        Some(Usage {
            input_tokens: 120,
            output_tokens: 40,
            cache_read_tokens: 64,
            cache_write_tokens: 0,
            estimated_tokens: 0
        })
    );
    assert_eq!(response.model, "gpt-4o-2024-08-06");
    assert_eq!(response.id.as_deref(), Some("chatcmpl-1"));

    let seen = &server.requests()[0];
    assert_eq!(seen.path, "/v1/chat/completions");
    assert_eq!(seen.headers["authorization"], "Bearer sk-test");
    let expected = serde_json::json!({
        "model": "gpt-4o",
        "messages": [
            {"role": "system", "content": "You are terse."},
            {"role": "user", "content": "Weather in Edinburgh and Lisbon?"},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "call_a", "type": "function", "function": {"name": "weather", "arguments": "{\"city\":\"Edinburgh\"}"}},
                {"id": "call_b", "type": "function", "function": {"name": "weather", "arguments": "{\"city\":\"Lisbon\"}"}}]},
            {"role": "tool", "tool_call_id": "call_a", "content": "9C rain"},
            {"role": "tool", "tool_call_id": "call_b", "content": "Error: timeout"}
        ],
        "tools": [{"type": "function", "function": {"name": "weather", "description": "Current weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}],
        "tool_choice": {"type": "function", "function": {"name": "weather"}},
        "max_completion_tokens": 300
    });
    assert_eq!(seen.body, expected);
}

#[tokio::test]
async fn tool_choice_variants_and_the_call_instruction_are_sent() {
    let text =
        r#"{"choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}]}"#;
    let server =
        FakeServer::start(vec![Reply::json(200, text), Reply::json(200, text), Reply::json(200, text)]).await;
    let (messages, tools) = (conversation(), tools());
    let client = client(&server);
    for choice in [ToolChoice::Auto, ToolChoice::None, ToolChoice::Required] {
        let mut req = request(&messages, &tools, choice);
        req.instruction = Some("Answer without tools.");
        let response = client.complete(&req).await.unwrap();
        assert_eq!(response.text.as_deref(), Some("ok"));
        assert_eq!(response.usage, None, "missing usage is None, not a failure");
    }
    let choices: Vec<_> = server.requests().iter().map(|r| r.body["tool_choice"].clone()).collect();
    assert_eq!(
        choices,
        [serde_json::json!("auto"), serde_json::json!("none"), serde_json::json!("required")]
    );
    let last = server.requests()[0].body["messages"].as_array().unwrap().last().cloned().unwrap();
    assert_eq!(last, serde_json::json!({"role": "system", "content": "Answer without tools."}));
}

async fn stream_all(
    client: &OpenAiClient,
    req: &ModelRequest<'_>,
) -> (Vec<StreamEvent>, Result<ModelResponse, ProviderError>) {
    let mut stream = client.stream(req).await.unwrap();
    let mut events = Vec::new();
    while let Some(event) = stream.next().await {
        events.push(event);
    }
    let finished: Vec<_> = events.iter().filter(|e| matches!(e, StreamEvent::Finished(_))).collect();
    assert_eq!(finished.len(), 1, "exactly one finished signal: {events:?}");
    let Some(StreamEvent::Finished(result)) = events.last().cloned() else { panic!("finished must be last") };
    (events, result)
}

#[tokio::test]
async fn recorded_streams_parse_tool_calls_truncation_refusals_and_text() {
    let cases = [
        ("openai/test_parse_pydantic_tool__c6aa7e397b71.sse", StopReason::ToolUse),
        ("openai/test_parse_max_tokens_reached__4cc50a6135d2.sse", StopReason::MaxTokens),
        ("openai/test_parse_pydantic_model_refusal__173417d55340.sse", StopReason::Refusal),
        ("openai/test_parse_nothing__e2aad469b71d.sse", StopReason::EndTurn),
    ];
    let server = FakeServer::start(cases.iter().map(|(f, _)| Reply::sse_text(&fixture(f))).collect()).await;
    let (messages, tools) = (conversation(), tools());
    let client = client(&server);
    let mut results = Vec::new();
    for (_, stop) in &cases {
        let (_, result) = stream_all(&client, &request(&messages, &tools, ToolChoice::Auto)).await;
        let response = result.unwrap();
        assert_eq!(&response.stop_reason, stop);
        results.push(response);
    }
    assert_eq!(results[0].tool_calls[0].name, "GetWeatherArgs");
    assert_eq!(results[0].tool_calls[0].arguments, r#"{"city":"Edinburgh","country":"UK","units":"c"}"#);
    assert_eq!(results[0].usage.unwrap().total(), 100);
    assert_eq!(results[1].text.as_deref(), Some("{\""));
    assert_eq!(results[2].text.as_deref(), Some("I'm sorry, I can't assist with that request."));
    assert!(
        results[3].text.as_deref().unwrap().starts_with("I'm unable to provide real-time weather updates.")
    );
    let sent = &server.requests()[0].body;
    assert_eq!(sent["stream"], true);
    assert_eq!(sent["stream_options"]["include_usage"], true);
}

fn chunk(delta: serde_json::Value, finish: Option<&str>) -> String {
    format!(
        "data: {}\n\n",
        serde_json::json!({"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
    )
}

#[tokio::test]
async fn arguments_split_across_many_deltas_assemble_by_index() {
    let first = r#"{"path": "src/lib.rs", "lines": [1, 20]}"#;
    let second = r#"{"pattern": "fn main"}"#;
    let mut events = vec![
        ": keep-alive\n\n".to_owned(),
        chunk(
            serde_json::json!({"role": "assistant", "tool_calls": [{"index": 0, "id": "call_r", "type": "function", "function": {"name": "read", "arguments": ""}}]}),
            None,
        ),
        chunk(
            serde_json::json!({"tool_calls": [{"index": 1, "id": "call_g", "type": "function", "function": {"name": "grep", "arguments": ""}}]}),
            None,
        ),
    ];
    // Interleave one-character fragments of both calls.
    let (a, b): (Vec<char>, Vec<char>) = (first.chars().collect(), second.chars().collect());
    for i in 0..a.len().max(b.len()) {
        if let Some(c) = a.get(i) {
            events.push(chunk(
                serde_json::json!({"tool_calls": [{"index": 0, "function": {"arguments": c.to_string()}}]}),
                None,
            ));
        }
        if let Some(c) = b.get(i) {
            events.push(chunk(
                serde_json::json!({"tool_calls": [{"index": 1, "function": {"arguments": c.to_string()}}]}),
                None,
            ));
        }
    }
    events.push(chunk(serde_json::json!({}), Some("tool_calls")));
    events.push(
        "data: {\"choices\": [], \"usage\": {\"prompt_tokens\": 10, \"completion_tokens\": 30}}   \n\n"
            .to_owned(),
    );
    events.push("data: [DONE]\n\n".to_owned());
    let refs: Vec<&str> = events.iter().map(String::as_str).collect();
    let server = FakeServer::start(vec![Reply::sse_events(&refs)]).await;
    let (messages, tools) = (conversation(), tools());
    let (deltas, result) = stream_all(&client(&server), &request(&messages, &tools, ToolChoice::Auto)).await;
    let response = result.unwrap();
    assert_eq!(
        response.tool_calls,
        [ToolCall::new("call_r", "read", first), ToolCall::new("call_g", "grep", second)]
    );
    assert_eq!(response.usage.unwrap().output_tokens, 30);
    assert!(deltas.iter().filter(|d| matches!(d, StreamEvent::ToolCallDelta { .. })).count() > 30);
}

#[tokio::test]
async fn http_errors_carry_status_headers_and_a_transient_answer() {
    let rate_limited = Reply::json(429, r#"{"error": {"message": "Rate limit reached for gpt-4o", "type": "requests", "code": "rate_limit_exceeded"}}"#)
        .with_header("retry-after", "3")
        .with_header("x-request-id", "req_123")
        .with_header("x-ratelimit-remaining-requests", "0");
    let server_error =
        Reply::json(500, r#"{"error": {"message": "The server had an error", "type": "server_error"}}"#);
    let bad_key = Reply::json(
        401,
        r#"{"error": {"message": "Incorrect API key provided", "type": "invalid_request_error", "code": "invalid_api_key"}}"#,
    );
    let overflow = Reply::json(
        400,
        r#"{"error": {"message": "This model's maximum context length is 128000 tokens.", "type": "invalid_request_error", "code": "context_length_exceeded"}}"#,
    );
    let html = Reply::html(200, "<html><body>Bad gateway</body></html>");
    let server = FakeServer::start(vec![rate_limited, server_error, bad_key, overflow, html]).await;
    let (messages, tools) = (conversation(), tools());
    let client = client(&server);
    let req = request(&messages, &tools, ToolChoice::Auto);

    let e = client.complete(&req).await.unwrap_err();
    assert_eq!(
        (e.kind, e.status, e.retry_after),
        (ProviderErrorKind::RateLimited, Some(429), Some(Duration::from_secs(3)))
    );
    assert_eq!(e.request_id.as_deref(), Some("req_123"));
    assert_eq!(e.provider_code.as_deref(), Some("requests"));
    assert!(e.rate_limits.contains(&("x-ratelimit-remaining-requests".to_owned(), "0".to_owned())));
    assert!(e.transient());

    let e = client.complete(&req).await.unwrap_err();
    assert_eq!(e.kind, ProviderErrorKind::Server);
    assert!(e.transient());

    let e = client.complete(&req).await.unwrap_err();
    assert_eq!(e.kind, ProviderErrorKind::Auth);
    assert!(!e.transient());

    let e = client.complete(&req).await.unwrap_err();
    assert_eq!(e.kind, ProviderErrorKind::ContextWindowExceeded);

    let e = client.complete(&req).await.unwrap_err();
    assert_eq!(e.kind, ProviderErrorKind::MalformedResponse);
    assert!(e.message.contains("text/html"), "{}", e.message);
}

#[tokio::test]
async fn broken_streams_end_with_exactly_one_typed_error() {
    let text = chunk(serde_json::json!({"content": "Hel"}), None);
    let cut = Reply::Sse {
        chunks: vec![text.clone(), "data: {\"choices\": [{\"index\": 0, \"delta\": {\"content\"".into()],
        pause: Duration::ZERO,
        break_at_end: true,
    };
    let no_done_no_finish = Reply::sse_events(&[&text]);
    let no_done_after_finish =
        Reply::sse_events(&[&text, &chunk(serde_json::json!({"content": "lo"}), Some("stop"))]);
    let bad_json = Reply::sse_events(&[&text, "data: {not json}\n\n"]);
    let in_stream_error = Reply::sse_events(&[
        &text,
        "data: {\"error\": {\"message\": \"overloaded\", \"type\": \"server_error\"}}\n\n",
    ]);
    let stalled = Reply::Sse {
        chunks: vec![text.clone(), text.clone()],
        pause: Duration::from_millis(900),
        break_at_end: false,
    };
    let server = FakeServer::start(vec![
        cut,
        no_done_no_finish,
        no_done_after_finish,
        bad_json,
        in_stream_error,
        stalled,
    ])
    .await;
    let (messages, tools) = (conversation(), tools());
    let req = request(&messages, &tools, ToolChoice::Auto);

    // A fresh client per case: after a deliberately broken connection, a pooled one would
    // fail the next request with a (transient) connection error, which is the retry layer's
    // business, not this test's.
    let kinds = [
        Err(ProviderErrorKind::StreamBroken),
        Err(ProviderErrorKind::StreamBroken),
        Ok("Hello"),
        Err(ProviderErrorKind::MalformedResponse),
        Err(ProviderErrorKind::Server),
        Err(ProviderErrorKind::Timeout),
    ];
    for expected in kinds {
        let (_, result) = stream_all(&client(&server), &req).await;
        match (expected, result) {
            (Ok(text), Ok(response)) => assert_eq!(response.text.as_deref(), Some(text)),
            (Err(kind), Err(error)) => assert_eq!(error.kind, kind, "{error}"),
            (expected, got) => panic!("expected {expected:?}, got {got:?}"),
        }
    }
}

#[tokio::test]
async fn the_client_drives_a_tool_loop_end_to_end() {
    let call = r#"{"choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_w","type":"function","function":{"name":"weather","arguments":"{\"city\":\"Porto\"}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":50,"completion_tokens":10}}"#;
    let answer = r#"{"choices":[{"index":0,"message":{"role":"assistant","content":"Sunny in Porto."},"finish_reason":"stop"}],"usage":{"prompt_tokens":70,"completion_tokens":5}}"#;
    let server = FakeServer::start(vec![Reply::json(200, call), Reply::json(200, answer)]).await;
    let tools =
        ToolSet::new().with(looprail_loop_core::testkit::RecordingTool::new("weather").output("sunny"));
    let mut run =
        Run::builder(LoopConfig::default()).user("Porto?").tools(tools.definitions()).build().unwrap();
    let outcome = Driver::new(std::sync::Arc::new(client(&server)), tools).drive(&mut run).await.unwrap();
    assert_eq!(outcome.final_text, "Sunny in Porto.");
    assert_eq!(outcome.usage.total(), 135);
    let second = &server.requests()[1].body["messages"];
    let tool_message = second.as_array().unwrap().iter().find(|m| m["role"] == "tool").unwrap();
    assert_eq!(tool_message["tool_call_id"], "call_w");
    assert_eq!(tool_message["content"], "sunny");
}

#[test]
fn a_missing_key_is_an_error_at_construction_naming_the_variable() {
    let err = ClientConfig::openai_with("gpt-4o", |_| None).unwrap_err();
    assert_eq!(err.key, "OPENAI_API_KEY");
    assert!(ClientConfig::openai_with("gpt-4o", |_| Some("  ".into())).is_err(), "a blank key is missing");
    assert!(ClientConfig::openai_with("gpt-4o", |_| Some("sk-1".into())).is_ok());
    let err = OpenAiClient::new(ClientConfig::custom("gpt-4o", "ftp://x", None)).unwrap_err();
    assert_eq!(err.key, "base_url");
}

#[tokio::test]
async fn streamed_text_collects_through_the_helper() {
    let server =
        FakeServer::start(vec![Reply::sse_text(&fixture("openai/test_parse_nothing__e2aad469b71d.sse"))])
            .await;
    let (messages, tools) = (conversation(), tools());
    let stream = client(&server).stream(&request(&messages, &tools, ToolChoice::Auto)).await.unwrap();
    let response = sse::collect(stream).await.unwrap();
    assert_eq!(response.usage.unwrap().input_tokens, 14);
}

#[tokio::test]
async fn live_smoke_test_when_a_key_is_set() {
    if std::env::var("LOOPRAIL_LIVE").is_err() {
        eprintln!("skipped: set LOOPRAIL_LIVE=1 and OPENAI_API_KEY to call the real API");
        return;
    }
    let Ok(config) = ClientConfig::openai("gpt-4o-mini") else {
        eprintln!("skipped: OPENAI_API_KEY is not set");
        return;
    };
    let messages = [Message::user("Reply with the single word: pong")];
    let response = OpenAiClient::new(config)
        .unwrap()
        .complete(&request(&messages, &[], ToolChoice::Auto))
        .await
        .unwrap();
    assert!(response.text.unwrap().to_lowercase().contains("pong"));
}

#[tokio::test]
async fn a_server_that_never_starts_answering_is_a_timeout_not_a_hang() {
    fn request_of(messages: &[Message]) -> ModelRequest<'_> {
        ModelRequest {
            messages,
            tools: &[],
            tool_choice: ToolChoice::Auto,
            max_output_tokens: None,
            instruction: None,
            purpose: CallPurpose::Turn,
        }
    }
    let messages = conversation();
    // Streamed: the first-byte timeout gives up long before the 10 s request timeout.
    let server = FakeServer::start(vec![Reply::Silent]).await;
    let config = ClientConfig::custom("gpt-4o", &format!("{}/v1", server.url), None)
        .with_timeouts(Duration::from_secs(2), Duration::from_secs(10), Duration::from_secs(5))
        .with_first_byte_timeout(Duration::from_millis(300));
    let started = std::time::Instant::now();
    let error = match OpenAiClient::new(config).unwrap().stream(&request_of(&messages)).await {
        Err(error) => error,
        Ok(_) => panic!("a silent server produced a stream"),
    };
    assert_eq!(error.kind, ProviderErrorKind::Timeout, "{error}");
    assert!(error.transient());
    assert!(error.message.contains("first-byte"), "{error}");
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
    // A whole answer: bounded by the request timeout.
    let server = FakeServer::start(vec![Reply::Silent]).await;
    let config = ClientConfig::custom("gpt-4o", &format!("{}/v1", server.url), None).with_timeouts(
        Duration::from_secs(2),
        Duration::from_millis(400),
        Duration::from_secs(5),
    );
    let error = OpenAiClient::new(config).unwrap().complete(&request_of(&messages)).await.unwrap_err();
    assert_eq!(error.kind, ProviderErrorKind::Timeout, "{error}");
}
