//! Durable runs through the binary (issue 15): a signal leaves a run interrupted and
//! resumable, a question is answered by `looprail answer`, finished runs are never resumed,
//! and two runs sharing a lane each run with their own model and server.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::process::{Command, Output, Stdio};
use std::time::Duration;

use common::{json_call, json_text, looprail_keyed, openai_args, temp_dir};
use looprail_providers::fake::{FakeServer, Reply};

/// `looprail <command> --provider openai ... <tail>` against `server`, sharing `dir`'s store.
fn command_args(command: &str, server: &FakeServer, dir: &std::path::Path, tail: &[&str]) -> Vec<String> {
    let mut args = openai_args(server, dir, &[], "");
    args[0] = command.to_owned();
    args.pop(); // the task
    args.extend(tail.iter().map(|t| (*t).to_owned()));
    args
}

/// `looprail` started in the background with an OpenAI key, its output captured.
fn spawn_looprail<I: IntoIterator<Item = S>, S: AsRef<std::ffi::OsStr>>(args: I) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_looprail"))
        .args(args)
        .env("OPENAI_API_KEY", "sk-test")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Sends `signal` (`-TERM`, `-INT`, `-KILL`) to `child` and collects its output.
async fn signal_and_wait(child: std::process::Child, signal: &str) -> Output {
    assert!(Command::new("kill").args([signal, &child.id().to_string()]).status().unwrap().success());
    tokio::task::spawn_blocking(move || child.wait_with_output()).await.unwrap().unwrap()
}

fn run_id(out: &Output) -> String {
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    stderr
        .lines()
        .find_map(|l| l.strip_prefix("[run ").map(|r| r.trim_end_matches(']').to_owned()))
        .unwrap_or_else(|| panic!("no run id in: {stderr}"))
}

fn runs_table(dir: &std::path::Path) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_looprail"))
        .args(["runs", "--store", &dir.join("runs.db").display().to_string()])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

