//! Gemini CLI hook events (bodies of the shape its hooks reference documents: `BeforeTool`,
//! `AfterTool` with `tool_response.llmContent`, `BeforeAgent`) fed to `respond` with a real
//! SQLite store, and the answers in Gemini CLI's format (issue 38).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use looprail_hook::agents::Agent;
use looprail_hook::event::Answer;
use looprail_hook::respond::{Response, respond};
use looprail_hook::session::Hook;
use looprail_loop_core::profile::Profile;
use serde_json::{Value, json};

fn send(store: &Path, event: &Value) -> Response {
    let hook = Hook::new(Profile::CodingAgent.config(), Default::default());
    respond(Agent::GeminiCli, event.to_string().as_bytes(), store, &hook, 1_700_000_000_000)
}

fn before(session: &str, command: &str) -> Value {
    json!({"session_id": session, "transcript_path": "/home/u/.gemini/tmp/chats/session.json", "cwd": "/w",
        "hook_event_name": "BeforeTool", "timestamp": "2026-11-25T10:00:00.000Z",
        "tool_name": "run_shell_command", "tool_input": {"command": command, "description": "Build"}})
}

fn after(session: &str, command: &str, output: &str, error: Option<&str>) -> Value {
    let mut event = before(session, command);
    event["hook_event_name"] = json!("AfterTool");
    event["tool_response"] = json!({"llmContent": output, "returnDisplay": output, "error": error});
    event
}

fn json_of(response: &Response) -> Value {
    assert_eq!(response.exit_code, 0, "{:?}", response.stderr);
    serde_json::from_str(&response.stdout).unwrap()
}

#[test]
fn a_looping_shell_call_is_told_denied_and_stopped_in_gemini_clis_terms() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("hooks.db");
    let start =
        json!({"session_id": "g", "hook_event_name": "BeforeAgent", "timestamp": "t", "prompt": "build it"});
    assert_eq!(json_of(&send(&store, &start)), json!({}), "nothing to say is an empty object");
    let mut told = Vec::new();
    for _ in 0..5 {
        assert_eq!(json_of(&send(&store, &before("g", "make"))), json!({}));
        let answer =
            json_of(&send(&store, &after("g", "make", "make: *** No targets.", Some("exit code 2"))));
        if let Some(text) = answer.pointer("/hookSpecificOutput/additionalContext") {
            told.push(text.as_str().unwrap().to_owned());
        }
    }
    assert_eq!(told.len(), 2, "a nudge and a directive, appended to the tool's result: {told:?}");
    assert!(told.iter().all(|t| t.starts_with("[looprail] ")));
    let denied = json_of(&send(&store, &before("g", "make")));
    assert_eq!(denied["decision"], "deny");
    assert!(denied["reason"].as_str().unwrap().contains("Denied"));
    // No permission prompt in Gemini CLI's hooks: the user reads the question, the model is
    // told to ask.
    let asked = json_of(&send(&store, &before("g", "make")));
    assert_eq!(asked["decision"], "deny");
    assert!(asked["systemMessage"].as_str().unwrap().contains("stuck in a loop"));
    let stopped = json_of(&send(&store, &before("g", "make")));
    assert_eq!(stopped["continue"], false);
    assert!(stopped["stopReason"].as_str().unwrap().starts_with("[looprail]"));
}

#[test]
fn distinct_calls_get_empty_answers() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("hooks.db");
    for call in 0..60 {
        let command = format!("grep -n fn src/file_{call}.rs");
        assert_eq!(send(&store, &before("g", &command)).answer, Answer::Allow);
        assert_eq!(
            send(&store, &after("g", &command, &format!("{call}: fn x()"), None)).answer,
            Answer::Allow
        );
    }
}

#[test]
fn an_after_tool_error_is_a_failed_call() {
    let event = after("g", "make", "", Some("Command failed: exit code 2"));
    let parsed = looprail_hook::agents::gemini_cli::parse(event.to_string().as_bytes()).unwrap();
    let looprail_hook::event::EventKind::AfterTool(call, output) = parsed.kind else { panic!() };
    assert_eq!(call.tool, "run_shell_command");
    assert!(output.failed);
}

#[test]
fn a_broken_event_fails_open_with_an_empty_object() {
    let dir = tempfile::tempdir().unwrap();
    let hook = Hook::new(Profile::CodingAgent.config(), Default::default());
    let response = respond(
        Agent::GeminiCli,
        br#"{"hook_event_name": "BeforeTool"}"#,
        &dir.path().join("h.db"),
        &hook,
        0,
    );
    assert_eq!((response.exit_code, response.stdout.as_str()), (1, "{}"));
    assert!(response.stderr.unwrap().contains("session_id"));
}
