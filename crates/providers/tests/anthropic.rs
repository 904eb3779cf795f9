//! The Anthropic client against a local server speaking the Messages wire format.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use futures_util::StreamExt;
use looprail_loop_core::prelude::*;
use looprail_loop_core::provider::{CallPurpose, StreamEvent};
use looprail_providers::fake::{FakeServer, Reply, fixture};
use looprail_providers::{AnthropicClient, ClientConfig};

fn client(server: &FakeServer) -> AnthropicClient {
    let config = ClientConfig::custom("claude-haiku-4-5", &server.url, Some("sk-ant-test")).with_timeouts(
        Duration::from_secs(2),
        Duration::from_secs(10),
        Duration::from_millis(400),
    );
    AnthropicClient::new(config).unwrap()
}

fn request<'a>(messages: &'a [Message], tools: &'a [ToolDefinition], choice: ToolChoice) -> ModelRequest<'a> {
    ModelRequest {
        messages,
        tools,
        tool_choice: choice,
        max_output_tokens: None,
        instruction: None,
        purpose: CallPurpose::Turn,
    }
}

/// Replays a recorded cassette error: its status, its headers and its body.
fn recorded_error(path: &str) -> Reply {
    let cassette: serde_json::Value = serde_json::from_str(&fixture(path)).unwrap();
    let status = cassette["status_code"].as_u64().unwrap() as u16;
    let mut reply = Reply::json(status, &cassette["body"].to_string());
    for (name, value) in cassette["headers"].as_object().unwrap() {
        if name != "content-length" && name != "content-type" && name != "connection" {
            reply = reply.with_header(name, value.as_str().unwrap());
        }
    }
    reply
}

async fn stream_all(
    client: &AnthropicClient,
    req: &ModelRequest<'_>,
) -> Result<ModelResponse, ProviderError> {
    let mut stream = client.stream(req).await?;
    let mut finished = Vec::new();
    while let Some(event) = stream.next().await {
        if let StreamEvent::Finished(result) = event {
            finished.push(result);
        }
    }
    assert_eq!(finished.len(), 1, "exactly one finished signal");
    finished.pop().unwrap()
}

#[tokio::test]
async fn the_recorded_tool_use_stream_assembles_with_pings_and_padded_json() {
    let server = FakeServer::start(vec![
        Reply::sse_text(&fixture("anthropic/stream_tool_use__555fb399_0.sse")),
        Reply::sse_text(&fixture("anthropic/stream_text__555fb399_1.sse")),
    ])
    .await;
    let messages = [Message::user("What's the weather in SF?")];
    let tools = [ToolDefinition::new("get_weather", "Weather", serde_json::json!({"type": "object"}))];
    let client = client(&server);
    let response = stream_all(&client, &request(&messages, &tools, ToolChoice::Auto)).await.unwrap();
    assert_eq!(response.stop_reason, StopReason::ToolUse);
    assert_eq!(response.model, "claude-haiku-4-5-20251001");
    assert_eq!(response.id.as_deref(), Some("msg_01AusY9WEbCaj3N7Tv5J4YjH"), "the id from message_start");
    let call = &response.tool_calls[0];
    assert_eq!((call.id.as_str(), call.name.as_str()), ("toolu_018acGYLtfR52q9yDbWaEdQZ", "get_weather"));
    let args: serde_json::Value = serde_json::from_str(&call.arguments).unwrap();
    assert_eq!(args, serde_json::json!({"location": "San Francisco, CA", "units": "f"}));
    assert_eq!(response.usage.unwrap().input_tokens, 656);
    assert_eq!(response.usage.unwrap().output_tokens, 74, "the last cumulative count wins");

    let text = stream_all(&client, &request(&messages, &tools, ToolChoice::Auto)).await.unwrap();
    assert_eq!(text.stop_reason, StopReason::EndTurn);
    assert!(text.text.unwrap().starts_with("The weather in San Francisco, CA is currently:"));
    assert_eq!(text.usage.unwrap().output_tokens, 38);
}

