//! The hook's invariants, over generated sessions and settings files.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use looprail_hook::agents::Agent;
use looprail_hook::event::{Answer, EventKind, ToolOutput, ToolUse};
use looprail_hook::install::{Target, install, uninstall};
use looprail_hook::respond::respond;
use looprail_hook::session::{Hook, SessionState};
use looprail_loop_core::profile::Profile;
use proptest::prelude::*;
use serde_json::{Value, json};

fn hook() -> Hook {
    Hook::new(Profile::CodingAgent.config(), Default::default())
}

fn call(command: &str) -> ToolUse {
    ToolUse { tool: "Bash".into(), arguments: json!({"command": command}).to_string(), id: None }
}

/// A session's calls: commands and outputs from small alphabets, so repeats happen.
fn session() -> impl Strategy<Value = Vec<(u8, u8)>> {
    prop::collection::vec((0u8..4, 0u8..3), 1..40)
}

fn event(name: &str, session: &str, (command, output): (u8, u8)) -> Vec<u8> {
    json!({"session_id": session, "hook_event_name": name, "tool_name": "Bash",
        "tool_input": {"command": format!("cmd {command}")},
        "tool_response": {"stdout": format!("out {output}"), "stderr": ""}})
    .to_string()
    .into_bytes()
}

/// The answers a session gets, its events sent through `send` (before and after each call,
/// the after skipped when the before did not let the call run).
fn answers(calls: &[(u8, u8)], mut send: impl FnMut(&str, (u8, u8)) -> Answer) -> Vec<Answer> {
    let mut out = Vec::new();
    for &c in calls {
        let before = send("PreToolUse", c);
        let ran = before == Answer::Allow;
        out.push(before);
        if ran {
            out.push(send("PostToolUse", c));
        }
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Two sessions interleaved in one store get exactly the answers each gets alone.
    #[test]
    fn sessions_in_one_store_never_touch_each_other(a in session(), b in session(), order in prop::collection::vec(any::<bool>(), 80)) {
        let dir = tempfile::tempdir().unwrap();
        let hook = hook();
        let alone = |calls: &[(u8, u8)], name: &str| {
            let store = dir.path().join(format!("alone-{name}.db"));
            answers(calls, |kind, c| respond(Agent::ClaudeCode, &event(kind, name, c), &store, &hook, 0).answer)
        };
        let (alone_a, alone_b) = (alone(&a, "a"), alone(&b, "b"));
        // Interleaved: each step sends the next event of one session or the other.
        let store = dir.path().join("shared.db");
        let send = |name: &str, kind: &str, c| respond(Agent::ClaudeCode, &event(kind, name, c), &store, &hook, 0).answer;
        let (mut got_a, mut got_b) = (Vec::new(), Vec::new());
        let (mut ia, mut ib, mut pending_a, mut pending_b) = (0, 0, false, false);
        let mut turn = order.iter().cycle();
        while ia < a.len() || ib < b.len() || pending_a || pending_b {
            let pick_a = (ia < a.len() || pending_a) && (!(ib < b.len() || pending_b) || *turn.next().unwrap());
            let (calls, i, pending, got, name) = if pick_a {
                (&a, &mut ia, &mut pending_a, &mut got_a, "a")
            } else {
                (&b, &mut ib, &mut pending_b, &mut got_b, "b")
            };
            if *pending {
                got.push(send(name, "PostToolUse", calls[*i - 1]));
                *pending = false;
            } else {
                let answer = send(name, "PreToolUse", calls[*i]);
                *pending = answer == Answer::Allow;
                got.push(answer);
                *i += 1;
            }
        }
        prop_assert_eq!(got_a, alone_a);
        prop_assert_eq!(got_b, alone_b);
    }

    /// A session whose every call and every output is new is never told, denied, asked or
    /// stopped.
    #[test]
    fn a_session_of_new_calls_and_outputs_is_left_alone(n in 1usize..150, seed in any::<u64>()) {
        let hook = hook();
        let mut state = SessionState::default();
        for i in 0..n {
            let tool = call(&format!("step {seed} {i}"));
            prop_assert_eq!(hook.handle(&mut state, &EventKind::BeforeTool(tool.clone()), 0), Answer::Allow);
            let output = ToolOutput { text: format!("result {i} of {seed}"), failed: false };
            prop_assert_eq!(hook.handle(&mut state, &EventKind::AfterTool(tool, output), 0), Answer::Allow);
        }
    }

    /// Installing is idempotent, and uninstalling gives back the user's settings whatever they
    /// hold.
    #[test]
    fn install_then_uninstall_gives_back_the_users_settings(
        settings in user_settings(),
        gemini in any::<bool>(),
        http in any::<bool>(),
    ) {
        let agent = if gemini { Agent::GeminiCli } else { Agent::ClaudeCode };
        // Gemini CLI runs command hooks only; Claude Code either kind.
        let command = match http && !gemini {
            true => Target::http("http://127.0.0.1:8787", Some("LOOPRAIL_GATEWAY_KEY".into())).unwrap(),
            false => Target::Command(format!("'/opt/looprail' hook {}", agent.name())),
        };
        let once = install(&settings, agent, &command).unwrap();
        prop_assert_eq!(&install(&once, agent, &command).unwrap(), &once);
        let mut back = uninstall(&once, agent).unwrap();
        if gemini && settings.get("hooksConfig").is_none() {
            // The one key installing adds beside the hooks: Gemini CLI runs none without it.
            back.as_object_mut().unwrap().remove("hooksConfig");
        }
        prop_assert_eq!(back, settings);
    }
}

/// Settings a user may have: other keys, and hooks of their own on the events looprail uses.
fn user_settings() -> impl Strategy<Value = Value> {
    let hook = "[a-z./]{1,12}".prop_map(|c| json!({"type": "command", "command": c}));
    let group =
        (prop::option::of("[A-Za-z*|]{1,8}"), prop::collection::vec(hook, 1..3)).prop_map(|(m, hooks)| {
            let mut group = json!({"hooks": hooks});
            if let Some(m) = m {
                group["matcher"] = json!(m);
            }
            group
        });
    let events = prop::collection::btree_map(
        prop::sample::select(vec![
            "PreToolUse",
            "PostToolUse",
            "Stop",
            "BeforeTool",
            "AfterTool",
            "Notification",
        ]),
        prop::collection::vec(group, 1..3),
        0..4,
    );
    (events, any::<bool>(), prop::option::of("[a-z]{1,8}")).prop_map(|(events, vim, model)| {
        let mut settings = json!({});
        if !events.is_empty() {
            settings["hooks"] = json!(events);
        }
        if vim {
            settings["general"] = json!({"vimMode": true});
        }
        if let Some(model) = model {
            settings["model"] = json!(model);
        }
        settings
    })
}
