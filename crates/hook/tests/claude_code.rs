//! Claude Code hook events fed to `respond`, with a real SQLite store: event bodies recorded
//! from Claude Code 2.1.330 (tests/fixtures), and bodies of the same shape made up for the
//! cases a recording cannot hold (issue 38).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use looprail_hook::agents::Agent;
use looprail_hook::event::Answer;
use looprail_hook::respond::{Response, respond};
use looprail_hook::session::Hook;
use looprail_loop_core::profile::Profile;
use serde_json::{Value, json};

fn hook() -> Hook {
    Hook::new(Profile::CodingAgent.config(), Default::default())
}

fn send(store: &Path, event: &Value) -> Response {
    respond(Agent::ClaudeCode, event.to_string().as_bytes(), store, &hook(), 1_700_000_000_000)
}

fn pre(session: &str, command: &str) -> Value {
    json!({"session_id": session, "transcript_path": "/t.jsonl", "cwd": "/w", "permission_mode": "default",
        "hook_event_name": "PreToolUse", "tool_name": "Bash",
        "tool_input": {"command": command, "description": "run it"}, "tool_use_id": "toolu_x"})
}

fn post(session: &str, command: &str, stdout: &str) -> Value {
    let mut event = pre(session, command);
    event["hook_event_name"] = json!("PostToolUse");
    event["tool_response"] = json!({"stdout": stdout, "stderr": "", "interrupted": false, "isImage": false, "noOutputExpected": false});
    event
}

fn fixture(name: &str) -> Vec<Value> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name);
    std::fs::read_to_string(path).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

fn kind(answer: &Answer) -> &'static str {
    match answer {
        Answer::Allow => "allow",
        Answer::Tell(_) => "tell",
        Answer::Deny(_) => "deny",
        Answer::Ask(_) => "ask",
        Answer::Stop(_) => "stop",
    }
}

#[test]
fn a_recorded_looping_session_is_nudged_told_denied_asked_and_stopped() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("hooks.db");
    let answers: Vec<(String, &'static str)> = fixture("claude_code_loop.jsonl")
        .iter()
        .map(|e| (e["hook_event_name"].as_str().unwrap().to_owned(), kind(&send(&store, e).answer)))
        .collect();
    let pairs: Vec<String> = answers.iter().map(|(e, a)| format!("{e}:{a}")).collect();
    assert_eq!(
        pairs,
        [
            "SessionStart:allow",
            "UserPromptSubmit:allow",
            "PreToolUse:allow",
            "PostToolUse:allow",
            "PreToolUse:allow",
            "PostToolUse:allow",
            "PreToolUse:allow",
            "PostToolUse:tell", // the nudge: the 3rd identical call with the same output
            "PreToolUse:allow",
            "PostToolUse:allow",
            "PreToolUse:allow",
            "PostToolUse:tell", // the directive
            "PreToolUse:deny",  // the 6th identical call
            "PreToolUse:ask",   // the user's permission prompt (denied by itself under -p)
            "PreToolUse:stop",
            "SessionEnd:allow",
        ]
    );
}

#[test]
fn the_answers_are_in_claude_codes_format() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("hooks.db");
    let mut outputs = Vec::new();
    for _ in 0..8 {
        outputs.push(send(&store, &pre("s", "make")).stdout);
        outputs.push(send(&store, &post("s", "make", "make: *** No rule to make target")).stdout);
    }
    let json = |text: &String| serde_json::from_str::<Value>(text).unwrap();
    assert!(outputs[0].is_empty() && outputs[1].is_empty(), "nothing to say: no output");
    let told = json(&outputs[5]);
    assert_eq!(told["decision"], "block", "the model reads the remark with the result");
    assert!(told["reason"].as_str().unwrap().starts_with("[looprail] "));
    assert_eq!(told["hookSpecificOutput"]["hookEventName"], "PostToolUse");
    let denied = json(&outputs[10]);
    assert_eq!(denied["hookSpecificOutput"]["permissionDecision"], "deny");
    assert!(denied["hookSpecificOutput"]["permissionDecisionReason"].as_str().unwrap().contains("Denied"));
    let asked = json(&outputs[12]);
    assert_eq!(asked["hookSpecificOutput"]["permissionDecision"], "ask");
    let stopped = json(&outputs[14]);
    assert_eq!(stopped["continue"], false);
    assert!(stopped["stopReason"].as_str().unwrap().starts_with("[looprail]"));
}

#[test]
fn the_same_call_with_the_same_output_ten_times_is_denied_by_the_sixth() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("hooks.db");
    let mut first_denial = None;
    for call in 1..=10 {
        let before = send(&store, &pre("s", "npm test"));
        if matches!(before.answer, Answer::Deny(_)) {
            first_denial.get_or_insert(call);
            continue; // a denied call does not run
        }
        if matches!(before.answer, Answer::Stop(_)) {
            break;
        }
        send(&store, &post("s", "npm test", "1 failing"));
    }
    assert!(first_denial.is_some_and(|c| c <= 6), "denied at call {first_denial:?}");
}

