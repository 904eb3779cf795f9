//! The README's and the quick starts' terminal examples, run against the real binary: every
//! ```` ```console ```` block is a list of `$ command` lines, each followed by the output it must
//! print (stdout and stderr together), matched with snapbox's wildcards (`[..]` inside a line,
//! `...` for any lines). The commands of one page run in order, in one scratch directory with a
//! scratch `HOME`, through bash, with the built `looprail` first on PATH; a command ending in
//! `&` is left running (until its expected output has appeared) and stopped when the page ends.
//! A model, where a page needs one, is a local fake upstream named by the environment
//! (`LOOPRAIL_OPENAI_UPSTREAM` for the gateway, `LOOPRAIL_BASE_URL` for `looprail run`), so the
//! pages show the commands exactly as a user types them.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common;

use common::{sse_call, sse_text};
use looprail_providers::fake::{FakeServer, Reply};

/// One `$ command` and the output it must print.
#[derive(Debug)]
struct Step {
    command: String,
    expected: String,
}

/// The steps of every console block of `markdown`, in order.
fn console_steps(markdown: &str) -> Vec<Step> {
    let mut steps: Vec<Step> = Vec::new();
    let mut in_block = false;
    let mut continued = false;
    for line in markdown.lines() {
        if !in_block {
            in_block = line.trim_end() == "```console";
            continue;
        }
        if line.trim_end() == "```" {
            in_block = false;
            continue;
        }
        if continued && let Some(last) = steps.last_mut() {
            last.command.push('\n');
            last.command.push_str(line);
            continued = line.ends_with('\\');
            continue;
        }
        if let Some(command) = line.strip_prefix("$ ") {
            steps.push(Step { command: command.to_owned(), expected: String::new() });
            continued = command.ends_with('\\');
        } else if let Some(last) = steps.last_mut() {
            last.expected.push_str(line);
            last.expected.push('\n');
        }
    }
    steps
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A scratch directory holding `work/` (the commands' directory, with the repository's
/// `examples/` in it) and `home/`.
fn scratch(name: &str) -> PathBuf {
    let root = std::env::temp_dir().join(format!("looprail-quickstart-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(root.join("home")).unwrap();
    std::fs::create_dir_all(root.join("work/examples/logs")).unwrap();
    for entry in std::fs::read_dir(repo().join("examples/logs")).unwrap() {
        let path = entry.unwrap().path();
        std::fs::copy(&path, root.join("work/examples/logs").join(path.file_name().unwrap())).unwrap();
    }
    root
}

/// Runs the page at `page` (relative to the repository) with `env` added; panics with the
/// command and a diff at the first output that does not match.
fn run_page(page: &str, env: &[(&str, String)]) {
    let text = std::fs::read_to_string(repo().join(page)).unwrap();
    let steps = console_steps(&text);
    assert!(!steps.is_empty(), "{page} has no console example");
    let root = scratch(&page.replace('/', "-"));
    let binary = PathBuf::from(env!("CARGO_BIN_EXE_looprail"));
    let path =
        format!("{}:{}", binary.parent().unwrap().display(), std::env::var("PATH").unwrap_or_default());
    let shell = |command: &str| {
        let mut shell = Command::new("bash");
        shell
            .arg("-c")
            .arg(format!("exec 2>&1\n{command}"))
            .current_dir(root.join("work"))
            .env("PATH", &path)
            .env("HOME", root.join("home"))
            .env_remove("XDG_STATE_HOME")
            .env_remove("LOOPRAIL_STORE")
            .env_remove("LOOPRAIL_CONFIG")
            .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
            .stdin(Stdio::null());
        shell
    };
    let mut background: Vec<Child> = Vec::new();
    for step in &steps {
        if let Some(command) = step.command.strip_suffix('&') {
            let log = root.join(format!("background-{}.log", background.len()));
            let file = std::fs::File::create(&log).unwrap();
            background.push(shell(command).stdout(file).spawn().unwrap());
            wait_for_output(page, &step.expected, &log);
            continue;
        }
        let out = shell(&step.command).output().unwrap();
        let printed = String::from_utf8_lossy(&out.stdout).into_owned();
        if !out.status.success() {
            stop(&mut background);
            panic!("{page}: `{}` exited with {}:\n{printed}", step.command, out.status);
        }
        if let Err(diff) = matches(&step.expected, &printed) {
            stop(&mut background);
            panic!("{page}: `{}` printed something else:\n{diff}", step.command);
        }
    }
    stop(&mut background);
    let _ = std::fs::remove_dir_all(root);
}

/// Whether `printed` matches `expected` (snapbox's wildcards); the error is a readable diff.
/// A last line without its newline (curl's output) is compared as if it had one.
fn matches(expected: &str, printed: &str) -> Result<(), String> {
    let ended = |text: &str| {
        if text.is_empty() || text.ends_with('\n') { text.to_owned() } else { format!("{text}\n") }
    };
    snapbox::Assert::new()
        .try_eq(None, ended(printed).into(), ended(expected).into())
        .map_err(|e| e.to_string())
}

/// Waits (at most 20 s) until the background command's log matches its expected output.
fn wait_for_output(page: &str, expected: &str, log: &Path) {
    let started = Instant::now();
    loop {
        let printed = std::fs::read_to_string(log).unwrap_or_default();
        let wanted_lines = expected.lines().count();
        let first: String = printed.lines().take(wanted_lines).map(|l| format!("{l}\n")).collect();
        if printed.lines().count() >= wanted_lines && matches(expected, &first).is_ok() {
            return;
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "{page}: a background command printed:\n{printed}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn stop(children: &mut Vec<Child>) {
    for child in children.iter_mut() {
        // SIGTERM, as a terminal's job control or a process manager would stop it.
        let _ = Command::new("kill").arg("-TERM").arg(child.id().to_string()).status();
        let _ = child.wait();
    }
    children.clear();
}

#[test]
fn the_console_blocks_are_read_as_commands_and_their_output() {
    let page = "text\n```console\n$ echo a \\\n  b\na b\n$ true\n```\n```sh\n$ not run\n```\n";
    let steps = console_steps(page);
    assert_eq!(steps.len(), 2, "{steps:?}");
    assert_eq!(steps[0].command, "echo a \\\n  b");
    assert_eq!(steps[0].expected, "a b\n");
    assert_eq!(steps[1].expected, "");
    assert!(matches("x [..] z\n...\n", "x y z\nmore\nlines\n").is_ok());
    assert!(matches("x y z\n", "x y w\n").is_err());
}

#[test]
fn readme() {
    run_page("README.md", &[]);
}

#[test]
fn install_page() {
    run_page("docs/install.md", &[]);
}

#[test]
fn audit_quick_start() {
    run_page("docs/quickstart/audit.md", &[]);
}

#[test]
fn hooks_quick_start() {
    run_page("docs/quickstart/hooks.md", &[]);
}

fn chat_reply(text: &str) -> Reply {
    Reply::json(
        200,
        &serde_json::json!({"id": "chatcmpl-1", "object": "chat.completion", "created": 1_764_633_600, "model": "gpt-4o-mini",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 21, "completion_tokens": 9, "total_tokens": 30}})
        .to_string(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gateway_quick_start() {
    let upstream = FakeServer::start(vec![chat_reply("Hello! How can I help?")]).await;
    let env = [("LOOPRAIL_OPENAI_UPSTREAM", upstream.url.clone()), ("OPENAI_API_KEY", "sk-test".to_owned())];
    tokio::task::spawn_blocking(move || run_page("docs/quickstart/gateway.md", &env)).await.unwrap();
    assert_eq!(upstream.requests().len(), 1, "the page's request reached the upstream once");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn durable_runs_quick_start() {
    let upstream = FakeServer::start(vec![
        sse_call("call_1", "read_file", r#"{"path": "notes.txt"}"#),
        sse_text("The meeting moved to Thursday at 10:00."),
    ])
    .await;
    let env =
        [("LOOPRAIL_BASE_URL", format!("{}/v1", upstream.url)), ("OPENAI_API_KEY", "sk-test".to_owned())];
    tokio::task::spawn_blocking(move || run_page("docs/quickstart/durable-runs.md", &env)).await.unwrap();
    assert_eq!(upstream.requests().len(), 2);
}
