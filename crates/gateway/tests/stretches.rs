//! Issue 34 through the gateway, with its defaults (the coding-agent profile): a healthy agent
//! works through two user requests of 300 distinct tool calls each, in one conversation, on the
//! OpenAI and Anthropic APIs, streamed and not. Each stretch ends with the model's own answer:
//! nothing injected, nothing forced, no final answer asked for.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::time::Duration;

use looprail_gateway::{Api, GatewayConfig};
use looprail_providers::fake::{FakeServer, Reply};
use serde_json::{Value, json};

const CALLS_PER_STRETCH: usize = 300;

/// Tool results since the last user request in a request body (OpenAI: `tool` messages after
/// the last `user` one; Anthropic: `tool_result` blocks after the last user text).
fn stretch_calls(body: &Value) -> usize {
    let messages = body["messages"].as_array().unwrap();
    let mut count = 0;
    for m in messages {
        let results =
            m["content"].as_array().map_or(0, |b| b.iter().filter(|b| b["type"] == "tool_result").count());
        match (m["role"].as_str(), results) {
            (Some("tool"), _) => count += 1,
            (Some("user"), 0) => count = 0,
            (Some("user"), n) => count += n,
            _ => {}
        }
    }
    count
}

/// A model that searches for something new each time until the stretch has its 300 calls,
/// then answers.
async fn upstream(api: Api) -> FakeServer {
    FakeServer::responding(move |body| {
        let done = stretch_calls(body);
        let total = body["messages"].as_array().map_or(0, Vec::len);
        let args = json!({"q": format!("topic {total}")});
        let reply = match (api, done < CALLS_PER_STRETCH) {
            (Api::Anthropic, true) => json!({"id": format!("msg_{total}"), "type": "message", "role": "assistant", "model": "c",
                "content": [{"type": "tool_use", "id": format!("toolu_{total}"), "name": "search", "input": args}],
                "stop_reason": "tool_use", "stop_sequence": null, "usage": {"input_tokens": 10, "output_tokens": 5}}),
            (Api::Anthropic, false) => json!({"id": format!("msg_{total}"), "type": "message", "role": "assistant", "model": "c",
                "content": [{"type": "text", "text": format!("answer after {done} calls")}],
                "stop_reason": "end_turn", "stop_sequence": null, "usage": {"input_tokens": 10, "output_tokens": 5}}),
            (_, true) => json!({"id": "c", "object": "chat.completion", "created": 1, "model": "m",
                "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "content": null,
                    "tool_calls": [{"id": format!("call_{total}"), "type": "function", "function": {"name": "search", "arguments": args.to_string()}}]}}]}),
            (_, false) => json!({"id": "c", "object": "chat.completion", "created": 1, "model": "m",
                "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": format!("answer after {done} calls")}}]}),
        };
        if body["stream"].as_bool() == Some(true) {
            return Reply::sse_text(&api.to_stream(&reply, false));
        }
        Reply::json(200, &reply.to_string())
    })
    .await
}

/// What the client reads of a reply: the tool call (id, arguments) or the text.
fn read_reply(api: Api, stream: bool, raw: &[u8]) -> Result<(String, Value), String> {
    if !stream {
        let reply: Value = serde_json::from_slice(raw).unwrap();
        return match api {
            Api::Anthropic => {
                let block = &reply["content"][0];
                match block["type"].as_str() {
                    Some("tool_use") => {
                        Ok((block["id"].as_str().unwrap().to_owned(), block["input"].clone()))
                    }
                    _ => Err(block["text"].as_str().unwrap_or_default().to_owned()),
                }
            }
            _ => {
                let message = &reply["choices"][0]["message"];
                match message["tool_calls"].as_array().and_then(|c| c.first()) {
                    Some(call) => Ok((
                        call["id"].as_str().unwrap().to_owned(),
                        serde_json::from_str(call["function"]["arguments"].as_str().unwrap()).unwrap(),
                    )),
                    None => Err(message["content"].as_str().unwrap_or_default().to_owned()),
                }
            }
        };
    }
    // [id, arguments, text], each where the two APIs stream it.
    let mut parts = [String::new(), String::new(), String::new()];
    let pointers = [
        ("/content_block/id", 0),
        ("/choices/0/delta/tool_calls/0/id", 0),
        ("/delta/partial_json", 1),
        ("/choices/0/delta/tool_calls/0/function/arguments", 1),
        ("/delta/text", 2),
        ("/choices/0/delta/content", 2),
    ];
    for data in String::from_utf8_lossy(raw).lines().filter_map(|l| l.strip_prefix("data: ")) {
        let Ok(event) = serde_json::from_str::<Value>(data) else { continue };
        for (pointer, into) in pointers {
            if let Some(part) = event.pointer(pointer).and_then(Value::as_str) {
                parts[into].push_str(part);
            }
        }
    }
    let [id, arguments, text] = parts;
    if id.is_empty() { Err(text) } else { Ok((id, serde_json::from_str(&arguments).unwrap())) }
}

