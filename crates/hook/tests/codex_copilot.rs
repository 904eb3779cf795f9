//! Codex CLI and GitHub Copilot CLI, pinned with event bodies recorded from the real CLIs
//! (Codex 0.169.0, Copilot CLI 1.0.102; fixtures/*_events.jsonl): each event reads as what it
//! is, a looping session gets every rung in the forms those CLIs accept, and the hooks land in
//! each agent's own file (`hooks.json` under `.codex` or `$CODEX_HOME`; `looprail.json` alone
//! in `.github/hooks` or `~/.copilot/hooks`).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use looprail_hook::agents::Agent;
use looprail_hook::event::{EventKind, HookEvent};
use looprail_hook::install::{Change, Scope, Target, apply, install, settings_path, uninstall};
use looprail_hook::respond::respond;
use looprail_hook::session::Hook;
use looprail_loop_core::profile::Profile;
use serde_json::{Value, json};

/// The recorded events of `agent`, by name.
fn recorded(agent: &str) -> Vec<Value> {
    let path = format!("{}/tests/fixtures/{agent}_events.jsonl", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(path).unwrap();
    text.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

fn named<'a>(events: &'a [Value], name: &str) -> &'a Value {
    events.iter().find(|e| e["hook_event_name"] == name).unwrap()
}

fn parse(agent: Agent, event: &Value) -> HookEvent {
    agent.parse(event.to_string().as_bytes()).unwrap()
}

#[test]
fn every_recorded_event_reads_as_what_it_is() {
    for (agent, name) in [(Agent::Codex, "codex"), (Agent::Copilot, "copilot")] {
        let events = recorded(name);
        let kinds: Vec<EventKind> = events.iter().map(|e| parse(agent, e).kind).collect();
        assert!(matches!(kinds[0], EventKind::SessionStart), "{name}");
        assert!(matches!(kinds[1], EventKind::UserPrompt), "{name}");
        let EventKind::BeforeTool(call) = &kinds[2] else { panic!("{name}: {:?}", kinds[2]) };
        assert_eq!(call.tool, "Bash");
        assert!(call.arguments.contains("No rule to make target"));
        let EventKind::AfterTool(_, output) = &kinds[3] else { panic!("{name}: {:?}", kinds[3]) };
        assert!(output.text.starts_with("make: *** No rule to make target") && !output.failed, "{output:?}");
        assert!(matches!(kinds[4], EventKind::Stop), "{name}");
    }
    let copilot = recorded("copilot");
    assert!(matches!(parse(Agent::Copilot, named(&copilot, "SessionEnd")).kind, EventKind::SessionEnd));
}

