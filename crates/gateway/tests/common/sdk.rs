//! What the SDK client tests share (Python and Node): a fake upstream whose model loops, and a
//! gateway in front of it.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use looprail_gateway::{Api, Gateway, GatewayConfig};
use looprail_journal::SqliteStore;
use looprail_loop_core::config::LoopConfig;
use looprail_providers::fake::{FakeServer, Reply, Seen};
use serde_json::{Value, json};

/// The first user message of a request (the task): in `messages`, or the Responses API's
/// `input`.
pub fn task_of(body: &Value) -> String {
    body.get("messages")
        .or_else(|| body.get("input"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .find(|m| m["role"] == "user")
        .map(|m| match &m["content"] {
            Value::String(s) => s.clone(),
            blocks => blocks[0]["text"].as_str().unwrap_or_default().to_owned(),
        })
        .unwrap_or_default()
}

/// Whether a request lets the model call tools: some are declared and the tool choice is not
/// `none` (`"none"` on OpenAI's APIs, `{"type": "none"}` on Anthropic's).
pub fn may_call_tools(body: &Value) -> bool {
    let choice = &body["tool_choice"];
    body["tools"].as_array().is_some_and(|t| !t.is_empty()) && choice != "none" && choice["type"] != "none"
}

/// What the real APIs refuse with a 400 that this gateway could cause: a tool choice without
/// tools (both), and, on Anthropic, a history holding `tool_use` or `tool_result` blocks with no
/// tools declared.
pub fn refusal(api: Api, body: &Value) -> Option<&'static str> {
    let declared = body["tools"].as_array().is_some_and(|t| !t.is_empty());
    if !declared && (body.get("tool_choice").is_some() || body.get("parallel_tool_calls").is_some()) {
        return Some("tool_choice is only allowed when tools are specified");
    }
    let blocks =
        body["messages"].as_array().into_iter().flatten().flat_map(|m| m["content"].as_array()).flatten();
    let tool_blocks = blocks.filter(|b| b["type"] == "tool_use" || b["type"] == "tool_result").count();
    (api == Api::Anthropic && !declared && tool_blocks > 0)
        .then_some("Requests which include `tool_use` or `tool_result` blocks must define tools.")
}

/// An upstream whose model searches forever while it may call tools, and answers when it may
/// not; it refuses what the real APIs refuse ([`refusal`]). `fail_first`: the first request
/// gets a 429 with `retry-after: 0`.
pub async fn upstream(api: Api, fail_first: bool) -> (FakeServer, Arc<AtomicUsize>) {
    let calls = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&calls);
    let server = FakeServer::responding(move |body| {
        let n = counter.fetch_add(1, Ordering::SeqCst);
        if fail_first && n == 0 {
            return Reply::json(429, r#"{"error": {"message": "slow down", "type": "rate_limit_error"}}"#)
                .with_header("retry-after", "0");
        }
        if let Some(message) = refusal(api, body) {
            let error = json!({"type": "error", "error": {"type": "invalid_request_error", "message": message}});
            return Reply::json(400, &error.to_string());
        }
        let task = task_of(body);
        let has_tools = may_call_tools(body);
        let reply = match (api, has_tools) {
            (Api::Responses, true) => json!({"id": format!("resp_{n}"), "object": "response", "created_at": 1, "status": "completed", "model": "gpt-4o-mini",
                // A reasoning model's reply: a reasoning item before the call, items of their own.
                "output": [{"type": "reasoning", "id": format!("rs_{n}"), "summary": []},
                    {"type": "function_call", "id": format!("fc_{n}"), "call_id": format!("call_{n}"), "name": "search", "arguments": "{\"q\":\"report\"}", "status": "completed"}],
                "parallel_tool_calls": true, "tool_choice": "auto", "tools": [], "usage": {"input_tokens": 100, "output_tokens": 10, "total_tokens": 110}}),
            (Api::Responses, false) => json!({"id": format!("resp_{n}"), "object": "response", "created_at": 1, "status": "completed", "model": "gpt-4o-mini",
                "output": [{"type": "message", "id": format!("msg_{n}"), "status": "completed", "role": "assistant",
                    "content": [{"type": "output_text", "text": format!("final answer for: {task}"), "annotations": []}]}],
                "parallel_tool_calls": true, "tool_choice": "auto", "tools": [], "usage": {"input_tokens": 100, "output_tokens": 10, "total_tokens": 110}}),
            (Api::OpenAi, true) => json!({"id": format!("chatcmpl-{n}"), "object": "chat.completion", "created": 1, "model": "gpt-4o-mini",
                "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "content": null,
                "tool_calls": [{"id": format!("call_{n}"), "type": "function", "function": {"name": "search", "arguments": "{\"q\":\"report\"}"}}]}}],
                "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}}),
            (Api::OpenAi, false) => json!({"id": format!("chatcmpl-{n}"), "object": "chat.completion", "created": 1, "model": "gpt-4o-mini",
                "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": format!("final answer for: {task}")}}],
                "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}}),
            (Api::Anthropic, true) => json!({"id": format!("msg_{n}"), "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
                "content": [{"type": "tool_use", "id": format!("toolu_{n}"), "name": "search", "input": {"q": "report"}}],
                "stop_reason": "tool_use", "stop_sequence": null, "usage": {"input_tokens": 100, "output_tokens": 10}}),
            (Api::Anthropic, false) => json!({"id": format!("msg_{n}"), "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
                "content": [{"type": "text", "text": format!("final answer for: {task}")}],
                "stop_reason": "end_turn", "stop_sequence": null, "usage": {"input_tokens": 100, "output_tokens": 10}}),
        };
        // A request with extended thinking on is answered as the API does: a signed thinking
        // block (and a redacted one) before the rest, which the client must send back.
        let thinks = body.get("thinking").is_some_and(|t| !t.is_null() && t["type"] != "disabled");
        let mut reply = reply;
        if api == Api::Anthropic && thinks {
            let blocks = reply["content"].as_array_mut().unwrap();
            blocks.insert(0, json!({"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix"}));
            blocks.insert(0, json!({"type": "thinking", "thinking": "The report may be in the files.", "signature": format!("sig_{n}")}));
        }
        if body["stream"].as_bool() == Some(true) {
            // A streaming upstream: the gateway relays it as it comes.
            let include_usage = body.pointer("/stream_options/include_usage").and_then(Value::as_bool).unwrap_or(false);
            return Reply::sse_text(&api.to_stream(&reply, include_usage));
        }
        Reply::json(200, &reply.to_string())
    })
    .await;
    (server, calls)
}

