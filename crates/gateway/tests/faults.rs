//! The gateway fails safe (issue 36): a concluded conversation ends with a text answer even when
//! the upstream answers the final-answer request with tool calls, or not at all (F11); a store
//! it cannot read refuses the request with a 503 the SDKs retry and forwards nothing, unless
//! fail-open is set, and the gateway recovers when the store does. (PostgreSQL stopped
//! mid-conversation: tests/store_outage.rs.)

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::time::Duration;

use looprail_gateway::{Api, Gateway, GatewayConfig, StoreFailure};
use looprail_journal::SqliteStore;
use looprail_providers::fake::{FakeServer, Reply};
use serde_json::{Value, json};

/// How the upstream answers the final-answer request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Final {
    /// With tool calls again (it ignores `tool_choice: none`), spending 700 + 50 tokens.
    Calls,
    /// With a 500.
    Error,
    /// With a 200 whose body is not JSON.
    NotJson,
}

/// An upstream that calls `search` whatever it is asked, and answers the final-answer request
/// as `last` says.
async fn stubborn(api: Api, last: Final) -> FakeServer {
    FakeServer::responding(move |body| {
        let final_request = body["tool_choice"] == "none" || body["tool_choice"]["type"] == "none";
        match last {
            Final::Error if final_request => {
                return Reply::json(500, r#"{"error": {"message": "boom", "type": "server_error"}}"#);
            }
            Final::NotJson if final_request => return Reply::json(200, "<html>upstream proxy page</html>"),
            _ => {}
        }
        let (input, output) = if final_request { (700, 50) } else { (1, 1) };
        let reply = match api {
            Api::OpenAi => json!({"id": "c", "object": "chat.completion", "created": 1, "model": "m",
                "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "content": null,
                "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "search", "arguments": "{\"q\":\"x\"}"}}]}}],
                "usage": {"prompt_tokens": input, "completion_tokens": output, "total_tokens": input + output}}),
            Api::Anthropic => json!({"id": "msg", "type": "message", "role": "assistant", "model": "c",
                "content": [{"type": "tool_use", "id": "toolu_1", "name": "search", "input": {"q": "x"}}],
                "stop_reason": "tool_use", "stop_sequence": null, "usage": {"input_tokens": input, "output_tokens": output}}),
            Api::Responses => json!({"id": "resp", "object": "response", "created_at": 1, "status": "completed", "model": "m",
                "output": [{"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "search", "arguments": "{\"q\":\"x\"}", "status": "completed"}],
                "parallel_tool_calls": true, "tool_choice": "auto", "tools": [],
                "usage": {"input_tokens": input, "output_tokens": output, "total_tokens": input + output}}),
        };
        Reply::json(200, &reply.to_string())
    })
    .await
}

fn settings(upstream: &str) -> GatewayConfig {
    let mut settings = GatewayConfig::default();
    settings.upstream.openai = upstream.to_owned();
    settings.upstream.anthropic = upstream.to_owned();
    settings.upstream.openai_key = None;
    settings.upstream.anthropic_key = None;
    settings.upstream.retries = 0;
    settings
}

