//! The gateway's added latency (issue 19): the same non-streaming requests sent to a fake
//! upstream directly and through the gateway (SQLite store, every request a conversation
//! continued from its stored state), p50/p99 at 1, 16 and 64 concurrent clients, requests per
//! second; then a continuation request on a 20- and on a 1,000-message history (2 new
//! messages each), to show the cost per request does not grow with the history; then the same
//! on a request shaped like a coding agent's (modelled on Claude Code's Messages requests: 30 tools
//! declared with long descriptions and schemas, a system prompt of blocks some 12 KB long,
//! tool results of file contents), whose every request re-sends some 40 KB before the history.

#![allow(clippy::expect_used, clippy::unwrap_used, missing_docs)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use looprail_gateway::{Gateway, GatewayConfig};
use looprail_journal::SqliteStore;
use looprail_providers::fake::{FakeServer, Reply};
use serde_json::{Value, json};

/// A small reply in the API the request is in (Messages requests carry `max_tokens`).
fn reply(request: &Value) -> Reply {
    let body = if request.get("max_tokens").is_some() {
        json!({"id": "msg_x", "type": "message", "role": "assistant", "model": "m",
            "content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn",
            "usage": {"input_tokens": 10, "output_tokens": 1}})
    } else {
        json!({"id": "x", "object": "chat.completion", "created": 1, "model": "m",
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "ok"}}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 1}})
    };
    Reply::json(200, &body.to_string())
}

/// Prose of about `len` bytes (varied words, so nothing compresses it away).
fn prose(seed: usize, len: usize) -> String {
    let words = [
        "the",
        "file",
        "tool",
        "returns",
        "a",
        "path",
        "when",
        "called",
        "with",
        "\"quoted\"",
        "input,",
        "line\n",
    ];
    let mut text = String::new();
    let mut i = seed;
    while text.len() < len {
        text.push_str(words[i % words.len()]);
        text.push(' ');
        i = i.wrapping_mul(31).wrapping_add(7);
    }
    text
}

/// A Messages request as a coding agent sends it: 30 tools, a system prompt of two blocks
/// (~12 KB), the task, then `turns` tool calls with ~1.5 KB results.
fn coding_agent_body(tag: usize, turns: usize, extra: &[Value]) -> String {
    let tools: Vec<Value> = (0..30)
        .map(|i| {
            let properties: serde_json::Map<String, Value> = (0..5)
                .map(|p| (format!("arg{p}"), json!({"type": "string", "description": prose(i * 7 + p, 60)})))
                .collect();
            json!({"name": format!("Tool{i}"), "description": prose(i, 500),
                "input_schema": {"type": "object", "properties": properties, "required": ["arg0"]}})
        })
        .collect();
    let system = json!([{"type": "text", "text": "You are a coding agent."},
        {"type": "text", "text": prose(1, 12_000), "cache_control": {"type": "ephemeral"}}]);
    let mut messages = vec![json!({"role": "user", "content": [
        {"type": "text", "text": prose(2, 2_000)}, {"type": "text", "text": format!("task {tag}: fix the build")}]})];
    for t in 0..turns {
        let id = format!("toolu_{tag}_{t}");
        messages.push(json!({"role": "assistant", "content": [{"type": "text", "text": "Reading it."},
            {"type": "tool_use", "id": id, "name": format!("Tool{}", t % 30), "input": {"arg0": format!("src/f{t}.rs")}}]}));
        messages.push(json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": id, "content": prose(t, 1_500)}]}));
    }
    messages.extend(extra.iter().cloned());
    json!({"model": "m", "max_tokens": 32_000, "system": system, "tools": tools, "messages": messages})
        .to_string()
}

/// A conversation of `len` messages: varied searches with their results.
fn history(tag: usize, len: usize) -> Vec<Value> {
    let mut messages = vec![
        json!({"role": "system", "content": "You search."}),
        json!({"role": "user", "content": format!("task {tag}")}),
    ];
    let mut i = 0;
    while messages.len() + 2 <= len {
        let id = format!("c{tag}-{i}");
        messages.push(json!({"role": "assistant", "content": null, "tool_calls": [{"id": id, "type": "function", "function": {"name": "search", "arguments": format!("{{\"q\":\"query {i}\"}}")}}]}));
        messages.push(json!({"role": "tool", "tool_call_id": id, "content": format!("result {i} of the search, a few lines long")}));
        i += 1;
    }
    messages
}

fn body(messages: &[Value]) -> String {
    json!({"model": "m", "messages": messages, "tools": [{"type": "function", "function": {"name": "search", "parameters": {"type": "object"}}}]}).to_string()
}

async fn send(client: &reqwest::Client, url: &str, body: String) -> Duration {
    let started = Instant::now();
    let response =
        client.post(url).header("content-type", "application/json").body(body).send().await.unwrap();
    assert!(response.status().is_success(), "{}: {}", response.status(), response.text().await.unwrap());
    response.bytes().await.unwrap();
    started.elapsed()
}

fn percentile(sorted: &[Duration], q: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * q) as usize]
}