#[test]
fn distinct_calls_are_always_allowed_and_sessions_stay_apart() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("hooks.db");
    for call in 0..100 {
        // Session a works; session b loops, interleaved with it.
        let command = format!("sed -n {call}p src/lib.rs");
        assert_eq!(send(&store, &pre("a", &command)).answer, Answer::Allow);
        assert_eq!(send(&store, &post("a", &command, &format!("line {call}"))).answer, Answer::Allow);
        if call < 5 {
            send(&store, &pre("b", "make"));
            send(&store, &post("b", "make", "error"));
        }
    }
    assert!(matches!(send(&store, &pre("b", "make")).answer, Answer::Deny(_)), "b is denied on its own");
}

#[test]
fn a_new_prompt_starts_a_new_stretch() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("hooks.db");
    for _ in 0..5 {
        send(&store, &pre("s", "make"));
        send(&store, &post("s", "make", "error"));
    }
    assert!(matches!(send(&store, &pre("s", "make")).answer, Answer::Deny(_)));
    let prompt = json!({"session_id": "s", "hook_event_name": "UserPromptSubmit", "prompt": "I fixed the Makefile, try again"});
    assert_eq!(send(&store, &prompt).answer, Answer::Allow);
    assert_eq!(send(&store, &pre("s", "make")).answer, Answer::Allow, "the user's word starts afresh");
}

#[test]
fn recorded_failures_are_read_as_failed_calls() {
    let events = fixture("claude_code_failures.jsonl");
    let failures: Vec<_> = events.iter().filter(|e| e["hook_event_name"] == "PostToolUseFailure").collect();
    assert_eq!(failures.len(), 2);
    for event in failures {
        let parsed = looprail_hook::agents::claude_code::parse(event.to_string().as_bytes()).unwrap();
        let looprail_hook::event::EventKind::AfterTool(_, output) = parsed.kind else { panic!("{parsed:?}") };
        assert!(output.failed && output.text.starts_with("Exit code"), "{output:?}");
    }
}

#[test]
fn looprails_own_trouble_lets_the_call_go_on_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    // Not JSON.
    let response = respond(Agent::ClaudeCode, b"{not json", &dir.path().join("h.db"), &hook(), 0);
    assert_eq!((response.exit_code, response.stdout.as_str(), &response.answer), (1, "", &Answer::Allow));
    let line = response.stderr.unwrap();
    assert!(line.starts_with("looprail hook:") && !line.contains('\n'), "{line}");
    // A store that cannot be opened (its path is a directory).
    let response = send(dir.path(), &pre("s", "ls"));
    assert_eq!((response.exit_code, &response.answer), (1, &Answer::Allow));
    assert!(response.stderr.unwrap().contains("session store"));
}

#[test]
fn a_store_file_that_is_no_database_is_moved_aside_and_the_store_starts_afresh() {
    let dir = tempfile::tempdir().unwrap();
    let junk = dir.path().join("hooks.db");
    let text = "not a database at all, not even close to one".repeat(100);
    std::fs::write(&junk, &text).unwrap();
    let response = send(&junk, &pre("s", "ls"));
    assert_eq!((response.exit_code, &response.answer), (0, &Answer::Allow));
    let note = response.stderr.unwrap();
    assert!(note.contains("moved aside"), "{note}");
    let aside: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().contains("unreadable"))
        .collect();
    assert_eq!(aside.len(), 1);
    assert_eq!(std::fs::read_to_string(&aside[0]).unwrap(), text, "nothing lost");
    assert_eq!(send(&junk, &pre("s", "ls")).stderr, None, "the fresh store works");
}

#[test]
fn a_store_damaged_past_its_first_page_is_moved_aside_when_a_session_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("hooks.db");
    for n in 0..200 {
        send(&store, &post(&format!("session-{n}"), "ls", &"file.txt\n".repeat(20)));
    }
    // Everything in the main file, then every page after the schema's overwritten: the store
    // opens, and the damage shows only when a session is looked up.
    let conn = rusqlite::Connection::open(&store).unwrap();
    conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE);").unwrap();
    let page: i64 = conn.query_row("PRAGMA page_size", [], |row| row.get(0)).unwrap();
    let page = usize::try_from(page).unwrap();
    drop(conn);
    let mut bytes = std::fs::read(&store).unwrap();
    assert!(bytes.len() > 4 * page, "the table spans pages");
    bytes[page..].iter_mut().for_each(|b| *b = 0xA5);
    std::fs::write(&store, &bytes).unwrap();

    let response = send(&store, &pre("session-7", "ls"));
    assert_eq!((response.exit_code, &response.answer), (0, &Answer::Allow), "{:?}", response.stderr);
    assert!(response.stderr.unwrap().contains("moved aside"));
    assert!(
        std::fs::read_dir(dir.path()).unwrap().any(|e| e
            .unwrap()
            .path()
            .to_string_lossy()
            .contains("unreadable")),
        "the damaged file is kept"
    );
    assert_eq!(send(&store, &pre("session-7", "ls")).stderr, None, "the fresh store works");
}