pub struct Running {
    /// The gateway's base URL.
    pub url: String,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<()>,
}

impl Running {
    /// Stops it and waits until it has.
    pub async fn stop(mut self) {
        let _ = self.stop.take().unwrap().send(());
        self.task.await.unwrap();
    }
}

/// A gateway on `store`, on `port` (0: any), in front of `upstream`.
pub async fn gateway(store: &Path, upstream: &str, config: LoopConfig, port: u16) -> Running {
    let mut settings = GatewayConfig::new(config, Default::default());
    settings.upstream.openai = upstream.to_owned();
    settings.upstream.anthropic = upstream.to_owned();
    settings.upstream.openai_key = None;
    settings.upstream.anthropic_key = None;
    settings.upstream.backoff = Duration::from_millis(10);
    serve_settings(store, settings, port).await
}

/// A gateway with `settings` on the SQLite file `store`, on `port` (0: any).
pub async fn serve_settings(store: &Path, settings: GatewayConfig, port: u16) -> Running {
    let store = SqliteStore::open(store).await.unwrap();
    let gateway = Gateway::new(settings, store.into()).unwrap();
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        looprail_gateway::serve(listener, gateway, async move {
            let _ = stopped.await;
        })
        .await;
    });
    Running { url, stop: Some(stop), task }
}

pub fn assert_ended(result: &Value, task: &str) {
    assert_eq!(result["final"], format!("final answer for: {task}"), "{result}");
    assert_eq!(result["runs"].as_array().map(Vec::len), Some(1), "one conversation throughout: {result}");
    let steps = result["steps"].as_u64().unwrap();
    assert!(steps < 40, "the ladder ended the loop within its bound: {result}");
}

/// Asserts what the upstream saw of a loop the ladder ended: it spoke (a `[looprail]`
/// instruction) before it concluded, and the last request asked for the final answer with no
/// tool to call.
pub fn assert_ladder_concluded(seen: &[Seen]) {
    assert!(seen.iter().any(|r| r.body.to_string().contains("[looprail]")), "the ladder spoke first");
    let last = &seen.last().unwrap().body;
    assert!(!may_call_tools(last), "the final answer was asked for with no tool to call");
}
