//! Compaction through the gateway (issue 19): a client whose history keeps growing past 70% of
//! the window gets its older messages replaced upstream by a summary, made once and reused by
//! the following requests, extended only when the request passes the threshold again; the
//! client's own history and its conversation id are untouched.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use looprail_gateway::compaction::CompactionSettings;
use looprail_gateway::{Gateway, GatewayConfig};
use looprail_journal::SqliteStore;
use looprail_providers::fake::{FakeServer, Reply};
use serde_json::{Value, json};

fn completion(message: Value) -> Reply {
    Reply::json(
        200,
        &json!({"id": "r", "object": "chat.completion", "created": 1, "model": "m",
        "choices": [{"index": 0, "finish_reason": "stop", "message": message}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5}})
        .to_string(),
    )
}

/// A gateway with compaction on both APIs' upstream `upstream`, its window 2,000 tokens:
/// compaction past ~5,600 bytes of request, ~2,400 bytes kept verbatim. Its URL and store file.
async fn start(upstream: &str, name: &str) -> (String, common::TempStore) {
    let mut settings = GatewayConfig::new(Default::default(), Default::default());
    settings.upstream.openai = upstream.to_owned();
    settings.upstream.anthropic = upstream.to_owned();
    settings.upstream.openai_key = Some("k".into());
    settings.upstream.anthropic_key = Some("k".into());
    settings.compaction = Some(CompactionSettings { context_window: 2_000, ..CompactionSettings::default() });
    let store = common::TempStore::new(&format!("compaction-{name}"));
    let gateway = Gateway::new(settings, SqliteStore::open(&store).await.unwrap().into()).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(looprail_gateway::serve(listener, gateway, std::future::pending()));
    (url, store)
}

