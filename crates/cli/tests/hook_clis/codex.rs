//! looprail inside the real Codex CLI (issue 66): `looprail hook install codex --user` writes
//! the hooks into `$CODEX_HOME/hooks.json`, and `codex exec` (the pinned npm release) runs
//! against a local fake Responses API. A model that repeats one shell command is nudged (a
//! developer message), denied, and once stopped every further call is refused with the model
//! told to end its turn, which it does; the CLI exits cleanly. A healthy session of 100
//! distinct calls is never touched.
//!
//! Codex runs a new hook only once the user has trusted it (its /hooks screen); the test runs
//! with `--dangerously-bypass-hook-trust`, as automation that vets its hooks does.

use super::node;

use std::path::Path;
use std::process::Command;

use looprail_gateway::Api;
use looprail_providers::fake::{FakeServer, Reply, Seen};
use serde_json::{Value, json};

/// The outputs of calls in a request's input.
fn outputs(body: &Value) -> Vec<String> {
    let items = body["input"].as_array().into_iter().flatten();
    let outputs = items.filter(|i| i["type"] == "function_call_output");
    outputs.map(|i| i["output"].as_str().map_or_else(|| i["output"].to_string(), str::to_owned)).collect()
}

/// Whether a request is the agent's main loop (it declares the shell tool).
fn main_loop(body: &Value) -> bool {
    body["tools"].as_array().is_some_and(|t| t.iter().any(|t| t["name"] == "exec_command"))
}

/// A fake Responses API: the main loop gets `next(calls so far)`'s command, or with `None` a
/// final answer. Told that no further call will run, it answers, as a model does.
async fn model(next: impl Fn(usize) -> Option<String> + Send + Sync + 'static) -> FakeServer {
    FakeServer::responding(move |body| {
        let outputs = outputs(body);
        let n = outputs.len();
        let told_to_end = outputs.last().is_some_and(|o| o.contains("end your turn now"));
        let item = match next(n).filter(|_| main_loop(body) && !told_to_end) {
            Some(command) => json!({"type": "function_call", "id": format!("fc_{n}"), "call_id": format!("call_{n}"),
                "name": "exec_command", "arguments": json!({"cmd": command}).to_string(), "status": "completed"}),
            None => json!({"type": "message", "id": format!("msg_{n}"), "status": "completed", "role": "assistant",
                "content": [{"type": "output_text", "text": format!("done after {n} calls"), "annotations": []}]}),
        };
        let reply = json!({"id": format!("resp_{n}"), "object": "response", "created_at": 1, "status": "completed",
            "model": "gpt-4o-mini", "output": [item], "parallel_tool_calls": false, "tool_choice": "auto", "tools": [],
            "usage": {"input_tokens": 100, "output_tokens": 10, "total_tokens": 110}});
        Reply::sse_text(&Api::Responses.to_stream(&reply, false))
    })
    .await
}

/// Installs the hooks for the user of `home` (its `CODEX_HOME`) with the store `store`, then
/// runs `codex exec` in `work` against `model`; returns its exit code and its JSON events.
async fn codex(
    clients: &Path,
    home: &Path,
    work: &Path,
    store: &Path,
    model: &FakeServer,
) -> (Option<i32>, Vec<Value>) {
    let codex_home = home.join(".codex");
    let install = Command::new(env!("CARGO_BIN_EXE_looprail"))
        .args(["hook", "install", "codex", "--user", "--store"])
        .arg(store)
        .env("CODEX_HOME", &codex_home)
        .output()
        .unwrap();
    assert!(install.status.success(), "{}", String::from_utf8_lossy(&install.stderr));
    let said = String::from_utf8_lossy(&install.stderr);
    assert!(said.contains("trust"), "the install says Codex asks the user to trust new hooks: {said}");
    let provider = format!(
        "model_providers.fake={{ name = \"fake\", base_url = \"{}/v1\", env_key = \"OPENAI_API_KEY\", wire_api = \"responses\" }}",
        model.url
    );
    let mut command = Command::new("timeout");
    command
        .arg("300")
        .arg(clients.join("node_modules/.bin/codex"))
        .args(["exec", "--json", "--skip-git-repo-check", "--dangerously-bypass-hook-trust", "-c"])
        .arg(provider)
        .args(["-c", "model_provider=\"fake\"", "-m", "gpt-4o-mini", "run the build"])
        .env("HOME", home)
        .env("CODEX_HOME", &codex_home)
        .env("OPENAI_API_KEY", "sk-test")
        .current_dir(work)
        .stdin(std::process::Stdio::null());
    let out = tokio::task::spawn_blocking(move || command.output().unwrap()).await.unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let events = stdout.lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    (out.status.code(), events)
}

/// The shell commands Codex ran, and its last message.
fn ran_and_said(events: &[Value]) -> (usize, String) {
    let mut completed = events.iter().filter(|e| e["type"] == "item.completed");
    let ran = completed.clone().filter(|e| e["item"]["type"] == "command_execution").count();
    let said = completed.rfind(|e| e["item"]["type"] == "agent_message");
    (ran, said.and_then(|e| e["item"]["text"].as_str()).unwrap_or_default().to_owned())
}

fn main_requests(seen: &[Seen]) -> Vec<String> {
    seen.iter().filter(|r| main_loop(&r.body)).map(|r| r.body.to_string()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_repeating_one_call_is_nudged_denied_and_stopped_through_the_hook() {
    let Some(clients) = node::clients() else { return };
    let (dir, work) = super::project();
    // A model that would repeat the same failing build 40 times.
    let model = model(|n| (n < 40).then(|| "echo 'make: *** No rule to make target'".to_owned())).await;
    let (code, events) = codex(&clients, dir.path(), &work, &dir.path().join("hooks.db"), &model).await;
    let requests = main_requests(&model.requests());
    let nudged = requests.iter().position(|r| r.contains("keep producing the same kind of result"));
    let denied = requests.iter().position(|r| r.contains("[looprail] Denied: this exact `Bash` call"));
    let stopped = requests.iter().position(|r| r.contains("end your turn now"));
    assert!(nudged.is_some(), "the model was nudged: {} requests", requests.len());
    assert!(denied > nudged, "then a repeat was denied");
    assert!(stopped > denied, "then the stretch was stopped");
    let (ran, said) = ran_and_said(&events);
    assert!(ran <= 8, "the loop was stopped long before the model's 40 calls: {ran} ran");
    assert!(said.starts_with("done after"), "the model ended its turn: {said:?}");
    assert_eq!(code, Some(0), "the CLI exits cleanly");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_healthy_session_of_100_distinct_calls_is_never_touched() {
    let Some(clients) = node::clients() else { return };
    let (dir, work) = super::project();
    let model = model(|n| (n < 100).then(|| format!("echo step {n}"))).await;
    let (code, events) = codex(&clients, dir.path(), &work, &dir.path().join("hooks.db"), &model).await;
    assert_eq!(code, Some(0));
    assert_eq!(ran_and_said(&events), (100, "done after 100 calls".to_owned()));
    let requests = main_requests(&model.requests());
    assert!(requests.iter().all(|r| !r.contains("[looprail]")), "no remark, no denial");
}