/// Drives a client that runs every call it gets, until it gets a text answer; returns it and
/// the steps taken.
async fn drive(api: Api, url: &str) -> (Value, usize) {
    let client = reqwest::Client::new();
    let path = match api {
        Api::OpenAi => "/v1/chat/completions",
        Api::Anthropic => "/v1/messages",
        Api::Responses => "/v1/responses",
    };
    let mut history: Vec<Value> = vec![json!({"role": "user", "content": "find it"})];
    for step in 1..=60 {
        let body = match api {
            Api::Responses => json!({"model": "m", "input": history,
                "tools": [{"type": "function", "name": "search", "parameters": {"type": "object"}}]}),
            Api::OpenAi => json!({"model": "m", "messages": history,
                "tools": [{"type": "function", "function": {"name": "search", "parameters": {"type": "object"}}}]}),
            Api::Anthropic => json!({"model": "c", "max_tokens": 100, "messages": history,
                "tools": [{"name": "search", "input_schema": {"type": "object"}}]}),
        };
        let response = common::post_json(&client, &format!("{url}{path}"), &body).await;
        assert_eq!(response.status(), 200);
        let answer: Value = serde_json::from_slice(&response.bytes().await.unwrap()).unwrap();
        match api {
            Api::OpenAi => {
                let message = answer["choices"][0]["message"].clone();
                let Some(calls) = message["tool_calls"].as_array().cloned() else { return (answer, step) };
                history.push(message);
                history
                    .push(json!({"role": "tool", "tool_call_id": calls[0]["id"], "content": "no results"}));
            }
            Api::Anthropic => {
                let Some(call) =
                    answer["content"].as_array().unwrap().iter().find(|b| b["type"] == "tool_use").cloned()
                else {
                    return (answer, step);
                };
                history.push(json!({"role": "assistant", "content": answer["content"]}));
                history.push(json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": call["id"], "content": "no results"}]}));
            }
            Api::Responses => {
                let output = answer["output"].as_array().unwrap().clone();
                let Some(call) = output.iter().find(|i| i["type"] == "function_call").cloned() else {
                    return (answer, step);
                };
                history.extend(output);
                history.push(json!({"type": "function_call_output", "call_id": call["call_id"], "output": "no results"}));
            }
        }
    }
    panic!("{api:?}: the loop never ended");
}

fn text_of(api: Api, answer: &Value) -> String {
    api.reply_message(answer).and_then(|m| m.joined_text()).unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_ignoring_tool_choice_none_still_ends_with_a_text_answer() {
    for api in [Api::OpenAi, Api::Anthropic, Api::Responses] {
        for last in [Final::Calls, Final::Error, Final::NotJson] {
            let upstream = stubborn(api, last).await;
            let url = common::serve(settings(&upstream.url), "stubborn").await;
            let (answer, steps) = drive(api, &url).await;
            let text = text_of(api, &answer);
            assert!(text.starts_with("I could not finish this task"), "{api:?}: {answer}");
            assert!(text.contains("no results"), "{api:?}: it quotes the latest results: {text}");
            assert!(steps < 30, "{api:?}: concluded at step {steps}");
            let asked_final = upstream.requests().iter().any(|r| r.body.to_string().contains("\"none\""));
            assert!(asked_final, "{api:?}: the final answer was asked for first");
            if last == Final::Calls {
                // The replaced answer's tokens were spent: they are counted, and shown.
                assert_eq!(api.usage(&answer), (700, 50), "{api:?}: {answer}");
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_success_whose_body_is_not_json_is_a_502_not_a_200_carrying_an_error() {
    let upstream = FakeServer::responding(|_| Reply::json(200, "<html>upstream proxy page</html>")).await;
    let url = common::serve(settings(&upstream.url), "not-json").await;
    let client = reqwest::Client::new();
    let response = common::post_json(&client, &format!("{url}/v1/chat/completions"), &request()).await;
    assert_eq!(response.status(), 502);
    let body: Value = serde_json::from_slice(&response.bytes().await.unwrap()).unwrap();
    assert!(body["error"]["message"].as_str().unwrap().contains("not JSON"), "{body}");
}

/// A gateway on the SQLite file at `path` with `on_store_error`, saving each conversation
/// before its answer goes out (so a test that breaks the store next breaks no save).
async fn on_sqlite(path: &std::path::Path, upstream: &str, on_store_error: StoreFailure) -> String {
    let mut settings = settings(upstream);
    settings.on_store_error = on_store_error;
    settings.save_order = looprail_gateway::SaveOrder::BeforeAnswer;
    let store = SqliteStore::open_with(path, Duration::from_millis(300)).await.unwrap();
    let gateway = Gateway::new(settings, store.into()).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(looprail_gateway::serve(listener, gateway, std::future::pending()));
    url
}

/// Makes the store at `path` unreadable to the gateway (its table of documents moved away, as
/// a damaged or half-migrated database would be), or, with `mend`, readable again.
fn break_store(path: &std::path::Path, mend: bool) {
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.busy_timeout(Duration::from_secs(5)).unwrap();
    let sql = if mend {
        "ALTER TABLE journals_away RENAME TO journals"
    } else {
        "ALTER TABLE journals RENAME TO journals_away"
    };
    conn.execute_batch(sql).unwrap();
}

fn request() -> Value {
    json!({"model": "m", "messages": [{"role": "user", "content": "hello"}]})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreadable_store_fails_closed_with_a_retryable_503_then_recovers() {
    let upstream = FakeServer::responding(|_| {
        Reply::json(200, &json!({"id": "c", "object": "chat.completion", "created": 1, "model": "m",
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "hi"}}]}).to_string())
    })
    .await;
    let path = common::TempStore::new("unreadable");
    let url = on_sqlite(&path, &upstream.url, StoreFailure::FailClosed).await;
    let client = reqwest::Client::new();
    let endpoint = format!("{url}/v1/chat/completions");
    assert_eq!(common::post_json(&client, &endpoint, &request()).await.status(), 200);
    break_store(&path, false);
    let refused = common::post_json(&client, &endpoint, &request()).await;
    assert_eq!(refused.status(), 503);
    assert_eq!(refused.headers()["retry-after"], "2");
    let body: Value = serde_json::from_slice(&refused.bytes().await.unwrap()).unwrap();
    assert_eq!(body["error"]["type"], "server_error", "OpenAI's error format: {body}");
    assert_eq!(upstream.requests().len(), 1, "nothing was forwarded unguarded");
    break_store(&path, true);
    assert_eq!(common::post_json(&client, &endpoint, &request()).await.status(), 200, "recovered");
    assert_eq!(upstream.requests().len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_fail_open_an_unreadable_store_forwards_the_request_unguarded() {
    let upstream = FakeServer::responding(|_| {
        Reply::json(
            200,
            &json!({"id": "m", "type": "message", "role": "assistant", "model": "c",
            "content": [{"type": "text", "text": "hi"}], "stop_reason": "end_turn", "stop_sequence": null,
            "usage": {"input_tokens": 1, "output_tokens": 1}})
            .to_string(),
        )
    })
    .await;
    let path = common::TempStore::new("fail-open");
    let url = on_sqlite(&path, &upstream.url, StoreFailure::FailOpen).await;
    let client = reqwest::Client::new();
    let endpoint = format!("{url}/v1/messages");
    let body = json!({"model": "c", "max_tokens": 10, "messages": [{"role": "user", "content": "hello"}]});
    break_store(&path, false);
    let response = common::post_json(&client, &endpoint, &body).await;
    assert_eq!(response.status(), 200);
    let answer: Value = serde_json::from_slice(&response.bytes().await.unwrap()).unwrap();
    assert_eq!(answer["content"][0]["text"], "hi");
    assert_eq!(upstream.requests()[0].body, body, "forwarded as the client sent it");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_responses_continuation_on_an_unreadable_store_gets_the_503_not_a_400() {
    let upstream = FakeServer::responding(|_| {
        Reply::json(200, &json!({"id": "resp_1", "object": "response", "created_at": 1, "status": "completed", "model": "m",
            "output": [{"type": "message", "id": "msg_1", "status": "completed", "role": "assistant",
                "content": [{"type": "output_text", "text": "hi", "annotations": []}]}],
            "parallel_tool_calls": true, "tool_choice": "auto", "tools": []}).to_string())
    })
    .await;
    let path = common::TempStore::new("responses-outage");
    let url = on_sqlite(&path, &upstream.url, StoreFailure::FailClosed).await;
    let client = reqwest::Client::new();
    let endpoint = format!("{url}/v1/responses");
    let first = common::post_json(&client, &endpoint, &json!({"model": "m", "input": "hello"})).await;
    assert_eq!(first.status(), 200);
    let id = serde_json::from_slice::<Value>(&first.bytes().await.unwrap()).unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    break_store(&path, false);
    let next = json!({"model": "m", "previous_response_id": id, "input": "and then?"});
    let refused = common::post_json(&client, &endpoint, &next).await;
    // A 400 ("send the whole input") would not be retried by the SDKs: the outage gets the
    // configured answer, a 503 they retry.
    assert_eq!(refused.status(), 503);
    assert_eq!(refused.headers()["retry-after"], "2");
    assert_eq!(upstream.requests().len(), 1, "nothing was forwarded unguarded");
    break_store(&path, true);
    assert_eq!(common::post_json(&client, &endpoint, &next).await.status(), 200, "recovered");
}