#[test]
fn copilots_camel_case_events_read_the_same() {
    let camel = |extra: Value| {
        let mut event = json!({"sessionId": "c1", "timestamp": 1_764_658_858_123_u64, "cwd": "/w"});
        event.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        parse(Agent::Copilot, &event).kind
    };
    let args = json!({"command": "make"}).to_string();
    assert!(matches!(camel(json!({"source": "new"})), EventKind::SessionStart));
    assert!(matches!(camel(json!({"prompt": "build it"})), EventKind::UserPrompt));
    assert!(matches!(camel(json!({"toolName": "bash", "toolArgs": args})), EventKind::BeforeTool(_)));
    let after = camel(json!({"toolName": "bash", "toolArgs": args,
        "toolResult": {"resultType": "failure", "textResultForLlm": "make: no"}}));
    assert!(matches!(after, EventKind::AfterTool(_, ref o) if o.failed && o.text == "make: no"), "{after:?}");
    let failed = camel(json!({"toolName": "bash", "toolArgs": args, "error": "spawn failed"}));
    assert!(matches!(failed, EventKind::AfterTool(_, ref o) if o.failed), "{failed:?}");
    assert!(matches!(camel(json!({"transcriptPath": "t", "stopReason": "end_turn"})), EventKind::Stop));
    assert!(matches!(camel(json!({"reason": "complete"})), EventKind::SessionEnd));
    let broken = Agent::Copilot.parse(br#"{"toolName": "bash"}"#);
    assert!(broken.is_err(), "no session: a typed error, not a guess");
}

/// A looping session's answers: the recorded call and its output, ten times.
fn loop_answers(agent: Agent, name: &str) -> Vec<(bool, Value)> {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("hooks.db");
    let hook = Hook::new(Profile::CodingAgent.config(), Default::default());
    let events = recorded(name);
    let send = |e: &Value| respond(agent, e.to_string().as_bytes(), &store, &hook, 1_700_000_000_000);
    send(named(&events, "SessionStart"));
    send(named(&events, "UserPromptSubmit"));
    let mut said = Vec::new();
    for _ in 0..10 {
        for (before, event) in [(true, named(&events, "PreToolUse")), (false, named(&events, "PostToolUse"))]
        {
            let answer = send(event);
            assert_eq!(answer.exit_code, 0, "{:?}", answer.stderr);
            if !answer.stdout.is_empty() {
                said.push((before, serde_json::from_str::<Value>(&answer.stdout).unwrap()));
            }
        }
    }
    said
}

#[test]
fn a_looping_codex_session_gets_only_answers_codex_accepts() {
    let said = loop_answers(Agent::Codex, "codex");
    // Codex refuses `ask` and `continue: false` before a call (the answer is then ignored).
    for (before, answer) in &said {
        if *before {
            assert_ne!(answer["hookSpecificOutput"]["permissionDecision"], "ask", "{answer}");
            assert!(answer.get("continue").is_none() && answer.get("stopReason").is_none(), "{answer}");
        }
        if answer.get("decision").is_some() {
            assert!(!*before, "a block decision only after a call or at a stop: {answer}");
        }
    }
    let first = |test: &dyn Fn(&(bool, Value)) -> bool| said.iter().position(test).expect("reached");
    let told = first(&|(_, a)| a["hookSpecificOutput"]["additionalContext"].is_string());
    let denied = first(&|(_, a)| a["hookSpecificOutput"]["permissionDecision"] == "deny");
    let asked = first(&|(_, a)| a["systemMessage"].as_str().is_some_and(|m| m.contains("Let it go on")));
    let stopped = first(&|(_, a)| {
        a["continue"] == false
            || a["hookSpecificOutput"]["permissionDecisionReason"]
                .as_str()
                .is_some_and(|r| r.contains("end your turn"))
    });
    assert!(told < denied && denied <= asked && asked < stopped, "{said:#?}");
}

#[test]
fn a_looping_copilot_session_gets_each_rung_in_copilots_terms() {
    let said = loop_answers(Agent::Copilot, "copilot");
    let first = |test: &dyn Fn(&(bool, Value)) -> bool| said.iter().position(test).expect("reached");
    // A remark after a call is appended to the tool's result; before one, it is context.
    let told = first(&|(before, a)| !*before && a["additionalContext"].is_string());
    let denied = first(&|(_, a)| a["permissionDecision"] == "deny");
    let asked = first(&|(_, a)| a["permissionDecision"] == "ask");
    let stopped =
        first(&|(_, a)| a["permissionDecisionReason"].as_str().is_some_and(|r| r.contains("end your turn")));
    assert!(told < denied && denied < asked && asked < stopped, "{said:#?}");
    assert!(
        said.iter()
            .all(|(_, a)| a.get("hookSpecificOutput").is_none_or(|h| h["additionalContext"].is_string()))
    );
}

#[test]
fn codex_hooks_go_into_hooks_json_of_codex_home() {
    let home = Scope::AgentHome("/home/me/.codex-work".into());
    assert_eq!(settings_path(Agent::Codex, &home), std::path::Path::new("/home/me/.codex-work/hooks.json"));
    let project = settings_path(Agent::Codex, &Scope::Project("/w".into()));
    assert_eq!(project, std::path::Path::new("/w/.codex/hooks.json"));
    let command = Target::Command("'/usr/bin/looprail' hook codex".into());
    let theirs = json!({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "./audit.sh"}]}]}});
    let with = install(&theirs, Agent::Codex, &command).unwrap();
    let events: Vec<&String> = with["hooks"].as_object().unwrap().keys().collect();
    assert_eq!(
        events,
        ["PostToolUse", "PreToolUse", "SessionStart", "Stop", "UserPromptSubmit"],
        "no events Codex lacks"
    );
    assert_eq!(with["hooks"]["PreToolUse"][1]["hooks"][0]["timeout"], 10, "seconds");
    assert_eq!(uninstall(&with, Agent::Codex).unwrap(), theirs);
    let http = Target::http("http://127.0.0.1:8787", None).unwrap();
    assert!(install(&theirs, Agent::Codex, &http).is_err(), "Codex runs command hooks");
}

#[test]
fn copilots_hook_file_is_looprails_own_and_goes_when_uninstalled() {
    let dir = tempfile::tempdir().unwrap();
    let project = Scope::Project(dir.path().to_owned());
    let path = settings_path(Agent::Copilot, &project);
    assert_eq!(path, dir.path().join(".github/hooks/looprail.json"));
    assert_eq!(
        settings_path(Agent::Copilot, &Scope::User("/home/me".into())),
        std::path::Path::new("/home/me/.copilot/hooks/looprail.json")
    );
    let command = Target::Command("'/usr/bin/looprail' hook copilot".into());
    assert_eq!(apply(&path, Agent::Copilot, &command, false).unwrap(), Change::Installed);
    assert_eq!(apply(&path, Agent::Copilot, &command, false).unwrap(), Change::Unchanged);
    let file: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(file["version"], 1);
    assert_eq!(
        file["hooks"]["PreToolUse"],
        json!([{"type": "command", "bash": "'/usr/bin/looprail' hook copilot", "timeoutSec": 10}])
    );
    assert_eq!(file["hooks"].as_object().unwrap().len(), 7);
    assert_eq!(apply(&path, Agent::Copilot, &command, true).unwrap(), Change::Removed);
    assert!(!path.exists(), "the file was looprail's alone");
    assert!(dir.path().join(".github/hooks").is_dir(), "the folder stays");
}
