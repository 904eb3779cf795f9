//! looprail inside the real Claude Code (issue 38): `looprail hook install claude-code` writes
//! the hooks into a project's settings, and `claude -p` (the pinned npm release) runs against a
//! local fake Anthropic API. A model that repeats one Bash call is nudged through the hook, then
//! denied, then stopped, and the CLI exits cleanly; a healthy session of 100 distinct calls is
//! never touched. The hook's own store is a SQLite file in the test's directory. The same
//! loop through Claude Code's HTTP hooks and a gateway's hook endpoint (`install --http`), with
//! the gateway's client key read from the environment, ends the same way.

use super::node;

use std::path::Path;
use std::process::Command;

use looprail_gateway::Api;
use looprail_providers::fake::{FakeServer, Reply, Seen};
use serde_json::{Value, json};

/// Tool results in a request's history.
fn tool_results(body: &Value) -> usize {
    let blocks =
        body["messages"].as_array().into_iter().flatten().flat_map(|m| m["content"].as_array()).flatten();
    blocks.filter(|b| b["type"] == "tool_result").count()
}

/// A fake Anthropic API: the main loop (requests declaring Bash) gets `next(results so far)`'s
/// command to run, or, with `None`, a final answer; any other request (titles, summaries) a
/// short text.
async fn model(next: impl Fn(usize) -> Option<String> + Send + Sync + 'static) -> FakeServer {
    FakeServer::responding(move |body| {
        let main = body["tools"].as_array().is_some_and(|t| t.iter().any(|t| t["name"] == "Bash"));
        let n = tool_results(body);
        let content = match next(n).filter(|_| main) {
            Some(command) => json!([{"type": "tool_use", "id": format!("toolu_{n:03}"), "name": "Bash",
                "input": {"command": command, "description": "run it"}}]),
            None => json!([{"type": "text", "text": format!("done after {n} calls")}]),
        };
        let stop = if content[0]["type"] == "tool_use" { "tool_use" } else { "end_turn" };
        let reply = json!({"id": format!("msg_{n}"), "type": "message", "role": "assistant",
            "model": "claude-sonnet-4-5", "content": content, "stop_reason": stop, "stop_sequence": null,
            "usage": {"input_tokens": 100, "output_tokens": 10}});
        if body["stream"].as_bool() == Some(true) {
            return Reply::sse_text(&Api::Anthropic.to_stream(&reply, false));
        }
        Reply::json(200, &reply.to_string())
    })
    .await
}

/// Installs the hooks in `work` with the store `store`, then runs `claude -p` there against
/// `model`; returns its exit code and stdout.
async fn claude(clients: &Path, work: &Path, store: &Path, model: &FakeServer) -> (Option<i32>, String) {
    claude_with(clients, work, &["--store".as_ref(), store.as_os_str()], model).await
}

/// [`claude`] with `install` as the install's own arguments.
async fn claude_with(
    clients: &Path,
    work: &Path,
    install: &[&std::ffi::OsStr],
    model: &FakeServer,
) -> (Option<i32>, String) {
    let install = Command::new(env!("CARGO_BIN_EXE_looprail"))
        .args(["hook", "install", "claude-code", "--project"])
        .arg(work)
        .args(install)
        .output()
        .unwrap();
    assert!(install.status.success(), "{}", String::from_utf8_lossy(&install.stderr));
    let home = tempfile::tempdir().unwrap();
    let mut command = Command::new("timeout");
    command
        .arg("300")
        .arg(clients.join("node_modules/.bin/claude"))
        .args([
            "-p",
            "run the build",
            "--output-format",
            "json",
            "--max-turns",
            "200",
            "--allowedTools",
            "Bash",
        ])
        .env("HOME", home.path())
        .env("CLAUDE_CONFIG_DIR", home.path())
        .env("ANTHROPIC_BASE_URL", &model.url)
        .env("ANTHROPIC_API_KEY", "sk-ant-test")
        .env("LOOPRAIL_GATEWAY_KEY", "sk-gateway-test")
        .env("DISABLE_AUTOUPDATER", "1")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .current_dir(work)
        .stdin(std::process::Stdio::null());
    let out = tokio::task::spawn_blocking(move || command.output().unwrap()).await.unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    (out.status.code(), stdout)
}

