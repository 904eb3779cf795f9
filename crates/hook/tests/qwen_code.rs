//! Qwen Code's hooks speak Claude Code's events and answers (its `PreToolUse`,
//! `PostToolUse`, `PostToolUseFailure`, `UserPromptSubmit`, `SessionStart`, `SessionEnd`, with
//! `hookSpecificOutput.permissionDecision` and `decision: "block"`), with its own tools
//! (`run_shell_command`), a `tool_response` object and a `timestamp` on every event. A looping
//! session is told, denied, asked about and stopped in those terms; its settings live in
//! `.qwen/settings.json`, with command timeouts in milliseconds.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use looprail_hook::agents::Agent;
use looprail_hook::event::EventKind;
use looprail_hook::install::{Scope, Target, install, settings_path};
use looprail_hook::respond::respond;
use looprail_hook::session::Hook;
use looprail_loop_core::profile::Profile;
use serde_json::{Value, json};

fn event(name: &str, extra: Value) -> Value {
    let mut event = json!({"session_id": "q1", "transcript_path": "/home/me/.qwen/tmp/q1.jsonl", "cwd": "/w",
        "hook_event_name": name, "timestamp": "2026-12-02T04:00:00.000Z", "permission_mode": "yolo"});
    event.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
    event
}

fn call(command: &str) -> Value {
    json!({"tool_name": "run_shell_command", "tool_input": {"command": command, "is_background": false},
        "tool_use_id": "toolu_q", "tool_call_id": "call_q"})
}

#[test]
fn a_looping_qwen_session_is_told_denied_asked_and_stopped() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("hooks.db");
    let hook = Hook::new(Profile::CodingAgent.config(), Default::default());
    let send =
        |e: Value| respond(Agent::QwenCode, e.to_string().as_bytes(), &store, &hook, 1_700_000_000_000);
    send(event("SessionStart", json!({"source": "startup", "model": "qwen3-coder-plus"})));
    send(event("UserPromptSubmit", json!({"prompt": "make the build pass"})));
    let mut said = Vec::new();
    for _ in 0..10 {
        let pre = send(event("PreToolUse", call("make")));
        let mut post = call("make");
        post["tool_response"] = json!({"llmContent": "make: *** No rule to make target 'all'.  Stop.", "returnDisplay": "exit 2"});
        let post = send(event("PostToolUse", post));
        for answer in [pre, post] {
            assert_eq!(answer.exit_code, 0, "{:?}", answer.stderr);
            if !answer.stdout.is_empty() {
                said.push(serde_json::from_str::<Value>(&answer.stdout).unwrap());
            }
        }
    }
    let first = |test: &dyn Fn(&Value) -> bool| said.iter().position(test).expect("this rung was reached");
    let told =
        first(&|a| a["decision"] == "block" && a["hookSpecificOutput"]["hookEventName"] == "PostToolUse");
    let denied =
        first(&|a| a["hookSpecificOutput"]["permissionDecision"] == "deny" && a.get("continue").is_none());
    let asked = first(&|a| a["hookSpecificOutput"]["permissionDecision"] == "ask");
    let stopped = first(&|a| a["continue"] == false);
    assert!(told < denied && denied < asked && asked < stopped, "{said:#?}");
    assert!(said[told]["reason"].as_str().unwrap().starts_with("[looprail]"));
}

#[test]
fn a_failed_call_reads_its_error() {
    let dir = tempfile::tempdir().unwrap();
    let hook = Hook::new(Profile::CodingAgent.config(), Default::default());
    let mut failed = call("cat missing.txt");
    failed["error"] = json!("cat: missing.txt: No such file or directory");
    let answer = respond(
        Agent::QwenCode,
        event("PostToolUseFailure", failed).to_string().as_bytes(),
        &dir.path().join("hooks.db"),
        &hook,
        0,
    );
    assert_eq!((answer.exit_code, answer.stdout.as_str()), (0, ""), "one failure says nothing");
}

#[test]
fn the_hooks_go_into_qwen_settings_with_millisecond_timeouts() {
    let path = settings_path(Agent::QwenCode, &Scope::Project("/w".into()));
    assert_eq!(path, std::path::Path::new("/w/.qwen/settings.json"));
    let command = Target::Command("'/usr/bin/looprail' hook qwen-code".into());
    let settings =
        install(&json!({"model": {"name": "qwen3-coder-plus"}}), Agent::QwenCode, &command).unwrap();
    let pre = &settings["hooks"]["PreToolUse"][0];
    assert_eq!(pre["matcher"], "*");
    assert_eq!(
        pre["hooks"][0],
        json!({"type": "command", "command": "'/usr/bin/looprail' hook qwen-code", "timeout": 10_000})
    );
    for event in ["PostToolUse", "PostToolUseFailure", "UserPromptSubmit", "SessionStart", "SessionEnd"] {
        assert!(settings["hooks"][event].is_array(), "{event}");
    }
    let http = Target::http("http://127.0.0.1:8787", Some("LOOPRAIL_GATEWAY_KEY".into())).unwrap();
    let settings = install(&settings, Agent::QwenCode, &http).unwrap();
    let entry = &settings["hooks"]["PostToolUse"][0]["hooks"][0];
    assert_eq!(entry["url"], "http://127.0.0.1:8787/v1/hooks/qwen-code");
    assert_eq!(entry["timeout"], 10, "seconds for HTTP hooks");
    assert_eq!(entry["headers"]["Authorization"], "Bearer ${LOOPRAIL_GATEWAY_KEY}");
}

#[test]
fn a_turn_going_on_is_no_new_prompt_and_the_echoed_command_is_no_output() {
    // Qwen Code sends `UserPromptSubmit` with an empty prompt each time a turn goes on after
    // its calls, and starts a shell result with the command it ran.
    let continuing = event("UserPromptSubmit", json!({"prompt": "", "prompt_id": "q1########0"}));
    let kind = Agent::QwenCode.parse(continuing.to_string().as_bytes()).unwrap().kind;
    assert!(matches!(kind, EventKind::Other(_)), "{kind:?}");
    let asked = event("UserPromptSubmit", json!({"prompt": "now the tests", "prompt_id": "q1########1"}));
    assert!(matches!(
        Agent::QwenCode.parse(asked.to_string().as_bytes()).unwrap().kind,
        EventKind::UserPrompt
    ));
    let outputs: Vec<String> = ["make", "make;"]
        .iter()
        .map(|command| {
            let mut post = call(command);
            post["tool_response"] = json!({"llmContent": format!("Command: {command}\nDirectory: (root)\nOutput: make: *** No targets.\nExit Code: 2"),
                "returnDisplay": "make: *** No targets."});
            match Agent::QwenCode.parse(event("PostToolUse", post).to_string().as_bytes()).unwrap().kind {
                EventKind::AfterTool(_, output) => output.text,
                other => panic!("{other:?}"),
            }
        })
        .collect();
    assert_eq!(outputs[0], outputs[1], "two spellings, one result");
    assert!(outputs[0].contains("Output: make: *** No targets."));
}