fn is_summary_call(body: &Value) -> bool {
    let asked = body.get("messages").unwrap_or(&body["input"]);
    asked[0]["content"].as_str().is_some_and(|c| c.starts_with("Summarise the conversation below"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_growing_history_is_summarised_once_then_the_summary_reused_and_extended() {
    let summaries = Arc::new(AtomicUsize::new(0));
    let calls = Arc::new(AtomicUsize::new(0));
    let upstream = FakeServer::responding({
        let (summaries, calls) = (Arc::clone(&summaries), Arc::clone(&calls));
        move |body| {
            if is_summary_call(body) {
                let n = summaries.fetch_add(1, Ordering::SeqCst) + 1;
                return completion(json!({"role": "assistant", "content": format!("SUMMARY-{n}: searched many topics")}));
            }
            let n = calls.fetch_add(1, Ordering::SeqCst);
            completion(json!({"role": "assistant", "content": null, "tool_calls": [{"id": format!("call_{n}"), "type": "function",
                "function": {"name": "search", "arguments": format!("{{\"q\":\"topic {n}\"}}")}}]}))
        }
    })
    .await;
    let (gateway, _store) = start(&upstream.url, "openai").await;
    let url = format!("{gateway}/v1/chat/completions");

    let tools =
        json!([{"type": "function", "function": {"name": "search", "parameters": {"type": "object"}}}]);
    let mut messages = vec![
        json!({"role": "system", "content": "You research."}),
        json!({"role": "user", "content": "Survey the field"}),
    ];
    let client = reqwest::Client::new();
    let mut ids = Vec::new();
    for step in 0..40 {
        let body = json!({"model": "m", "messages": messages, "tools": tools});
        let response = common::post_json(&client, &url, &body).await;
        assert_eq!(response.status(), 200);
        ids.push(response.headers()["x-looprail-run"].to_str().unwrap().to_owned());
        let answer: Value = serde_json::from_slice(&response.bytes().await.unwrap()).unwrap();
        let reply = answer["choices"][0]["message"].clone();
        let id = reply["tool_calls"][0]["id"].clone();
        messages.push(reply);
        messages.push(json!({"role": "tool", "tool_call_id": id, "content": format!("findings of step {step}: {}", "detail ".repeat(40))}));
    }
    assert!(ids.windows(2).all(|w| w[0] == w[1]), "one conversation throughout");

    let seen = upstream.requests();
    let agent: Vec<&Value> = seen.iter().map(|r| &r.body).filter(|b| !is_summary_call(b)).collect();
    let compacted: Vec<&&Value> = agent
        .iter()
        .filter(|b| {
            b["messages"].as_array().unwrap().iter().any(|m| {
                m["content"]
                    .as_str()
                    .is_some_and(|c| c.starts_with("[looprail] The earlier part of this conversation"))
            })
        })
        .collect();
    let made = summaries.load(Ordering::SeqCst);
    assert!(compacted.len() >= 20, "the later requests went compacted: {}", compacted.len());
    assert!(made >= 2, "the summary was extended as the history kept growing: {made}");
    assert!(
        made * 3 <= compacted.len(),
        "each summary served several requests: {made} for {}",
        compacted.len()
    );
    for body in &compacted {
        let messages = body["messages"].as_array().unwrap();
        assert_eq!(messages[0]["role"], "system", "the system prompt is kept");
        assert_eq!(messages[2]["role"], "assistant", "the verbatim part starts at an assistant turn");
        assert!(body.to_string().len() < 7_000, "compacted requests stay near the threshold");
    }
    // An extension is written from the summary before it and only what came after.
    let extensions: Vec<&Value> =
        seen.iter().map(|r| &r.body).filter(|b| is_summary_call(b)).skip(1).collect();
    let prompt = extensions[0]["messages"][0]["content"].as_str().unwrap();
    assert!(prompt.contains("Summary of what came before:\nSUMMARY-1"), "{prompt}");
    assert!(!prompt.contains("findings of step 0:"), "the first stretch is not summarised again");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_compacted_anthropic_request_still_alternates_and_pairs_every_result_with_its_call() {
    let calls = Arc::new(AtomicUsize::new(0));
    let upstream = FakeServer::responding({
        let calls = Arc::clone(&calls);
        move |body| {
            let content = if is_summary_call(body) {
                json!([{"type": "text", "text": "SUMMARY: read many files"}])
            } else {
                let n = calls.fetch_add(1, Ordering::SeqCst);
                json!([{"type": "text", "text": "Reading on."},
                       {"type": "tool_use", "id": format!("toolu_{n}"), "name": "read", "input": {"path": format!("src/f{n}.rs")}}])
            };
            Reply::json(200, &json!({"id": "msg", "type": "message", "role": "assistant", "model": "c", "content": content,
                "stop_reason": "tool_use", "usage": {"input_tokens": 10, "output_tokens": 5}}).to_string())
        }
    })
    .await;
    let (gateway, _store) = start(&upstream.url, "anthropic").await;
    let url = format!("{gateway}/v1/messages");

    let tools = json!([{"name": "read", "input_schema": {"type": "object"}}]);
    let mut messages = vec![json!({"role": "user", "content": "Review the crate"})];
    let client = reqwest::Client::new();
    for step in 0..25 {
        let body = json!({"model": "c", "max_tokens": 100, "system": "You review code.", "messages": messages, "tools": tools});
        let response = common::post_json(&client, &url, &body).await;
        assert_eq!(response.status(), 200);
        let answer: Value = serde_json::from_slice(&response.bytes().await.unwrap()).unwrap();
        let id = answer["content"][1]["id"].clone();
        messages.push(json!({"role": "assistant", "content": answer["content"]}));
        messages.push(json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": id,
            "content": format!("file {step}: {}", "fn body() {} ".repeat(25))}]}));
    }
    let seen = upstream.requests();
    let agent: Vec<&Value> = seen.iter().map(|r| &r.body).filter(|b| !is_summary_call(b)).collect();
    let compacted = agent
        .iter()
        .filter(|b| {
            b["messages"][0]["content"].as_str().is_some_and(|c| c.starts_with("[looprail] The earlier part"))
        })
        .count();
    assert!(compacted >= 10, "later requests went compacted: {compacted}");
    for body in agent {
        let messages = body["messages"].as_array().unwrap();
        assert_eq!(body["system"], "You review code.", "the system prompt is kept");
        assert_eq!(messages[0]["role"], "user");
        for pair in messages.windows(2) {
            assert_ne!(pair[0]["role"], pair[1]["role"], "turns alternate");
            // Every tool result answers a call in the assistant turn just before it.
            for block in pair[1]["content"].as_array().into_iter().flatten() {
                if block["type"] == "tool_result" {
                    let calls = pair[0]["content"].as_array().unwrap();
                    assert!(calls.iter().any(|c| c["id"] == block["tool_use_id"]), "{block}");
                }
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_responses_conversation_is_compacted_keeping_each_replys_items_together() {
    // A reasoning model's replies: a reasoning item, then two calls; the client sends every
    // item back (store: false), as Codex and the Agents SDK do.
    let calls = Arc::new(AtomicUsize::new(0));
    let upstream = FakeServer::responding({
        let calls = Arc::clone(&calls);
        move |body| {
            let output = if is_summary_call(body) {
                json!([{"type": "message", "id": "msg_s", "role": "assistant", "status": "completed",
                    "content": [{"type": "output_text", "text": "SUMMARY: listed and read files", "annotations": []}]}])
            } else {
                let n = calls.fetch_add(1, Ordering::SeqCst);
                json!([{"type": "reasoning", "id": format!("rs_{n}"), "summary": [], "encrypted_content": "opaque"},
                    {"type": "function_call", "id": format!("fc_{n}_a"), "call_id": format!("call_{n}_a"), "name": "ls",
                        "arguments": format!("{{\"dir\":\"d{n}\"}}"), "status": "completed"},
                    {"type": "function_call", "id": format!("fc_{n}_b"), "call_id": format!("call_{n}_b"), "name": "cat",
                        "arguments": format!("{{\"file\":\"f{n}\"}}"), "status": "completed"}])
            };
            Reply::json(200, &json!({"id": "resp", "object": "response", "status": "completed", "model": "gpt-x",
                "output": output, "usage": {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}}).to_string())
        }
    })
    .await;
    let (gateway, _store) = start(&upstream.url, "responses").await;
    let url = format!("{gateway}/v1/responses");
    let tools = json!([{"type": "function", "name": "ls", "parameters": {"type": "object"}},
        {"type": "function", "name": "cat", "parameters": {"type": "object"}}]);
    let mut input = vec![json!({"role": "user", "content": "Tidy the repository"})];
    let client = reqwest::Client::new();
    for step in 0..25 {
        let body = json!({"model": "gpt-x", "instructions": "You tidy.", "input": input, "tools": tools, "store": false});
        let response = common::post_json(&client, &url, &body).await;
        assert_eq!(response.status(), 200);
        let answer: Value = serde_json::from_slice(&response.bytes().await.unwrap()).unwrap();
        for item in answer["output"].as_array().unwrap() {
            input.push(item.clone());
            if item["type"] == "function_call" {
                input.push(json!({"type": "function_call_output", "call_id": item["call_id"],
                    "output": format!("step {step}: {}", "entry ".repeat(25))}));
            }
        }
    }
    let seen = upstream.requests();
    assert!(seen.iter().all(|r| r.path == "/v1/responses"), "the summary call goes to the same API");
    let summary_calls: Vec<&Value> = seen.iter().map(|r| &r.body).filter(|b| is_summary_call(b)).collect();
    assert!(!summary_calls.is_empty() && summary_calls.iter().all(|b| b["store"] == false));
    let agent: Vec<&Value> = seen.iter().map(|r| &r.body).filter(|b| !is_summary_call(b)).collect();
    let compacted: Vec<&&Value> = agent
        .iter()
        .filter(|b| {
            b["input"][0]["content"][0]["text"]
                .as_str()
                .is_some_and(|t| t.starts_with("[looprail] The earlier part"))
        })
        .collect();
    assert!(compacted.len() >= 10, "later requests went compacted: {}", compacted.len());
    for body in &compacted {
        let items = body["input"].as_array().unwrap();
        assert_eq!(body["instructions"], "You tidy.", "the instructions are kept");
        assert_eq!(items[1]["type"], "reasoning", "the verbatim part starts with a reply's reasoning item");
        assert!(body.to_string().len() < 7_000, "compacted requests stay near the threshold");
        let ids: Vec<&Value> =
            items.iter().filter(|i| i["type"] == "function_call").map(|i| &i["call_id"]).collect();
        for (i, item) in items.iter().enumerate() {
            if item["type"] == "function_call_output" {
                assert!(ids.contains(&&item["call_id"]), "an output lost its call: {item}");
            }
            if item["type"] == "reasoning" {
                assert_eq!(items[i + 1]["type"], "function_call", "a reasoning item is followed by its call");
            }
        }
    }
}
