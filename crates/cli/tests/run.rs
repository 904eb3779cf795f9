//! `looprail run` against local fake OpenAI and Anthropic servers: a tool loop completes, the
//! tool result goes back with the right id, and the file tools never leave the work directory.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::process::Output;

use common::{json_call, json_text, looprail, looprail_keyed, openai_args, sse_call, sse_text, temp_dir};
use looprail_providers::fake::{FakeServer, Reply};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streamed_openai_tool_loop_completes_and_sends_the_result_back() {
    let dir = temp_dir("openai");
    let server = FakeServer::start(vec![
        sse_call("call_7", "read_file", r#"{"path": "notes.txt"}"#),
        sse_text("It moved to Thursday."),
    ])
    .await;
    let mut args = openai_args(&server, &dir, &[], "When is the meeting?");
    args.retain(|a| a != "--no-stream");
    // No OPENAI_API_KEY: a --base-url server needs none.
    let out = looprail(args).await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("It moved to Thursday."), "{stdout}");
    let second = &server.requests()[1].body;
    let tool = second["messages"].as_array().unwrap().iter().find(|m| m["role"] == "tool").unwrap();
    assert_eq!(tool["tool_call_id"], "call_7");
    assert_eq!(tool["content"], "the meeting moved to Thursday");
    assert_eq!(second["stream"], true);

    let runs =
        looprail(vec!["runs".into(), "--store".into(), dir.join("runs.db").display().to_string()]).await;
    assert!(String::from_utf8_lossy(&runs.stdout).contains("completed"));
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_anthropic_tool_loop_completes_and_escapes_are_refused() {
    let dir = temp_dir("anthropic");
    std::os::unix::fs::symlink(dir.join("secret.txt"), dir.join("work/link.txt")).unwrap();
    // A planted link whose target does not exist yet (issue 14: it used to be written through).
    std::os::unix::fs::symlink(dir.join("planted.txt"), dir.join("work/planted.txt")).unwrap();
    let call = |id: &str, path: &str| {
        Reply::json(200, &serde_json::json!({"content": [{"type": "tool_use", "id": id, "name": "read_file", "input": {"path": path}}], "stop_reason": "tool_use", "usage": {"input_tokens": 10, "output_tokens": 5}}).to_string())
    };
    let write = Reply::json(200, &serde_json::json!({"content": [{"type": "tool_use", "id": "toolu_4", "name": "write_file", "input": {"path": "planted.txt", "content": "pwned"}}], "stop_reason": "tool_use"}).to_string());
    let server = FakeServer::start(vec![
        call("toolu_1", "../secret.txt"),
        call("toolu_2", "link.txt"),
        call("toolu_3", "/etc/passwd"),
        write,
        Reply::json(
            200,
            r#"{"content": [{"type": "text", "text": "I cannot read those."}], "stop_reason": "end_turn"}"#,
        ),
    ])
    .await;
    let args = vec![
        "run".into(),
        "--provider".into(),
        "anthropic".into(),
        "--model".into(),
        "claude-haiku-4-5".into(),
        "--base-url".into(),
        server.url.clone(),
        "--no-stream".into(),
        "--store".into(),
        dir.join("runs.db").display().to_string(),
        "--workdir".into(),
        dir.join("work").display().to_string(),
        "Read the secret".into(),
    ];
    let out = looprail(args).await;
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("I cannot read those."));
    assert!(!dir.join("planted.txt").exists(), "nothing was written outside the work directory");
    let last = &server.requests()[4].body;
    let results: Vec<serde_json::Value> = last["messages"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .filter(|b| b["type"] == "tool_result")
        .collect();
    assert_eq!(results.len(), 4);
    for (result, id) in results.iter().zip(["toolu_1", "toolu_2", "toolu_3", "toolu_4"]) {
        assert_eq!(result["tool_use_id"], id);
        assert_eq!(result["is_error"], true);
        assert!(result["content"].as_str().unwrap().contains("outside the work directory"), "{result}");
        assert!(!result["content"].as_str().unwrap().contains("do not leak"));
    }
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn errors_are_one_line_with_what_to_do() {
    let out = looprail(vec![
        "run".into(),
        "--provider".into(),
        "openai".into(),
        "--model".into(),
        "gpt-4o".into(),
        "hi".into(),
    ])
    .await;
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(stderr.contains("OPENAI_API_KEY is not set"), "{stderr}");
    let dir = temp_dir("config");
    std::fs::write(dir.join("bad.toml"), "[guardrails]\nwindw = 6\n").unwrap();
    let out = looprail(vec![
        "audit".into(),
        "--config".into(),
        dir.join("bad.toml").display().to_string(),
        dir.display().to_string(),
    ])
    .await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && stderr.contains("guardrails.windw"), "{stderr}");
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_outcome_class_has_its_exit_code() {
    // A budget stop: exit 3, with the fallback reply printed.
    let dir = temp_dir("exit-budget");
    std::fs::write(dir.join("budget.toml"), "[loop.budget]\ntool_call_budget = 1\n").unwrap();
    let server = FakeServer::start(vec![
        json_call("c1", "read_file", r#"{"path": "notes.txt"}"#),
        json_text("Partial: the meeting moved; the rest is missing."),
    ])
    .await;
    let extra = ["--config".to_owned(), dir.join("budget.toml").display().to_string()];
    let out = looprail_keyed(openai_args(&server, &dir, &extra, "When is the meeting?")).await;
    assert_eq!(out.status.code(), Some(3), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("Partial"));

    // A pause for a human: exit 4, and the question is printed.
    let dir = temp_dir("exit-human");
    let server =
        FakeServer::start(vec![json_call("c1", "ask_human", r#"{"question": "Which\r\nquarter?"}"#)]).await;
    let out = looprail_keyed(openai_args(&server, &dir, &[], "Summarise the report")).await;
    assert_eq!(out.status.code(), Some(4), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("waits for your answer: Which quarter?"));

    // A provider that refuses: exit 1, one readable line, no HTML pasted in.
    let dir = temp_dir("exit-failed");
    let page = "<html>\r\n<body>\r\n<h1>401 Unauthorized</h1>\r\n</body>\r\n</html>";
    let server = FakeServer::start(vec![Reply::html(401, page)]).await;
    let out = looprail_keyed(openai_args(&server, &dir, &[], "hi")).await;
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let error_lines: Vec<&str> = stderr.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(error_lines.len(), 1, "{stderr}");
    assert!(!error_lines[0].contains('\r'));

    // A completed run: exit 0.
    let dir = temp_dir("exit-ok");
    let server = FakeServer::start(vec![json_text("Hello.")]).await;
    let out = looprail_keyed(openai_args(&server, &dir, &[], "hi")).await;
    assert_eq!(out.status.code(), Some(0));
    // Bad usage: exit 2.
    let out = looprail(vec!["run".into(), "--provider".into(), "nope".into()]).await;
    assert_eq!(out.status.code(), Some(2));
}

#[tokio::test]
async fn commands_on_existing_runs_refuse_a_store_that_does_not_exist() {
    let dir = temp_dir("no-store");
    let missing = dir.join("typo.db").display().to_string();
    for args in [
        vec!["runs".to_owned(), "--store".into(), missing.clone()],
        vec!["cancel".to_owned(), "--store".into(), missing.clone(), "run-1".into()],
        vec![
            "resume".to_owned(),
            "--provider".into(),
            "openai".into(),
            "--model".into(),
            "m".into(),
            "--store".into(),
            missing.clone(),
            "run-1".into(),
        ],
    ] {
        let out = looprail_keyed(args.clone()).await;
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("no run store at"), "{stderr}");
        assert!(!dir.join("typo.db").exists(), "{args:?} created an empty database");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_ids_are_unique_uuids() {
    let dir = temp_dir("ids");
    let server = FakeServer::start(vec![json_text("a"), json_text("b")]).await;
    let first = looprail_keyed(openai_args(&server, &dir, &[], "one")).await;
    let second = looprail_keyed(openai_args(&server, &dir, &[], "two")).await;
    let id = |out: &Output| {
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        stderr
            .lines()
            .find_map(|l| l.strip_prefix("[run ").map(|r| r.trim_end_matches(']').to_owned()))
            .unwrap()
    };
    let (a, b) = (id(&first), id(&second));
    assert_ne!(a, b);
    assert_eq!(a.len(), "run-".len() + 36, "{a}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retry_model_from_the_config_file_reaches_the_client() {
    let unavailable = || Reply::json(503, r#"{"error": {"message": "overloaded", "type": "server_error"}}"#);
    for (max_retries, requests, code) in [(0u32, 1usize, 1), (3, 4, 0)] {
        let dir = temp_dir("retry-config");
        let config =
            format!("[retry.model]\nmax_retries = {max_retries}\ninitial_delay_ms = 1\nmax_delay_ms = 5\n");
        std::fs::write(dir.join("retry.toml"), config).unwrap();
        let server =
            FakeServer::start(vec![unavailable(), unavailable(), unavailable(), json_text("ok")]).await;
        let extra = ["--config".to_owned(), dir.join("retry.toml").display().to_string()];
        let out = looprail_keyed(openai_args(&server, &dir, &extra, "hi")).await;
        assert_eq!(
            out.status.code(),
            Some(code),
            "max_retries {max_retries}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(server.requests().len(), requests, "max_retries {max_retries}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_a_run_that_waits_on_a_human_cancels_it_at_once() {
    let dir = temp_dir("cancel-waiting");
    let server =
        FakeServer::start(vec![json_call("c1", "ask_human", r#"{"question": "Which file?"}"#)]).await;
    let out = looprail_keyed(openai_args(&server, &dir, &[], "Tidy up")).await;
    assert_eq!(out.status.code(), Some(4));
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let run_id = stderr
        .lines()
        .find_map(|l| l.strip_prefix("[run ").map(|r| r.trim_end_matches(']').to_owned()))
        .unwrap();
    let store = dir.join("runs.db").display().to_string();
    let out = looprail(vec!["cancel".into(), "--store".into(), store.clone(), run_id.clone()]).await;
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let runs = looprail(vec!["runs".into(), "--store".into(), store.clone()]).await;
    let listing = String::from_utf8_lossy(&runs.stdout);
    let line = listing.lines().find(|l| l.starts_with(&run_id)).unwrap();
    assert!(line.contains("cancelled"), "{line}");
    // Cancelling a run that has ended says its state, fails, and changes nothing.
    let again = looprail(vec!["cancel".into(), "--store".into(), store.clone(), run_id.clone()]).await;
    let stderr = String::from_utf8_lossy(&again.stderr);
    assert!(!again.status.success() && again.status.code() != Some(0), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "one readable line: {stderr}");
    assert!(stderr.contains("already ended (cancelled)"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_a_completed_run_fails_with_its_state_and_changes_nothing() {
    let dir = temp_dir("cancel-completed");
    let server = FakeServer::start(vec![json_text("Done.")]).await;
    let out = looprail_keyed(openai_args(&server, &dir, &[], "Say done")).await;
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let run_id = stderr
        .lines()
        .find_map(|l| l.strip_prefix("[run ").map(|r| r.trim_end_matches(']').to_owned()))
        .unwrap();
    let store = dir.join("runs.db").display().to_string();
    let out = looprail(vec!["cancel".into(), "--store".into(), store.clone(), run_id.clone()]).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(
        stderr.trim(),
        format!("error: run `{run_id}` already ended (completed): there is nothing to cancel")
    );
    let runs = looprail(vec!["runs".into(), "--store".into(), store]).await;
    let listing = String::from_utf8_lossy(&runs.stdout);
    let line = listing.lines().find(|l| l.starts_with(&run_id)).unwrap();
    assert!(line.contains("completed"), "still completed: {line}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_html_page_answering_a_streaming_call_is_a_malformed_response_not_retried() {
    let dir = temp_dir("html-stream");
    let page = "<html>\r\n<body>\r\n<p>Please log in to the proxy</p>\r\n</body>\r\n</html>";
    let server =
        FakeServer::start(vec![Reply::html(200, page), Reply::html(200, page), Reply::html(200, page)]).await;
    let mut args = openai_args(&server, &dir, &[], "hi");
    args.retain(|a| a != "--no-stream");
    let out = looprail_keyed(args).await;
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(server.requests().len(), 1, "a malformed response is not retried");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let line = stderr.lines().find(|l| l.starts_with("error:")).unwrap();
    assert!(line.contains("expected an event stream") && line.contains("Please log in"), "{line}");
}

/// The model each request asked for, in order.
fn models_asked(server: &FakeServer) -> Vec<String> {
    server.requests().iter().map(|r| r.body["model"].as_str().unwrap_or_default().to_owned()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_fallback_chain_is_set_from_the_flag_or_the_config_file() {
    let gone = || {
        Reply::json(
            404,
            r#"{"error": {"message": "The model `gpt-4o-mini` does not exist", "type": "invalid_request_error", "code": "model_not_found"}}"#,
        )
    };
    let dir = temp_dir("fallback");
    std::fs::write(dir.join("fallback.toml"), "[provider]\nfallback_models = [\"backup-1\"]\n").unwrap();
    let from_file = ["--config".to_owned(), dir.join("fallback.toml").display().to_string()];
    let from_flag = ["--fallback-model".to_owned(), "backup-1".into()];
    for extra in [&from_file[..], &from_flag[..]] {
        let server = FakeServer::start(vec![gone(), json_text("Served by the backup.")]).await;
        let out = looprail_keyed(openai_args(&server, &dir, extra, "hi")).await;
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{extra:?}: {stderr}");
        assert!(String::from_utf8_lossy(&out.stdout).contains("Served by the backup."));
        assert_eq!(models_asked(&server), ["gpt-4o-mini", "backup-1"], "{extra:?}");
        assert!(stderr.contains("backup-1"), "the hop is reported: {stderr}");
    }
    // Without a chain the same failure ends the run.
    let server = FakeServer::start(vec![gone(), json_text("unused")]).await;
    let out = looprail_keyed(openai_args(&server, &dir, &[], "hi")).await;
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(models_asked(&server), ["gpt-4o-mini"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compaction_summaries_use_the_summary_model_from_the_flag_or_the_config_file() {
    let dir = temp_dir("summary-model");
    let compaction =
        "[compaction]\ncontext_window = 1000\nthreshold = 0.5\nkeep_verbatim = 2\ndeep_keep_verbatim = 1\n";
    std::fs::write(dir.join("flag.toml"), compaction).unwrap();
    std::fs::write(dir.join("file.toml"), format!("{compaction}[provider]\nsummary_model = \"small\"\n"))
        .unwrap();
    std::fs::write(dir.join("work/report.txt"), "Sales rose and costs fell in the quarter. ".repeat(60))
        .unwrap();
    let task = format!(
        "Read report.txt. Background: {}",
        "the quarterly report covers sales and costs. ".repeat(40)
    );
    for extra in [
        vec!["--config".to_owned(), dir.join("file.toml").display().to_string()],
        vec![
            "--config".to_owned(),
            dir.join("flag.toml").display().to_string(),
            "--summary-model".into(),
            "small".into(),
        ],
    ] {
        let server = FakeServer::start(vec![
            json_call("c1", "read_file", r#"{"path": "report.txt"}"#),
            json_text("The user asked what the quarterly report says."),
            json_text("Sales rose and costs fell."),
        ])
        .await;
        let out = looprail_keyed(openai_args(&server, &dir, &extra, &task)).await;
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{extra:?}: {stderr}");
        assert_eq!(models_asked(&server), ["gpt-4o-mini", "small", "gpt-4o-mini"], "{extra:?}: {stderr}");
        assert!(server.requests()[1].body.to_string().contains("Summarise the conversation"));
    }
}
