//! `looprail gateway` as a process (issue 19): a client looping on the same tool call through
//! it gets a final answer, and the conversation it recorded is read back by `looprail audit`,
//! which finds the loop.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStderr, Command, Stdio};

use common::temp_dir;
use looprail_providers::fake::{FakeServer, Reply};
use serde_json::{Value, json};

/// One HTTP/1.1 POST with `Connection: close`; the status and the JSON body.
fn post(address: &str, path: &str, body: &Value) -> (u16, Value) {
    let body = body.to_string();
    let mut stream = std::net::TcpStream::connect(address).unwrap();
    write!(
        stream,
        "POST {path} HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let status = response[9..12].parse().unwrap();
    let (_, payload) = response.split_once("\r\n\r\n").unwrap();
    (status, serde_json::from_str(payload).unwrap_or(Value::Null))
}

/// Starts `looprail gateway` (with an upstream key) and reads the address it listens on. The
/// stderr reader is returned to be kept open until the gateway ends: it reports its stop there.
fn spawn_gateway(command: &mut Command) -> (Child, BufReader<ChildStderr>, String) {
    let mut gateway = command.env("OPENAI_API_KEY", "sk-test").stderr(Stdio::piped()).spawn().unwrap();
    let mut stderr = BufReader::new(gateway.stderr.take().unwrap());
    let mut line = String::new();
    stderr.read_line(&mut line).unwrap();
    let address = line.split("http://").nth(1).unwrap().split_whitespace().next().unwrap().to_owned();
    (gateway, stderr, address)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_looping_client_gets_a_final_answer_and_the_audit_reads_its_recording() {
    let dir = temp_dir("gateway");
    let upstream = FakeServer::responding(|body| {
        let message = if body["tools"].is_array() && body["tool_choice"] != "none" {
            json!({"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "search", "arguments": "{\"q\":\"report\"}"}}]})
        } else {
            json!({"role": "assistant", "content": "I searched for the report repeatedly and found nothing; where should I look?"})
        };
        Reply::json(200, &json!({"id": "c", "object": "chat.completion", "created": 1, "model": "m", "choices": [{"index": 0, "message": message, "finish_reason": "stop"}]}).to_string())
    })
    .await;
    let logs = dir.join("logs");
    let (mut gateway, _stderr, address) = spawn_gateway(
        Command::new(env!("CARGO_BIN_EXE_looprail"))
            .args(["gateway", "--listen", "127.0.0.1:0", "--openai-upstream", &upstream.url, "--record-dir"])
            .arg(&logs)
            .arg("--store")
            .arg(dir.join("gateway.db")),
    );

    let tools =
        json!([{"type": "function", "function": {"name": "search", "parameters": {"type": "object"}}}]);
    let mut messages = vec![
        json!({"role": "system", "content": "You search."}),
        json!({"role": "user", "content": "Find the report"}),
    ];
    let mut final_text = None;
    for step in 0..30 {
        let (status, body) = tokio::task::spawn_blocking({
            let (address, request) =
                (address.clone(), json!({"model": "m", "messages": messages, "tools": tools}));
            move || post(&address, "/v1/chat/completions", &request)
        })
        .await
        .unwrap();
        assert_eq!(status, 200, "{body}");
        let message = body["choices"][0]["message"].clone();
        messages.push(message.clone());
        match message["tool_calls"].as_array() {
            Some(calls) => {
                let id = calls[0]["id"].clone();
                messages.push(
                    json!({"role": "tool", "tool_call_id": id, "content": format!("no results ({step})")}),
                );
            }
            None => {
                final_text = message["content"].as_str().map(str::to_owned);
                break;
            }
        }
    }
    let _ = Command::new("kill").args(["-TERM", &gateway.id().to_string()]).status();
    assert!(gateway.wait().unwrap().success());
    assert!(final_text.unwrap().contains("where should I look"), "the loop ended with a final answer");

    let audit =
        Command::new(env!("CARGO_BIN_EXE_looprail")).args(["audit", "--json"]).arg(&logs).output().unwrap();
    assert_eq!(audit.status.code(), Some(0), "{}", String::from_utf8_lossy(&audit.stderr));
    let report: Value = serde_json::from_slice(&audit.stdout).unwrap();
    assert_eq!(report["summary"]["runs"], 1, "one recorded conversation: {report}");
    let run = &report["runs"][0];
    assert_eq!(run["tool_calls"].as_u64(), Some((messages.len() as u64 - 3) / 2), "every call recorded once");
    assert!(!run["events"].as_array().unwrap().is_empty(), "the audit finds the loop: {run}");
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_config_files_gateway_section_sets_upstream_fallbacks_and_recording() {
    let dir = temp_dir("gateway-config");
    let upstream = FakeServer::responding(|body| match body["model"].as_str() {
        Some("small") => Reply::json(200, &json!({"id": "c", "object": "chat.completion", "created": 1, "model": "small",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}]}).to_string()),
        _ => Reply::json(503, r#"{"error": {"message": "overloaded", "type": "server_error", "code": null}}"#),
    })
    .await;
    let config = dir.join("looprail.toml");
    std::fs::write(
        &config,
        format!(
            "[gateway]\nlisten = \"127.0.0.1:0\"\nopenai_upstream = \"{}\"\nretries = 0\nopenai_fallback_models = [\"small\"]\nrecord = false\nrecord_dir = \"{}\"\n",
            upstream.url,
            dir.join("logs").display()
        ),
    )
    .unwrap();
    let (mut gateway, mut stderr, address) = spawn_gateway(
        Command::new(env!("CARGO_BIN_EXE_looprail"))
            .args(["gateway", "--config"])
            .arg(&config)
            .arg("--store")
            .arg(dir.join("gateway.db")),
    );
    let request = json!({"model": "m", "messages": [{"role": "user", "content": "hello"}]});
    let (status, body) =
        tokio::task::spawn_blocking(move || post(&address, "/v1/chat/completions", &request)).await.unwrap();
    let _ = Command::new("kill").args(["-TERM", &gateway.id().to_string()]).status();
    assert!(gateway.wait().unwrap().success());
    assert_eq!((status, body["model"].as_str()), (200, Some("small")), "{body}");
    // The operator is told, on stderr, one line per warning.
    let mut told = String::new();
    stderr.read_to_string(&mut told).unwrap();
    let fallback = told.lines().find(|l| l.contains("gateway falls back to another model"));
    assert!(fallback.is_some_and(|l| l.contains("WARN") && l.contains("to=small")), "{told}");
    let models: Vec<Value> = upstream.requests().iter().map(|r| r.body["model"].clone()).collect();
    assert_eq!(models, [json!("m"), json!("small")], "no retry, then the fallback");
    assert!(!dir.join("logs").exists(), "record = false records nothing");

    // A bad key or flag stops the gateway before it listens, with one line naming it.
    std::fs::write(&config, "[gateway]\nlisten = \"nowhere\"\n").unwrap();
    let bad = Command::new(env!("CARGO_BIN_EXE_looprail"))
        .args(["gateway", "--config"])
        .arg(&config)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&bad.stderr);
    assert_eq!(bad.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("gateway.listen") && stderr.lines().count() == 1, "{stderr}");
    let bad = Command::new(env!("CARGO_BIN_EXE_looprail"))
        .args(["gateway", "--fallback", "gpt-4o-mini", "--store"])
        .arg(dir.join("gateway.db"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&bad.stderr);
    assert!(bad.status.code() == Some(1) && stderr.contains("openai:MODEL"), "{stderr}");
    let bad = Command::new(env!("CARGO_BIN_EXE_looprail"))
        .args(["gateway", "--store"])
        .arg(dir.join("gateway.db"))
        .env("LOOPRAIL_LOG", "verbose")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&bad.stderr);
    assert_eq!(bad.status.code(), Some(1), "{stderr}");
    assert!(stderr.starts_with("error: LOOPRAIL_LOG: `verbose`") && stderr.lines().count() == 1, "{stderr}");
    // A flag is held to its key's bounds, and the message names the flag.
    for (flag, value) in [("--retries", "11"), ("--anthropic-upstream", "ftp://example.com")] {
        let mut gateway = Command::new(env!("CARGO_BIN_EXE_looprail"))
            .args(["gateway", "--listen", "127.0.0.1:0", "--no-record", flag, value, "--store"])
            .arg(dir.join("gateway.db"))
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // A gateway that accepted the value would listen until stopped: give it ten seconds.
        let started = std::time::Instant::now();
        while gateway.try_wait().unwrap().is_none() {
            if started.elapsed() > std::time::Duration::from_secs(10) {
                let _ = gateway.kill();
                panic!("{flag} {value} was accepted");
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let bad = gateway.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&bad.stderr);
        assert_eq!(bad.status.code(), Some(1), "{flag}: {stderr}");
        assert!(stderr.starts_with(&format!("error: {flag}: ")) && stderr.lines().count() == 1, "{stderr}");
    }
    let _ = std::fs::remove_dir_all(dir);
}