#[test]
fn a_session_whose_stored_state_does_not_read_starts_afresh_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("hooks.db");
    send(&store, &post("s", "ls", "a.txt"));
    let conn = rusqlite::Connection::open(&store).unwrap();
    conn.execute("UPDATE hook_sessions SET state = '{\"counters\": \"many\"}'", []).unwrap();
    drop(conn);
    let response = send(&store, &pre("s", "ls"));
    assert_eq!(response.exit_code, 0);
    let note = response.stderr.unwrap();
    assert!(note.contains("session s") && note.contains("starts afresh"), "{note}");
    assert_eq!(send(&store, &pre("s", "ls")).stderr, None, "stored whole again");
}

#[test]
fn hooks_on_eight_threads_at_once_lose_no_update() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("hooks.db");
    std::thread::scope(|scope| {
        for thread in 0..8 {
            let store = &store;
            scope.spawn(move || {
                for call in 0..20 {
                    let command = format!("echo {thread}-{call}");
                    let response = send(store, &post("shared", &command, &command));
                    assert_eq!(response.exit_code, 0, "{:?}", response.stderr);
                }
            });
        }
    });
    let conn = rusqlite_count(&store);
    assert_eq!(conn, 160, "every call of every thread counted");
}

/// The tool calls the store holds for session `shared`.
fn rusqlite_count(store: &Path) -> u64 {
    let mut sessions = looprail_hook::store::SessionStore::open(store).unwrap();
    sessions.with_session("claude-code", "shared", 0, |state| u64::from(state.counters.tool_calls)).unwrap()
}

#[test]
fn ending_a_turn_with_open_todo_items_is_sent_back_at_most_three_times_a_stretch() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("hooks.db");
    let stop = || json!({"session_id": "t", "hook_event_name": "Stop", "stop_hook_active": false, "cwd": "/w", "transcript_path": "/t.jsonl"});
    let todo_write = |statuses: [&str; 2]| {
        let mut event = post("t", "", "Todos have been modified successfully.");
        event["tool_name"] = json!("TodoWrite");
        event["tool_input"] = json!({"todos": [
            {"content": "write the test", "status": statuses[0], "activeForm": "Writing the test"},
            {"content": "fix the parser", "status": statuses[1], "activeForm": "Fixing the parser"}]});
        event
    };
    send(&store, &json!({"session_id": "t", "hook_event_name": "UserPromptSubmit", "prompt": "fix it"}));
    assert_eq!(send(&store, &stop()).stdout, "", "no list, nothing to say");
    send(&store, &todo_write(["completed", "in_progress"]));
    for _ in 0..3 {
        let answer: Value = serde_json::from_str(&send(&store, &stop()).stdout).unwrap();
        assert_eq!(answer["decision"], "block");
        let reason = answer["reason"].as_str().unwrap();
        assert!(reason.contains("1 open item(s)") && reason.contains("- fix the parser"), "{reason}");
    }
    assert_eq!(send(&store, &stop()).stdout, "", "the fourth time the turn ends");
    // A new prompt is a new stretch; a list with nothing open says nothing.
    send(&store, &json!({"session_id": "t", "hook_event_name": "UserPromptSubmit", "prompt": "go on"}));
    assert!(send(&store, &stop()).stdout.contains("block"));
    send(&store, &todo_write(["completed", "completed"]));
    assert_eq!(send(&store, &stop()).stdout, "");
}

#[test]
fn a_loop_of_two_spellings_is_stopped_once_it_goes_on_after_the_user_was_asked() {
    // No call repeats exactly (so none is ever denied), yet every one fails the same way; the
    // user's answer restarts the guards, and the loop seen again ends the stretch.
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("hooks.db");
    let mut said = Vec::new();
    for n in 0..30 {
        let command = ["make", "make all"][n % 2];
        let before = send(&store, &pre("alt", command)).answer;
        said.push(kind(&before));
        if matches!(before, Answer::Stop(_)) {
            break;
        }
        if !matches!(before, Answer::Ask(_)) {
            said.push(kind(&send(&store, &post("alt", command, "make: *** No rule to make target")).answer));
        }
    }
    let asked = said.iter().position(|k| *k == "ask").expect("the user was asked");
    let stopped = said.iter().position(|k| *k == "stop").expect("then stopped");
    assert!(said[..asked].contains(&"tell"), "told before: {said:?}");
    assert!(!said.contains(&"deny"), "no exact repeat to deny: {said:?}");
    assert!(stopped - asked <= 12, "stopped within six calls of the question: {said:?}");
}