#[tokio::test]
async fn the_request_body_groups_tool_results_and_sends_the_version_header() {
    let body = r#"{"id":"msg_1","type":"message","role":"assistant","model":"claude-haiku-4-5","content":[{"type":"text","text":"Checking."},{"type":"tool_use","id":"toolu_2","name":"weather","input":{"city":"Faro"}}],"stop_reason":"tool_use","usage":{"input_tokens":100,"output_tokens":20,"cache_read_input_tokens":50,"cache_creation_input_tokens":10}}"#;
    let server = FakeServer::start(vec![Reply::json(200, body)]).await;
    let messages = vec![
        Message::system("Be brief."),
        Message::user("Weather in Porto and Lisbon?"),
        Message::assistant_with_calls(
            Some("Looking both up.".into()),
            vec![
                ToolCall::new("toolu_a", "weather", r#"{"city":"Porto"}"#),
                ToolCall::new("toolu_b", "weather", r#"{"city":"Lisbon"}"#),
            ],
        ),
        Message::tool_result(ToolResult::ok("toolu_a", "sunny")),
        Message::tool_result(ToolResult::error("toolu_b", "Error: timeout")),
        Message::internal_user("loop_nudge", "Try something else."),
    ];
    let tools = [ToolDefinition::new("weather", "Weather", serde_json::json!({"type": "object"}))];
    let mut req = request(&messages, &tools, ToolChoice::Required);
    req.instruction = Some("No more tools after this.");
    let response = client(&server).complete(&req).await.unwrap();
    assert_eq!(response.text.as_deref(), Some("Checking."));
    assert_eq!(response.tool_calls, [ToolCall::new("toolu_2", "weather", r#"{"city":"Faro"}"#)]);
    assert_eq!(
        response.usage,
        Some(Usage {
            input_tokens: 160,
            output_tokens: 20,
            cache_read_tokens: 50,
            cache_write_tokens: 10,
            estimated_tokens: 0
        })
    );

    let seen = &server.requests()[0];
    assert_eq!(seen.path, "/v1/messages");
    assert_eq!(seen.headers["anthropic-version"], "2023-06-01");
    assert_eq!(seen.headers["x-api-key"], "sk-ant-test");
    let expected = serde_json::json!({
        "model": "claude-haiku-4-5",
        "max_tokens": 4096,
        "system": [{"type": "text", "text": "Be brief."}, {"type": "text", "text": "No more tools after this."}],
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "Weather in Porto and Lisbon?"}]},
            {"role": "assistant", "content": [
                {"type": "text", "text": "Looking both up."},
                {"type": "tool_use", "id": "toolu_a", "name": "weather", "input": {"city": "Porto"}},
                {"type": "tool_use", "id": "toolu_b", "name": "weather", "input": {"city": "Lisbon"}}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_a", "content": "sunny", "is_error": false},
                {"type": "tool_result", "tool_use_id": "toolu_b", "content": "Error: timeout", "is_error": true},
                {"type": "text", "text": "Try something else."}]}
        ],
        "tools": [{"name": "weather", "description": "Weather", "input_schema": {"type": "object"}}],
        "tool_choice": {"type": "any"}
    });
    assert_eq!(seen.body, expected);
}

#[tokio::test]
async fn recorded_errors_map_to_kinds_with_retry_advice() {
    let overloaded = Reply::json(
        529,
        r#"{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}"#,
    )
    .with_header("request-id", "req_529");
    let server = FakeServer::start(vec![
        recorded_error("anthropic/error_429__d743d628_0.json"),
        recorded_error("anthropic/error_400__f59a9391_1.json"),
        overloaded,
    ])
    .await;
    let messages = [Message::user("hi")];
    let client = client(&server);
    let req = request(&messages, &[], ToolChoice::Auto);

    let e = client.complete(&req).await.unwrap_err();
    assert_eq!((e.kind, e.status), (ProviderErrorKind::RateLimited, Some(429)));
    assert_eq!(e.should_retry, Some(true));
    assert_eq!(e.provider_code.as_deref(), Some("rate_limit_error"));
    assert_eq!(e.request_id.as_deref(), Some("req_011CYK5mje9HkutJtmfPzzNC"));
    assert!(e.transient());

    let e = client.complete(&req).await.unwrap_err();
    assert_eq!(e.kind, ProviderErrorKind::InvalidRequest);
    assert_eq!(e.should_retry, Some(false));
    assert!(!e.transient());
    assert!(e.message.contains("tool_result"));

    let e = client.complete(&req).await.unwrap_err();
    assert_eq!((e.kind, e.request_id.as_deref()), (ProviderErrorKind::Overloaded, Some("req_529")));
    assert!(e.transient());
}

#[tokio::test]
async fn in_stream_errors_and_early_closes_end_with_one_typed_error() {
    let start = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"model\":\"claude-x\",\"usage\":{\"input_tokens\":5,\"output_tokens\":1}}}\n\n";
    let block = "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n";
    let delta = "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hi\"}}\n\n";
    let overloaded = "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n";
    let stop = "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":2}}\n\n";
    let unknown = "event: future_event\ndata: {\"type\":\"future_event\",\"x\":1}\n\n";
    let server = FakeServer::start(vec![
        Reply::sse_events(&[start, block, delta, overloaded]),
        Reply::sse_events(&[start, block, delta]),
        Reply::sse_events(&[start, block, unknown, ": keep-alive\n\n", delta, stop]),
    ])
    .await;
    let messages = [Message::user("hi")];
    let req = request(&messages, &[], ToolChoice::Auto);

    let e = stream_all(&client(&server), &req).await.unwrap_err();
    assert_eq!(e.kind, ProviderErrorKind::Overloaded);
    assert!(e.transient());
    let e = stream_all(&client(&server), &req).await.unwrap_err();
    assert_eq!(e.kind, ProviderErrorKind::StreamBroken);
    let ok = stream_all(&client(&server), &req).await.unwrap();
    assert_eq!(
        (ok.text.as_deref(), ok.stop_reason),
        (Some("Hi"), StopReason::EndTurn),
        "no message_stop, but a stop reason"
    );
}