/// The main loop's requests.
fn main_loop(seen: &[Seen]) -> Vec<String> {
    seen.iter()
        .filter(|r| r.body["tools"].as_array().is_some_and(|t| t.iter().any(|t| t["name"] == "Bash")))
        .map(|r| r.body.to_string())
        .collect()
}

/// The looping model was nudged, then denied, and the loop stopped long before its 40 calls,
/// the CLI exiting cleanly; its JSON result.
fn assert_stopped_through_the_hooks(model: &FakeServer, code: Option<i32>, stdout: &str) -> Value {
    let requests = main_loop(&model.requests());
    let nudged = requests.iter().position(|r| r.contains("keep producing the same kind of result"));
    let denied = requests.iter().position(|r| r.contains("[looprail] Denied: this exact `Bash` call"));
    assert!(nudged.is_some(), "the model was nudged: {} requests; {stdout}", requests.len());
    assert!(denied.is_some() && denied > nudged, "then a repeat was denied");
    let last = requests.last().map_or(0, |r| tool_results(&serde_json::from_str(r).unwrap()));
    assert!(last <= 8, "the loop was stopped long before the model's 40 calls: {last} calls");
    assert_eq!(code, Some(0), "the CLI exits cleanly: {stdout}");
    let result: Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(
        (result["is_error"].as_bool(), result["terminal_reason"].as_str()),
        (Some(false), Some("hook_stopped")),
        "{result}"
    );
    result
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_repeating_one_call_is_nudged_denied_and_stopped_through_the_hook() {
    let Some(clients) = node::clients() else { return };
    let (dir, work) = super::project();
    // A model that would repeat the same failing build 40 times.
    let model = model(|n| (n < 40).then(|| "echo 'make: *** No rule to make target'".to_owned())).await;
    let (code, stdout) = claude(&clients, &work, &dir.path().join("hooks.db"), &model).await;
    let result = assert_stopped_through_the_hooks(&model, code, &stdout);
    // Denied, then the permission prompt (which `-p` answers no by itself), then stopped.
    assert!(result["permission_denials"].as_array().is_some_and(|d| d.len() >= 2), "{result}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_same_loop_is_stopped_through_http_hooks_and_a_gateway() {
    let Some(clients) = node::clients() else { return };
    let (dir, work) = super::project();
    // The gateway, needing its client key, keeps the sessions in its own store.
    let settings =
        looprail_gateway::GatewayConfig { require_key: Some("sk-gateway-test".into()), ..Default::default() };
    let store = looprail_journal::SqliteStore::open(&dir.path().join("gateway.db")).await.unwrap();
    let gateway = looprail_gateway::Gateway::new(settings, store.into()).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(looprail_gateway::serve(listener, gateway, std::future::pending()));
    let model = model(|n| (n < 40).then(|| "echo 'make: *** No rule to make target'".to_owned())).await;
    let install: [&std::ffi::OsStr; 4] =
        ["--http".as_ref(), url.as_ref(), "--key-env".as_ref(), "LOOPRAIL_GATEWAY_KEY".as_ref()];
    let (code, stdout) = claude_with(&clients, &work, &install, &model).await;
    let settings: Value =
        serde_json::from_str(&std::fs::read_to_string(work.join(".claude/settings.json")).unwrap()).unwrap();
    assert_eq!(settings["hooks"]["PreToolUse"][0]["hooks"][0]["type"], "http");
    assert_stopped_through_the_hooks(&model, code, &stdout);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_healthy_session_of_100_distinct_calls_is_never_touched() {
    let Some(clients) = node::clients() else { return };
    let (dir, work) = super::project();
    let model = model(|n| (n < 100).then(|| format!("echo step {n}"))).await;
    let (code, stdout) = claude(&clients, &work, &dir.path().join("hooks.db"), &model).await;
    assert_eq!(code, Some(0), "{stdout}");
    let result: Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(result["result"], "done after 100 calls", "{result}");
    let requests = main_loop(&model.requests());
    assert!(requests.iter().all(|r| !r.contains("[looprail]")), "no remark, no denial");
}