/// The runtime's worker threads of a running process (tokio names them; no blocking task has
/// run before the first request).
#[cfg(target_os = "linux")]
fn worker_threads(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .filter_map(|task| std::fs::read_to_string(task.ok()?.path().join("comm")).ok())
        .filter(|name| name.trim() == "tokio-rt-worker")
        .count()
}

#[cfg(target_os = "linux")]
#[test]
fn the_workers_key_and_flag_set_the_threads_serving_requests_and_one_per_core_by_default() {
    let dir = temp_dir("gateway-workers");
    let config = dir.join("looprail.toml");
    std::fs::write(&config, "[gateway]\nlisten = \"127.0.0.1:0\"\nrecord = false\nworkers = 3\n").unwrap();
    let cores = std::thread::available_parallelism().unwrap().get();
    for (flag, expected) in [(None, 3), (Some("1"), 1), (Some("default"), cores)] {
        let mut command = Command::new(env!("CARGO_BIN_EXE_looprail"));
        command.args(["gateway", "--store"]).arg(dir.join("gateway.db"));
        match flag {
            Some("default") => command.args(["--listen", "127.0.0.1:0", "--no-record"]),
            Some(n) => command.arg("--config").arg(&config).args(["--workers", n]),
            None => command.arg("--config").arg(&config),
        };
        let (mut gateway, _stderr, _address) = spawn_gateway(&mut command);
        let threads = worker_threads(gateway.id());
        let _ = Command::new("kill").args(["-TERM", &gateway.id().to_string()]).status();
        assert!(gateway.wait().unwrap().success());
        assert_eq!(threads, expected, "{flag:?}");
    }
    let bad =
        Command::new(env!("CARGO_BIN_EXE_looprail")).args(["gateway", "--workers", "0"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&bad.stderr);
    assert!(bad.status.code().is_some_and(|c| c != 0), "{stderr}");
    assert!(stderr.contains("--workers") && stderr.trim().lines().count() == 1, "{stderr}");
    let _ = std::fs::remove_dir_all(dir);
}
