//! Whatever a client sends, the gateway answers it: request bodies of every shape (fields of
//! any type, messages and items of unknown roles and kinds, blocks with missing or mistyped
//! fields, calls without ids) get an HTTP response on each API's route, and the gateway keeps
//! serving. A panic in a handler would cut the client's connection instead.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::time::Duration;

use looprail_gateway::GatewayConfig;
use looprail_loop_core::testkit::strategies::json_value;
use looprail_providers::fake::{FakeServer, Reply};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use serde_json::{Value, json};

/// One of `usual`, or any value at all.
fn often(usual: impl Strategy<Value = Value> + 'static) -> BoxedStrategy<Value> {
    prop_oneof![3 => usual, 1 => json_value()].boxed()
}

fn word(words: &'static [&'static str]) -> BoxedStrategy<Value> {
    often(proptest::sample::select(words).prop_map(Value::from))
}

/// A field of an object: left out, or present with a value.
fn field(key: &'static str, value: BoxedStrategy<Value>) -> BoxedStrategy<Option<(String, Value)>> {
    proptest::option::of(value.prop_map(move |v| (key.to_owned(), v))).boxed()
}

/// An object from optional fields.
fn object(fields: Vec<BoxedStrategy<Option<(String, Value)>>>) -> BoxedStrategy<Value> {
    fields.prop_map(|fields| Value::Object(fields.into_iter().flatten().collect())).boxed()
}

/// A content block or a Responses item: any kind the APIs name, with fields of any shape.
fn block() -> BoxedStrategy<Value> {
    let kinds = &[
        "text",
        "input_text",
        "output_text",
        "image",
        "image_url",
        "tool_use",
        "tool_result",
        "thinking",
        "function_call",
        "function_call_output",
        "custom_tool_call",
        "custom_tool_call_output",
        "message",
        "reasoning",
        "local_shell_call",
        "web_search_call",
        "server_tool_use",
        "mystery",
    ];
    object(vec![
        field("type", word(kinds)),
        field("text", often("[a-z ]{0,20}".prop_map(Value::from))),
        field("id", often("[a-z0-9_]{1,6}".prop_map(Value::from))),
        field("call_id", often("[a-z0-9_]{1,6}".prop_map(Value::from))),
        field("tool_use_id", often("[a-z0-9_]{1,6}".prop_map(Value::from))),
        field("name", often("[a-z_]{1,8}".prop_map(Value::from))),
        field("input", json_value().boxed()),
        field("arguments", often("\\{\"[a-z]\": [0-9]\\}".prop_map(Value::from))),
        field("output", json_value().boxed()),
        field("content", json_value().boxed()),
        field("role", word(&["user", "assistant", "system", "developer", "tool"])),
        field("is_error", json_value().boxed()),
    ])
}

/// A message (or item) with fields of the usual names and any shapes.
fn message() -> BoxedStrategy<Value> {
    let call = object(vec![
        field("id", often("[a-z0-9_]{1,6}".prop_map(Value::from))),
        field("type", word(&["function", "custom"])),
        field(
            "function",
            often(object(vec![
                field("name", often("[a-z_]{1,8}".prop_map(Value::from))),
                field("arguments", json_value().boxed()),
            ])),
        ),
        field("custom", json_value().boxed()),
    ]);
    let content = prop_oneof![
        "[a-z .]{0,30}".prop_map(Value::from),
        proptest::collection::vec(block(), 0..4).prop_map(Value::from),
        json_value(),
    ];
    prop_oneof![
        3 => object(vec![
            field("role", word(&["user", "assistant", "system", "developer", "tool", "function", "model", "wizard"])),
            field("content", content.boxed()),
            field("tool_calls", often(proptest::collection::vec(call, 0..3).prop_map(Value::from))),
            field("tool_call_id", often("[a-z0-9_]{1,6}".prop_map(Value::from))),
            field("function_call", json_value().boxed()),
            field("name", json_value().boxed()),
        ]),
        1 => block(),
        1 => json_value(),
    ]
    .boxed()
}

/// A request body for `api`'s route: the usual fields, often of the usual shapes.
fn body(conversation: &'static str) -> BoxedStrategy<Value> {
    let list =
        prop_oneof![4 => proptest::collection::vec(message(), 0..6).prop_map(Value::from), 1 => json_value()];
    object(vec![
        field("model", often("[a-z0-9-]{1,10}".prop_map(Value::from))),
        field(conversation, list.boxed()),
        field("system", json_value().boxed()),
        field("instructions", json_value().boxed()),
        field("tools", often(proptest::collection::vec(block(), 0..3).prop_map(Value::from))),
        field("tool_choice", json_value().boxed()),
        field("max_tokens", json_value().boxed()),
        field("stream", json_value().boxed()),
        field("stream_options", json_value().boxed()),
        field("store", json_value().boxed()),
        field("previous_response_id", often("resp_[a-z0-9]{1,6}".prop_map(Value::from))),
    ])
}

/// A gateway whose upstream answers every request with `reply`; its URL.
async fn gateway(reply: Value) -> String {
    let reply = reply.to_string();
    let upstream = FakeServer::responding(move |_| Reply::json(200, &reply)).await;
    let mut settings = GatewayConfig::new(Default::default(), Default::default());
    settings.upstream.openai = upstream.url.clone();
    settings.upstream.anthropic = upstream.url.clone();
    settings.upstream.openai_key = None;
    settings.upstream.anthropic_key = None;
    settings.upstream.retries = 0;
    settings.upstream.backoff = Duration::from_millis(1);
    std::mem::forget(upstream); // serves for the whole test process
    common::serve(settings, "robustness").await
}

#[test]
fn every_request_body_gets_an_answer_and_the_gateway_keeps_serving() {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let chat = json!({"id": "c", "object": "chat.completion", "created": 1, "model": "m",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}]});
    let messages = json!({"id": "msg_1", "type": "message", "role": "assistant", "model": "m",
        "content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn",
        "usage": {"input_tokens": 1, "output_tokens": 1}});
    let responses = json!({"id": "resp_1", "object": "response", "status": "completed", "model": "m",
        "output": [{"type": "message", "id": "m1", "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": "ok", "annotations": []}]}]});
    let routes = runtime.block_on(async {
        [
            (format!("{}/v1/chat/completions", gateway(chat).await), "messages"),
            (format!("{}/v1/messages", gateway(messages).await), "messages"),
            (format!("{}/v1/responses", gateway(responses).await), "input"),
        ]
    });
    let client = reqwest::Client::new();
    for (url, conversation) in routes {
        let mut runner =
            TestRunner::new(Config { cases: 96, failure_persistence: None, ..Config::default() });
        runner
            .run(&body(conversation), |body| {
                let answered = runtime.block_on(async {
                    let sent = client
                        .post(&url)
                        .header("content-type", "application/json")
                        .body(body.to_string())
                        .timeout(Duration::from_secs(20))
                        .send()
                        .await;
                    match sent {
                        // Any status is an answer: what matters is that one came, whole.
                        Ok(response) => response.bytes().await.is_ok(),
                        Err(_) => false,
                    }
                });
                prop_assert!(answered, "no answer to {body}");
                Ok(())
            })
            .unwrap();
        let health = runtime.block_on(async {
            let base = url.rsplit_once("/v1/").unwrap().0;
            client.get(format!("{base}/healthz")).send().await.unwrap().text().await.unwrap()
        });
        assert_eq!(health, "ok", "the gateway still serves after {url}");
    }
}
