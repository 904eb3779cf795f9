//! looprail inside the real Qwen Code (issue 66): `looprail hook install qwen-code` writes the
//! hooks into the project's `.qwen/settings.json`, and `qwen` (the pinned npm release) runs
//! headless against a local fake OpenAI API. Qwen Code halts a run by itself after five
//! identical calls in a row; a model alternating two commands with the same failing output
//! slips past that, and is nudged, given a directive, asked about (which a headless run
//! denies) and stopped through the hooks: every later call is refused, the model told to end
//! its turn, which it does, and the CLI exits cleanly. A healthy session of 100 distinct calls
//! is never touched.

use super::chat_model::{self, results};
use super::node;

use std::path::Path;
use std::process::Command;

use looprail_providers::fake::{FakeServer, Seen};
use serde_json::Value;

/// Whether a request is the agent's main loop (it declares the shell tool).
fn main_loop(body: &Value) -> bool {
    chat_model::declares(body, "run_shell_command")
}

/// The fake model, its shell tool `run_shell_command`.
async fn model(next: impl Fn(usize) -> Option<String> + Send + Sync + 'static) -> FakeServer {
    chat_model::model("run_shell_command", next).await
}

/// Installs the hooks in `work` with the store `store`, then runs `qwen` there against `model`;
/// returns its exit code and its JSON result.
async fn qwen(
    clients: &Path,
    home: &Path,
    work: &Path,
    store: &Path,
    model: &FakeServer,
) -> (Option<i32>, Value) {
    let install = Command::new(env!("CARGO_BIN_EXE_looprail"))
        .args(["hook", "install", "qwen-code", "--project"])
        .arg(work)
        .arg("--store")
        .arg(store)
        .output()
        .unwrap();
    assert!(install.status.success(), "{}", String::from_utf8_lossy(&install.stderr));
    // Qwen Code writes its JSON through a pipe it does not drain before exiting: a file.
    let output = work.join("qwen-output.json");
    let mut command = Command::new("timeout");
    command
        .arg("300")
        .arg(clients.join("node_modules/.bin/qwen"))
        .args(["run the build", "--auth-type", "openai", "--openai-base-url"])
        .arg(format!("{}/v1", model.url))
        .args(["--openai-api-key", "sk-test", "-m", "gpt-4o-mini", "--approval-mode", "yolo", "-o", "json"])
        .env("HOME", home)
        .env("QWEN_CODE_SUPPRESS_YOLO_WARNING", "1")
        .current_dir(work)
        .stdin(std::process::Stdio::null())
        .stdout(std::fs::File::create(&output).unwrap())
        .stderr(std::process::Stdio::null());
    let status = tokio::task::spawn_blocking(move || command.status().unwrap()).await.unwrap();
    let text = std::fs::read_to_string(&output).unwrap();
    let events: Value = serde_json::from_str(text.trim()).expect("qwen's JSON output");
    let result = events.as_array().and_then(|e| e.last()).cloned().unwrap_or_default();
    (status.code(), result)
}

fn main_requests(seen: &[Seen]) -> Vec<String> {
    seen.iter().filter(|r| main_loop(&r.body)).map(|r| r.body.to_string()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_alternating_two_failing_commands_is_nudged_asked_and_stopped_through_the_hook() {
    let Some(clients) = node::clients() else { return };
    let (dir, work) = super::project();
    // Two spellings of the same failing build, taken in turn, 40 times.
    let model =
        model(|n| (n < 40).then(|| format!("echo 'make: *** No rule to make target'{}", [";", ""][n % 2])))
            .await;
    let (code, result) = qwen(&clients, dir.path(), &work, &dir.path().join("hooks.db"), &model).await;
    let requests = main_requests(&model.requests());
    let nudged = requests.iter().position(|r| r.contains("keep producing the same kind of result"));
    let directed = requests.iter().position(|r| r.contains("[looprail] Stop repeating"));
    let stopped = requests.iter().position(|r| r.contains("end your turn now"));
    assert!(nudged.is_some(), "the model was nudged: {} requests", requests.len());
    assert!(directed > nudged, "then given a directive");
    assert!(stopped > directed, "then stopped");
    let last = results(&serde_json::from_str(requests.last().unwrap()).unwrap());
    let ran = last.iter().filter(|r| r.contains("Exit Code")).count();
    assert!(ran <= 16, "the loop was stopped long before the model's 40 calls: {ran} ran");
    assert_eq!(code, Some(0), "the CLI exits cleanly");
    assert_eq!(result["is_error"], false);
    assert!(
        result["result"].as_str().is_some_and(|r| r.starts_with("done after")),
        "the model ended its turn"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_healthy_session_of_100_distinct_calls_is_never_touched() {
    let Some(clients) = node::clients() else { return };
    let (dir, work) = super::project();
    let model = model(|n| (n < 100).then(|| format!("echo step {n}"))).await;
    let (code, result) = qwen(&clients, dir.path(), &work, &dir.path().join("hooks.db"), &model).await;
    assert_eq!(code, Some(0));
    assert_eq!(result["result"], "done after 100 calls");
    let requests = main_requests(&model.requests());
    assert!(requests.iter().all(|r| !r.contains("[looprail]")), "no remark, no denial");
}