async fn wait_for_requests(server: &FakeServer, n: usize) {
    for _ in 0..400 {
        if server.requests().len() >= n {
            return;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("the server saw {} requests, not {n}", server.requests().len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signal_stops_the_run_at_a_boundary_and_resume_finishes_it() {
    for signal in ["-TERM", "-INT"] {
        let dir = temp_dir("signal");
        // The second model call never answers: the signal arrives while it is in flight.
        let server =
            FakeServer::start(vec![json_call("c1", "read_file", r#"{"path": "notes.txt"}"#), Reply::Silent])
                .await;
        let child = spawn_looprail(openai_args(&server, &dir, &[], "When is the meeting?"));
        wait_for_requests(&server, 2).await;
        let out = signal_and_wait(child, signal).await;
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(5), "{signal}: {stderr}");
        assert!(stderr.contains("interrupted at a safe boundary"), "{stderr}");
        let id = run_id(&out);
        let table = runs_table(&dir);
        let row = table.lines().find(|l| l.starts_with(&id)).unwrap();
        assert!(row.contains("interrupted") && row.contains("yes"), "{row}");

        // Another process resumes it from its checkpoint: the read is not asked for again.
        let server = FakeServer::start(vec![json_text("It moved to Thursday.")]).await;
        let out = looprail_keyed(command_args("resume", &server, &dir, &[&id])).await;
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
        assert!(String::from_utf8_lossy(&out.stdout).contains("Thursday"));
        assert_eq!(server.requests().len(), 1);
        let sent = server.requests()[0].body.to_string();
        assert!(sent.contains("the meeting moved to Thursday"), "the tool result from before the signal");

        // Finished now: a second resume is refused and calls no model.
        let server = FakeServer::start(vec![json_text("again")]).await;
        let out = looprail_keyed(command_args("resume", &server, &dir, &[&id])).await;
        assert_eq!(out.status.code(), Some(1));
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("is completed"),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(server.requests().is_empty());
        let _ = std::fs::remove_dir_all(dir);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiting_run_is_answered_and_finishes() {
    let dir = temp_dir("answer");
    let server =
        FakeServer::start(vec![json_call("c1", "ask_human", r#"{"question": "Which quarter?"}"#)]).await;
    let out = looprail_keyed(openai_args(&server, &dir, &[], "Summarise the report")).await;
    assert_eq!(out.status.code(), Some(4));
    let id = run_id(&out);
    assert!(runs_table(&dir).contains("question: Which quarter?"), "{}", runs_table(&dir));

    // Resume is not the way on; answer is.
    let server = FakeServer::start(vec![json_text("The Q3 report: sales rose.")]).await;
    let out = looprail_keyed(command_args("resume", &server, &dir, &[&id])).await;
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("waits on a human"));
    // Only what changed is given: provider, model and work directory come from the stored recipe.
    let out = looprail_keyed(vec![
        "answer".into(),
        "--base-url".into(),
        format!("{}/v1", server.url),
        "--store".into(),
        dir.join("runs.db").display().to_string(),
        id.clone(),
        "Q3".into(),
    ])
    .await;
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("The Q3 report"));
    let sent = server.requests()[0].body.clone();
    assert_eq!(sent["model"], "gpt-4o-mini", "the stored model");
    let tool_answer = sent["messages"]
        .as_array()
        .unwrap()
        .iter()
        .any(|m| m["role"] == "tool" && m["content"] == "Q3" && m["tool_call_id"] == "c1");
    assert!(tool_answer, "the answer went back as the ask_human result: {sent}");
    // Answered once only.
    let out = looprail_keyed(command_args("answer", &server, &dir, &[&id, "Q4"])).await;
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not waiting on a human"));
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_runs_sharing_a_lane_each_run_with_their_own_model_and_server() {
    let dir = temp_dir("lanes");
    // The first run streams slowly, holding the lane.
    let chunk = |text: &str| {
        let body =
            serde_json::json!({"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": null}]});
        format!("data: {body}\n\n")
    };
    let slow = Reply::Sse {
        chunks: vec![chunk("first "), chunk("answer"), "data: [DONE]\n\n".to_owned()],
        pause: Duration::from_millis(700),
        break_at_end: false,
    };
    let server_a = FakeServer::start(vec![slow]).await;
    let server_b = FakeServer::start(vec![json_text("second answer")]).await;
    let lane = ["--lane".to_owned(), "shared".to_owned()];
    let mut args_a = openai_args(&server_a, &dir, &lane, "first task");
    args_a.retain(|a| a != "--no-stream");
    let first = spawn_looprail(args_a);
    wait_for_requests(&server_a, 1).await;
    let mut args_b = openai_args(&server_b, &dir, &lane, "second task");
    args_b[4] = "model-b".into(); // --model
    let second = looprail_keyed(args_b).await;
    let first = tokio::task::spawn_blocking(move || first.wait_with_output()).await.unwrap().unwrap();
    assert_eq!(first.status.code(), Some(0), "{}", String::from_utf8_lossy(&first.stderr));
    assert_eq!(second.status.code(), Some(0), "{}", String::from_utf8_lossy(&second.stderr));
    assert!(String::from_utf8_lossy(&second.stderr).contains("queued in lane `shared`"));
    assert!(String::from_utf8_lossy(&second.stdout).contains("second answer"));
    // Each task went to its own server and model, once.
    assert_eq!(server_a.requests().len(), 1);
    assert_eq!(server_b.requests().len(), 1);
    assert_eq!(server_b.requests()[0].body["model"], "model-b");
    assert!(server_b.requests()[0].body.to_string().contains("second task"));
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn submitted_runs_are_executed_by_a_worker_from_their_own_recipes() {
    let dir = temp_dir("worker");
    let server_a = FakeServer::start(vec![json_text("answer from A")]).await;
    let server_b = FakeServer::start(vec![
        json_call("c1", "read_file", r#"{"path": "notes.txt"}"#),
        json_text("answer from B"),
    ])
    .await;
    let mut ids = Vec::new();
    for (server, model, task) in [(&server_a, "model-a", "task A"), (&server_b, "model-b", "task B")] {
        let mut args = openai_args(server, &dir, &[], task);
        args[0] = "submit".into();
        args[4] = model.into();
        let out = looprail_keyed(args).await;
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
        ids.push(String::from_utf8_lossy(&out.stdout).trim().to_owned());
    }
    assert!(server_a.requests().is_empty(), "submit runs nothing");
    let table = runs_table(&dir);
    assert_eq!(table.matches("queued").count(), 2, "{table}");

    let store = dir.join("runs.db").display().to_string();
    let worker =
        looprail_keyed(vec!["worker".into(), "--store".into(), store.clone(), "--exit-when-idle".into()])
            .await;
    assert_eq!(worker.status.code(), Some(0), "{}", String::from_utf8_lossy(&worker.stderr));
    assert_eq!(server_a.requests().len(), 1);
    assert_eq!(server_a.requests()[0].body["model"], "model-a");
    assert_eq!(server_b.requests().len(), 2);
    assert_eq!(server_b.requests()[0].body["model"], "model-b");
    for (id, expected) in ids.iter().zip(["answer from A", "answer from B"]) {
        let out = looprail_keyed(vec!["wait".into(), "--store".into(), store.clone(), id.clone()]).await;
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
        assert!(String::from_utf8_lossy(&out.stdout).contains(expected));
    }
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_stops_a_worker_and_its_run_stays_resumable() {
    let dir = temp_dir("worker-term");
    let server =
        FakeServer::start(vec![json_call("c1", "read_file", r#"{"path": "notes.txt"}"#), Reply::Silent])
            .await;
    let mut args = openai_args(&server, &dir, &[], "When is the meeting?");
    args[0] = "submit".into();
    let out = looprail_keyed(args).await;
    let id = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    let worker = spawn_looprail(["worker", "--store", &dir.join("runs.db").display().to_string()]);
    wait_for_requests(&server, 2).await;
    let out = signal_and_wait(worker, "-TERM").await;
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let table = runs_table(&dir);
    let row = table.lines().find(|l| l.starts_with(&id)).unwrap();
    assert!(row.contains("interrupted") && row.contains("yes"), "{row}");
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_sigkill_the_reconciler_finds_the_run_and_resume_finishes_it() {
    let dir = temp_dir("sigkill");
    let config = dir.join("journal.toml");
    std::fs::write(&config, "[journal]\nheartbeat_secs = 1\nstale_after_secs = 3\n").unwrap();
    let extra = ["--config".to_owned(), config.display().to_string()];
    let server =
        FakeServer::start(vec![json_call("c1", "read_file", r#"{"path": "notes.txt"}"#), Reply::Silent])
            .await;
    let child = spawn_looprail(openai_args(&server, &dir, &extra, "When is the meeting?"));
    wait_for_requests(&server, 2).await;
    let out = signal_and_wait(child, "-KILL").await;
    assert_eq!(out.status.code(), None, "killed");
    let id = run_id(&out);
    assert!(runs_table(&dir).lines().any(|l| l.starts_with(&id) && l.contains("running")));

    // A fresh heartbeat means a live owner: resume is refused while it is fresh...
    let server = FakeServer::start(vec![json_text("It moved to Thursday.")]).await;
    let early = looprail_keyed(command_args("resume", &server, &dir, &[&id])).await;
    assert_eq!(early.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&early.stderr).contains("running in another process"));
    // ...and once it is stale, the start-up reconcile marks the run and resume finishes it.
    tokio::time::sleep(Duration::from_secs(4)).await;
    let out = looprail_keyed(command_args("resume", &server, &dir, &[&id])).await;
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("agent_run.reconcile"));
    assert!(String::from_utf8_lossy(&out.stdout).contains("Thursday"));
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_can_be_queued_for_a_worker() {
    let dir = temp_dir("answer-queue");
    let server =
        FakeServer::start(vec![json_call("c1", "ask_human", r#"{"question": "Which quarter?"}"#)]).await;
    let out = looprail_keyed(openai_args(&server, &dir, &[], "Summarise the report")).await;
    assert_eq!(out.status.code(), Some(4));
    let id = run_id(&out);
    let server = FakeServer::start(vec![json_text("The Q3 report: sales rose.")]).await;
    let store = dir.join("runs.db").display().to_string();
    let base = format!("{}/v1", server.url);
    let out = looprail_keyed(vec![
        "answer".into(),
        "--queue".into(),
        "--base-url".into(),
        base,
        "--store".into(),
        store.clone(),
        id.clone(),
        "Q3".into(),
    ])
    .await;
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(server.requests().is_empty(), "queued: nothing ran yet");
    assert!(runs_table(&dir).lines().any(|l| l.starts_with(&id) && l.contains("queued")));
    let worker =
        looprail_keyed(vec!["worker".into(), "--store".into(), store.clone(), "--exit-when-idle".into()])
            .await;
    assert_eq!(worker.status.code(), Some(0), "{}", String::from_utf8_lossy(&worker.stderr));
    let out = looprail_keyed(vec!["wait".into(), "--store".into(), store, id.clone()]).await;
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("The Q3 report"));
    let sent = server.requests()[0].body.to_string();
    assert!(sent.contains("\"Q3\""), "the worker went on from the answer: {sent}");
    let _ = std::fs::remove_dir_all(dir);
}
