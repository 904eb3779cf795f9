//! Issue 33 through the gateway: a client agent whose model sends the same edit again and
//! again while the file it edits grows by the same block each time. Every tool result differs
//! from the one before (the line count, the line numbers), yet nothing is learned: the gateway
//! nudges the model, then concludes the conversation with a final answer. The same detector as
//! `looprail run` decides (one implementation, `looprail_guardrails::default_stack`).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::time::Duration;

use looprail_gateway::GatewayConfig;
use looprail_providers::fake::{FakeServer, Reply};
use serde_json::{Value, json};

const BLOCK: [&str; 3] = ["import java.util.List;", "import java.util.Map;", ""];

/// The edited file as SWE-agent's editor shows it: a header, numbered lines, a footer.
fn shown(file: &[String]) -> String {
    let lines: Vec<String> = file.iter().enumerate().map(|(n, l)| format!("{}:{l}", n + 1)).collect();
    format!("[File: /repo/Main.java ({} lines total)]\n{}\nFile updated.", file.len(), lines.join("\n"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_repeating_a_growing_edit_is_nudged_then_concluded() {
    // The model sends the same edit while it may call tools, and answers when it may not.
    let upstream = FakeServer::responding(|body| {
        let may_call = common::sdk::may_call_tools(body);
        let message = if may_call {
            json!({"role": "assistant", "content": null, "tool_calls": [{"id": "call_edit", "type": "function",
                "function": {"name": "edit", "arguments": "{\"command\": \"edit 1:1\\nimport java.util.List;\\nimport java.util.Map;\\n\\nend_of_edit\"}"}}]})
        } else {
            json!({"role": "assistant", "content": "I could not finish: the edit kept duplicating the imports."})
        };
        let finish = if may_call { "tool_calls" } else { "stop" };
        let reply = json!({"id": "c", "object": "chat.completion", "created": 1, "model": "m",
            "choices": [{"index": 0, "finish_reason": finish, "message": message}]});
        Reply::json(200, &reply.to_string())
    })
    .await;
    let mut settings = GatewayConfig::new(Default::default(), Default::default());
    settings.upstream.openai = upstream.url.clone();
    settings.upstream.openai_key = None;
    settings.upstream.backoff = Duration::from_millis(5);
    let gw = common::serve(settings, "effects").await;

    let tools = json!([{"type": "function", "function": {"name": "edit", "parameters": {"type": "object"}}}]);
    let mut messages = vec![json!({"role": "user", "content": "Add the imports to Main.java"})];
    let mut file = vec!["class Main {}".to_owned()];
    let client = reqwest::Client::new();
    let mut answer = None;
    for step in 0..30 {
        let body = json!({"model": "m", "messages": messages, "tools": tools});
        let response = common::post_json(&client, &format!("{gw}/v1/chat/completions"), &body).await;
        let reply: Value = serde_json::from_slice(&response.bytes().await.unwrap()).unwrap();
        let message = reply["choices"][0]["message"].clone();
        let Some(calls) = message["tool_calls"].as_array().filter(|c| !c.is_empty()).cloned() else {
            answer = Some((step, message["content"].as_str().unwrap_or_default().to_owned()));
            break;
        };
        // The client runs the edit: the same block inserted at the top again.
        for (k, line) in BLOCK.iter().enumerate() {
            file.insert(k, (*line).to_owned());
        }
        messages.push(message);
        messages.push(json!({"role": "tool", "tool_call_id": calls[0]["id"], "content": shown(&file)}));
    }
    let (steps, text) = answer.expect("the gateway concluded the loop with a final answer");
    assert!(text.contains("could not finish"), "the model's own final answer: {text}");
    assert!(steps <= 10, "concluded within the ladder's bound, at request {steps}");
    let seen = upstream.requests();
    let nudged = seen.iter().position(|r| r.body.to_string().contains("[looprail]")).expect("nudged first");
    assert!(nudged < seen.len() - 1, "the nudge came before the conclusion");
    assert!(
        !common::sdk::may_call_tools(&seen.last().unwrap().body),
        "the final answer was asked with no tool"
    );
}