async fn two_stretches(api: Api, stream: bool) {
    let upstream = upstream(api).await;
    let mut settings = GatewayConfig::default();
    settings.upstream.openai = upstream.url.clone();
    settings.upstream.anthropic = upstream.url.clone();
    settings.upstream.openai_key = None;
    settings.upstream.anthropic_key = None;
    settings.upstream.backoff = Duration::from_millis(5);
    let gw = common::serve(settings, "stretches").await;
    let (path, tools) = match api {
        Api::Anthropic => ("/v1/messages", json!([{"name": "search", "input_schema": {"type": "object"}}])),
        _ => (
            "/v1/chat/completions",
            json!([{"type": "function", "function": {"name": "search", "parameters": {"type": "object"}}}]),
        ),
    };
    let client = reqwest::Client::new();
    let mut messages: Vec<Value> = Vec::new();
    let mut runs = Vec::new();
    for request in ["Survey the codebase", "Now survey the tests"] {
        messages.push(json!({"role": "user", "content": request}));
        let mut calls = 0;
        let answer = loop {
            let body = json!({"model": "m", "max_tokens": 100, "stream": stream, "messages": messages, "tools": tools});
            let response = client
                .post(format!("{gw}{path}"))
                .header("content-type", "application/json")
                .header("x-api-key", "k")
                .body(body.to_string())
                .send()
                .await
                .unwrap();
            assert_eq!(response.status(), 200);
            runs.push(response.headers()["x-looprail-run"].to_str().unwrap().to_owned());
            match read_reply(api, stream, &response.bytes().await.unwrap()) {
                Ok((id, input)) => {
                    calls += 1;
                    let output = format!("{} files about {}", calls * 7, input["q"]);
                    match api {
                        Api::Anthropic => {
                            messages.push(json!({"role": "assistant", "content": [{"type": "tool_use", "id": id, "name": "search", "input": input}]}));
                            messages.push(json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": id, "content": output}]}));
                        }
                        _ => {
                            messages.push(json!({"role": "assistant", "content": null, "tool_calls": [{"id": id, "type": "function",
                                "function": {"name": "search", "arguments": input.to_string()}}]}));
                            messages.push(json!({"role": "tool", "tool_call_id": id, "content": output}));
                        }
                    }
                }
                Err(text) => break text,
            }
        };
        assert_eq!(calls, CALLS_PER_STRETCH, "{api:?} stream {stream}: the agent worked to the end");
        assert_eq!(answer, format!("answer after {CALLS_PER_STRETCH} calls"), "the model's own answer");
        messages.push(match api {
            Api::Anthropic => json!({"role": "assistant", "content": [{"type": "text", "text": answer}]}),
            _ => json!({"role": "assistant", "content": answer}),
        });
    }
    assert!(runs.windows(2).all(|w| w[0] == w[1]), "one conversation throughout");
    for seen in upstream.requests() {
        let body = seen.body.to_string();
        assert!(!body.contains("[looprail]"), "nothing injected");
        assert!(common::sdk::may_call_tools(&seen.body), "no final answer asked for, no tool forced");
        assert!(seen.body.get("tool_choice").is_none(), "no tool forced");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_stretches_of_300_calls_pass_untouched_openai() {
    two_stretches(Api::OpenAi, false).await;
    two_stretches(Api::OpenAi, true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_stretches_of_300_calls_pass_untouched_anthropic() {
    two_stretches(Api::Anthropic, false).await;
    two_stretches(Api::Anthropic, true).await;
}