#[tokio::test]
async fn pause_turn_and_refusal_stop_reasons_are_kept() {
    let pause = r#"{"content":[{"type":"text","text":"..."}],"stop_reason":"pause_turn","usage":{"input_tokens":1,"output_tokens":1}}"#;
    let refusal = r#"{"content":[{"type":"text","text":"I can't help with that."}],"stop_reason":"refusal"}"#;
    let server = FakeServer::start(vec![Reply::json(200, pause), Reply::json(200, refusal)]).await;
    let messages = [Message::user("hi")];
    let client = client(&server);
    let r = client.complete(&request(&messages, &[], ToolChoice::Auto)).await.unwrap();
    assert_eq!(r.stop_reason, StopReason::Other("pause_turn".into()));
    let r = client.complete(&request(&messages, &[], ToolChoice::Auto)).await.unwrap();
    assert_eq!(r.stop_reason, StopReason::Refusal);
}

#[tokio::test]
async fn the_client_drives_a_tool_loop_and_sends_the_result_with_its_id() {
    let call = r#"{"content":[{"type":"tool_use","id":"toolu_9","name":"weather","input":{"city":"Porto"}}],"stop_reason":"tool_use","usage":{"input_tokens":40,"output_tokens":10}}"#;
    let answer = r#"{"content":[{"type":"text","text":"Sunny."}],"stop_reason":"end_turn","usage":{"input_tokens":60,"output_tokens":3}}"#;
    let server = FakeServer::start(vec![Reply::json(200, call), Reply::json(200, answer)]).await;
    let tools =
        ToolSet::new().with(looprail_loop_core::testkit::RecordingTool::new("weather").output("sunny"));
    let mut run = Run::builder(LoopConfig::default())
        .system("sys")
        .user("Porto?")
        .tools(tools.definitions())
        .build()
        .unwrap();
    let outcome = Driver::new(std::sync::Arc::new(client(&server)), tools)
        .streaming(false)
        .drive(&mut run)
        .await
        .unwrap();
    assert_eq!(outcome.final_text, "Sunny.");
    let second = &server.requests()[1].body;
    let result = &second["messages"][2]["content"][0];
    assert_eq!(result["type"], "tool_result");
    assert_eq!(result["tool_use_id"], "toolu_9");
    assert_eq!(result["content"], "sunny");
}

#[test]
fn a_missing_key_is_an_error_at_construction() {
    assert_eq!(ClientConfig::anthropic_with("claude", |_| None).unwrap_err().key, "ANTHROPIC_API_KEY");
}

#[tokio::test]
async fn a_server_tools_call_in_a_stream_is_no_call_of_the_loops() {
    // Anthropic runs its server tools (web search) itself: their input arrives as
    // input_json_delta like a client tool's, but nothing is for the loop to run.
    let event =
        |data: serde_json::Value| format!("event: {}\ndata: {data}\n\n", data["type"].as_str().unwrap());
    let sse = [
        event(serde_json::json!({"type": "message_start", "message": {"id": "msg_s", "type": "message", "role": "assistant",
            "model": "claude-sonnet-4-5", "content": [], "usage": {"input_tokens": 20, "output_tokens": 1}}})),
        event(serde_json::json!({"type": "content_block_start", "index": 0,
            "content_block": {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}}})),
        event(serde_json::json!({"type": "content_block_delta", "index": 0,
            "delta": {"type": "input_json_delta", "partial_json": "{\"query\": \"eclipses 2026\"}"}})),
        event(serde_json::json!({"type": "content_block_stop", "index": 0})),
        event(serde_json::json!({"type": "content_block_start", "index": 1, "content_block": {"type": "web_search_tool_result",
            "tool_use_id": "srvtoolu_1", "content": [{"type": "web_search_result", "title": "Eclipses", "url": "https://example.com"}]}})),
        event(serde_json::json!({"type": "content_block_stop", "index": 1})),
        event(serde_json::json!({"type": "content_block_start", "index": 2, "content_block": {"type": "text", "text": ""}})),
        event(serde_json::json!({"type": "content_block_delta", "index": 2, "delta": {"type": "text_delta", "text": "Two this year."}})),
        event(serde_json::json!({"type": "content_block_stop", "index": 2})),
        event(serde_json::json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 30}})),
        event(serde_json::json!({"type": "message_stop"})),
    ]
    .concat();
    let server = FakeServer::start(vec![Reply::sse_text(&sse)]).await;
    let messages = [Message::user("Which eclipses are there this year?")];
    let response = stream_all(&client(&server), &request(&messages, &[], ToolChoice::Auto)).await.unwrap();
    assert!(response.tool_calls.is_empty(), "{:?}", response.tool_calls);
    assert_eq!(response.text.as_deref(), Some("Two this year."));
    assert_eq!(response.stop_reason, StopReason::EndTurn);
}
