//! looprail inside the real GitHub Copilot CLI (issue 66): `looprail hook install copilot`
//! writes `looprail.json` into the project's `.github/hooks` or the user's `~/.copilot/hooks`,
//! and `copilot -p` (the pinned npm release) runs offline against a local fake OpenAI API (its
//! own `COPILOT_PROVIDER_BASE_URL`). A model that repeats one shell command is nudged (the
//! remark appended to the tool's result), denied, asked about (which `-p` denies, no one being
//! there to answer), and once stopped every further call is refused with the model told to end
//! its turn, which it does; the CLI exits cleanly. A healthy session of 100 distinct calls is
//! never touched.

use super::chat_model::{self, results};
use super::node;

use std::path::Path;
use std::process::Command;

use looprail_providers::fake::{FakeServer, Seen};
use serde_json::Value;

/// Whether a request is the agent's main loop (it declares the shell tool).
fn main_loop(body: &Value) -> bool {
    chat_model::declares(body, "bash")
}

/// The fake model, its shell tool `bash`.
async fn model(next: impl Fn(usize) -> Option<String> + Send + Sync + 'static) -> FakeServer {
    chat_model::model("bash", next).await
}

/// Installs the hooks (`--project` into `work`, or `--user` for `home`) with the store
/// `store`, then runs `copilot -p` in `work` against `model`; returns its exit code and stdout.
async fn copilot(
    clients: &Path,
    home: &Path,
    work: &Path,
    user: bool,
    store: &Path,
    model: &FakeServer,
) -> (Option<i32>, String) {
    let copilot_home = home.join(".copilot");
    let mut install = Command::new(env!("CARGO_BIN_EXE_looprail"));
    install.args(["hook", "install", "copilot"]).env("COPILOT_HOME", &copilot_home);
    if user {
        install.arg("--user");
    } else {
        install.arg("--project").arg(work);
    }
    let install = install.arg("--store").arg(store).output().unwrap();
    assert!(install.status.success(), "{}", String::from_utf8_lossy(&install.stderr));
    let file = if user { copilot_home.join("hooks") } else { work.join(".github/hooks") };
    assert!(file.join("looprail.json").is_file(), "looprail's own hook file");
    // The CLI unpacks itself (some 240 MB) into its cache once: one cache for every test.
    let cache = Path::new(env!("CARGO_TARGET_TMPDIR")).join("copilot-cache");
    let mut command = Command::new("timeout");
    command
        .arg("300")
        .arg(clients.join("node_modules/.bin/copilot"))
        .args(["-p", "run the build", "--allow-all-tools", "-s", "--no-color"])
        .env("HOME", home)
        .env("COPILOT_HOME", &copilot_home)
        .env("XDG_CACHE_HOME", cache)
        .env("COPILOT_OFFLINE", "true")
        .env("COPILOT_AUTO_UPDATE", "false")
        .env("COPILOT_PROVIDER_BASE_URL", format!("{}/v1", model.url))
        .env("COPILOT_PROVIDER_API_KEY", "sk-test")
        .env("COPILOT_MODEL", "gpt-4o-mini")
        // `-p` runs a repository's hooks only in a folder the user trusts, or when asked to.
        .env("GITHUB_COPILOT_PROMPT_MODE_REPO_HOOKS", "true")
        .current_dir(work)
        .stdin(std::process::Stdio::null());
    let out = tokio::task::spawn_blocking(move || command.output().unwrap()).await.unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success() || stdout.is_empty(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    (out.status.code(), stdout)
}

fn main_requests(seen: &[Seen]) -> Vec<Value> {
    seen.iter().filter(|r| main_loop(&r.body)).map(|r| r.body.clone()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_repeating_one_call_is_nudged_denied_and_stopped_through_the_hook() {
    let Some(clients) = node::clients() else { return };
    let (dir, work) = super::project();
    // A model that would repeat the same failing build 40 times.
    let model = model(|n| (n < 40).then(|| "echo 'make: *** No rule to make target'".to_owned())).await;
    let (code, stdout) =
        copilot(&clients, dir.path(), &work, false, &dir.path().join("hooks.db"), &model).await;
    let requests = main_requests(&model.requests());
    let text: Vec<String> = requests.iter().map(Value::to_string).collect();
    let nudged = text.iter().position(|r| r.contains("keep producing the same kind of result"));
    let denied = text.iter().position(|r| r.contains("[looprail] Denied: this exact `Bash` call"));
    let stopped = text.iter().position(|r| r.contains("end your turn now"));
    assert!(nudged.is_some(), "the model was nudged: {} requests; {stdout}", requests.len());
    assert!(denied > nudged, "then a repeat was denied");
    assert!(stopped > denied, "then the stretch was stopped");
    let last = results(requests.last().unwrap());
    let ran = last.iter().filter(|r| !r.starts_with("Denied by preToolUse hook")).count();
    assert!(ran <= 8, "the loop was stopped long before the model's 40 calls: {ran} ran of {}", last.len());
    assert!(stdout.contains("done after"), "the model ended its turn: {stdout}");
    assert_eq!(code, Some(0), "the CLI exits cleanly");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_healthy_session_of_100_distinct_calls_is_never_touched() {
    let Some(clients) = node::clients() else { return };
    let (dir, work) = super::project();
    let model = model(|n| (n < 100).then(|| format!("echo step {n}"))).await;
    let (code, stdout) =
        copilot(&clients, dir.path(), &work, true, &dir.path().join("hooks.db"), &model).await;
    assert_eq!(code, Some(0));
    assert!(stdout.contains("done after 100 calls"), "{stdout}");
    let requests = main_requests(&model.requests());
    assert!(requests.iter().all(|r| !r.to_string().contains("[looprail]")), "no remark, no denial");
}