/// p50, p99 and requests/s of `total` requests from `clients` concurrent clients.
async fn load(
    url: &str,
    clients: usize,
    total: usize,
    bodies: Arc<Vec<String>>,
) -> (Duration, Duration, f64) {
    let started = Instant::now();
    let mut tasks = Vec::new();
    for c in 0..clients {
        let (url, bodies) = (url.to_owned(), Arc::clone(&bodies));
        tasks.push(tokio::spawn(async move {
            let client = reqwest::Client::new();
            let mut times = Vec::new();
            for i in (c..total).step_by(clients) {
                times.push(send(&client, &url, bodies[i % bodies.len()].clone()).await);
            }
            times
        }));
    }
    let mut times = Vec::new();
    for task in tasks {
        times.extend(task.await.unwrap());
    }
    let rate = total as f64 / started.elapsed().as_secs_f64();
    times.sort();
    (percentile(&times, 0.5), percentile(&times, 0.99), rate)
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    rt.block_on(async {
        let upstream = FakeServer::responding(reply).await;
        let mut settings = GatewayConfig::new(Default::default(), Default::default());
        settings.upstream.openai = upstream.url.clone();
        settings.upstream.openai_key = Some("k".into());
        settings.upstream.anthropic = upstream.url.clone();
        settings.upstream.anthropic_key = Some("k".into());
        let path = std::env::temp_dir().join(format!("looprail-gw-bench-{}.db", std::process::id()));
        let _ = std::fs::remove_file(&path);
        let gateway = Gateway::new(settings, SqliteStore::open(&path).await.unwrap().into()).unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let gw = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(looprail_gateway::serve(listener, gateway, std::future::pending()));
        let direct = format!("{}/v1/chat/completions", upstream.url);
        let through = format!("{gw}/v1/chat/completions");
        let bodies: Arc<Vec<String>> = Arc::new((0..200).map(|t| body(&history(t, 20))).collect());

        println!("gateway added latency (non-streaming, 20-message history; 2-core machine)");
        println!(
            "{:>8} {:>12} {:>12} {:>12} {:>12} {:>11} {:>11} {:>10}",
            "clients",
            "direct p50",
            "gateway p50",
            "direct p99",
            "gateway p99",
            "added p50",
            "added p99",
            "gw req/s"
        );
        let mut single = None;
        for clients in [1, 16, 64] {
            let total = 400.max(clients * 8);
            let (dp50, dp99, _) = load(&direct, clients, total, Arc::clone(&bodies)).await;
            let (gp50, gp99, rate) = load(&through, clients, total, Arc::clone(&bodies)).await;
            // Added latency: the gateway's percentile over the direct one.
            let (ap50, ap99) = (gp50.saturating_sub(dp50), gp99.saturating_sub(dp99));
            println!(
                "{clients:>8} {dp50:>12.2?} {gp50:>12.2?} {dp99:>12.2?} {gp99:>12.2?} {ap50:>11.2?} {ap99:>11.2?} {rate:>10.0}"
            );
            single.get_or_insert((ap99, rate));
        }
        if let Some((ap99, rate)) = single {
            println!("added p99 at one client, {rate:.0} req/s: {ap99:.2?} (target <= 1 ms at >= 1,000 req/s)");
        }

        println!("\ncontinuing a conversation (2 new messages), by history length");
        let client = reqwest::Client::new();
        // The two lengths alternate, so the machine's noise falls on both alike.
        let lengths = [20, 1_000];
        let mut times = [Vec::new(), Vec::new()];
        for t in 0..100 {
            for (which, len) in lengths.iter().enumerate() {
                let mut messages = history(10_000 + len * 1_000 + t, *len);
                send(&client, &through, body(&messages)).await; // the conversation is known now
                messages.push(json!({"role": "assistant", "content": "ok"}));
                messages.push(json!({"role": "user", "content": "and now?"}));
                let taken = send(&client, &through, body(&messages)).await;
                let direct_taken = send(&client, &direct, body(&messages)).await;
                times[which].push(taken.saturating_sub(direct_taken));
            }
        }
        let mut medians = Vec::new();
        for (len, times) in lengths.iter().zip(&mut times) {
            times.sort();
            let p50 = percentile(times, 0.5);
            println!("{len:>6} messages: added p50 {p50:.2?}");
            medians.push(p50.as_secs_f64());
        }
        println!("1,000 vs 20 messages: {:.2}x (target <= 1.5x)", medians[1] / medians[0].max(1e-9));

        println!("\na coding agent's request (Messages: 30 tools, 12 KB system prompt), continued");
        let messages = format!("{gw}/v1/messages");
        let direct_messages = format!("{}/v1/messages", upstream.url);
        let next = [json!({"role": "assistant", "content": "ok"}), json!({"role": "user", "content": "and now?"})];
        // The two sizes alternate, so the machine's noise falls on both alike.
        let turns = [5, 60];
        let mut added = [Vec::new(), Vec::new()];
        let mut sizes = [0, 0];
        for t in 0..150 {
            for (which, turns) in turns.iter().enumerate() {
                let tag = 20_000 + turns * 1_000 + t;
                send(&client, &messages, coding_agent_body(tag, *turns, &[])).await;
                let body = coding_agent_body(tag, *turns, &next);
                sizes[which] = body.len();
                let taken = send(&client, &messages, body.clone()).await;
                let direct_taken = send(&client, &direct_messages, body).await;
                added[which].push(taken.saturating_sub(direct_taken));
            }
        }
        for ((turns, added), size) in turns.iter().zip(&mut added).zip(sizes) {
            added.sort();
            let p50 = percentile(added, 0.5);
            println!("{:>6} messages, {:>4} KB: added p50 {p50:.2?}", turns * 2 + 3, size / 1024);
        }
        let _ = std::fs::remove_file(path);
    });
}
