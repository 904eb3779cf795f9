//! A fake OpenAI Chat Completions API for the agents that reach their model through one (Copilot
//! CLI, Qwen Code): the agent's main loop (the requests declaring its shell tool) gets a shell
//! call to make, or a final answer; told that no further call will run, it answers, as a model
//! does.

use looprail_gateway::Api;
use looprail_providers::fake::{FakeServer, Reply};
use serde_json::{Value, json};

/// The tool results in a request's messages, as text (a string as it is, parts as JSON).
pub fn results(body: &Value) -> Vec<String> {
    let messages = body["messages"].as_array().into_iter().flatten();
    let results = messages.filter(|m| m["role"] == "tool");
    results.map(|m| m["content"].as_str().map_or_else(|| m["content"].to_string(), str::to_owned)).collect()
}

/// Whether a request declares the tool `name` (the agent's main loop does).
pub fn declares(body: &Value, name: &str) -> bool {
    body["tools"].as_array().is_some_and(|t| t.iter().any(|t| t["function"]["name"] == name))
}

/// The fake: the main loop of an agent whose shell tool is `tool` gets `next(calls so far)`'s
/// command, or with `None` (or once told to end its turn) a final answer.
pub async fn model(
    tool: &'static str,
    next: impl Fn(usize) -> Option<String> + Send + Sync + 'static,
) -> FakeServer {
    FakeServer::responding(move |body| {
        let results = results(body);
        let n = results.len();
        let told_to_end = results.last().is_some_and(|r| r.contains("end your turn now"));
        let message = match next(n).filter(|_| declares(body, tool) && !told_to_end) {
            Some(command) => {
                json!({"role": "assistant", "content": null, "tool_calls": [{"id": format!("call_{n}"),
                "type": "function", "function": {"name": tool,
                    "arguments": json!({"command": command, "description": "build"}).to_string()}}]})
            }
            None => json!({"role": "assistant", "content": format!("done after {n} calls")}),
        };
        let finish = if message["tool_calls"].is_array() { "tool_calls" } else { "stop" };
        let reply = json!({"id": format!("chatcmpl-{n}"), "object": "chat.completion", "created": 1,
            "model": "gpt-4o-mini", "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}});
        if body["stream"].as_bool() == Some(true) {
            return Reply::sse_text(&Api::OpenAi.to_stream(&reply, true));
        }
        Reply::json(200, &reply.to_string())
    })
    .await
}
