//! Conformance cases in the style of the best peers (issue 5), through the public API.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use looprail_guardrails::signature::{CallSignature, OutputLines, observation_fingerprint};
use looprail_guardrails::{
    ConsecutiveSteps, CycleDetector, Detector, ErrorStreak, FLAG_LOOP_DETECTED, GuardrailsConfig, Level,
    LoopGuard, Observed, RepeatAction, RepeatCounter, RepeatCounterConfig, SameObservation, default_stack,
};
use looprail_loop_core::config::LoopConfig;
use looprail_loop_core::guard::{Counters, Decision, TurnView};
use looprail_loop_core::prelude::*;
use looprail_loop_core::testkit::{RecordingTool, ScriptedProvider};

fn observed<'a>(index: u64, tool: &'a str, args: &str, output: &str, lines: &'a OutputLines) -> Observed<'a> {
    Observed {
        index,
        tool,
        signature: CallSignature::of(tool, args),
        observation: observation_fingerprint(output),
        lines,
        is_error: false,
        waiting: false,
    }
}

async fn drive(
    config: LoopConfig,
    provider: ScriptedProvider,
    tools: ToolSet,
    guards: Vec<Box<dyn Guard>>,
) -> (Outcome, Run, Vec<Event>) {
    let mut builder = Run::builder(config).user("go").tools(tools.definitions());
    for guard in guards {
        builder = builder.boxed_guard(guard);
    }
    let mut run = builder.build().unwrap();
    let (sink, mut rx) = EventSink::channel();
    let outcome = Driver::new(Arc::new(provider), tools).with_events(sink).drive(&mut run).await.unwrap();
    let mut events = Vec::new();
    while let Ok(e) = rx.try_recv() {
        events.push(e);
    }
    (outcome, run, events)
}

#[tokio::test]
async fn the_4th_identical_call_is_blocked_with_limit_3_hint() {
    let tool = RecordingTool::new("fetch").idempotent(true).output("page");
    let tools = ToolSet::new().with(tool.clone());
    let mut provider = ScriptedProvider::new("m");
    for _ in 0..4 {
        provider = provider.call_tool("fetch", r#"{"url": "a", "page": 1}"#);
    }
    let provider = provider.reply_text("done");
    let counter =
        RepeatCounter::new(RepeatCounterConfig { max_repeats: 3, ..RepeatCounterConfig::default() }, vec![]);
    let (outcome, run, events) = drive(LoopConfig::default(), provider, tools, vec![Box::new(counter)]).await;
    assert_eq!(outcome.final_text, "done");
    assert_eq!(tool.call_count(), 3, "the 4th call was not run");
    let last = run.messages().iter().flat_map(Message::tool_results).last().unwrap();
    assert_eq!(last.flag.as_deref(), Some(FLAG_LOOP_DETECTED));
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::LoopDetected { level, call_index: 3, .. } if level == "hint"))
    );
}

#[tokio::test]
async fn abort_stops_with_tool_arguments_and_count() {
    let tools = ToolSet::new().with(RecordingTool::new("fetch"));
    let mut provider = ScriptedProvider::new("m");
    for _ in 0..5 {
        // Key order differs: still one counter (B1).
        provider = provider
            .call_tool("fetch", r#"{"page": 1, "url": "a"}"#)
            .call_tool("fetch", r#"{"url":"a","page":1}"#);
    }
    let counter = RepeatCounter::new(
        RepeatCounterConfig { max_repeats: 3, action: RepeatAction::Abort, ..RepeatCounterConfig::default() },
        vec![],
    );
    let (outcome, _, _) = drive(LoopConfig::default(), provider, tools, vec![Box::new(counter)]).await;
    assert_eq!(outcome.state, RunState::Error);
    let StopCause::LoopDetected { evidence: Some(evidence), .. } = &outcome.stop else {
        panic!("{:?}", outcome.stop)
    };
    assert_eq!(evidence.tool, "fetch");
    assert_eq!(evidence.arguments, r#"{"page":1,"url":"a"}"#);
    assert_eq!(evidence.count, 4);
    assert!(!outcome.final_text.is_empty(), "a fallback reply is still produced");
}

#[tokio::test]
async fn a_different_call_in_between_resets_the_consecutive_counter() {
    let tools = ToolSet::new().with(RecordingTool::new("a")).with(RecordingTool::new("b"));
    let provider = ScriptedProvider::new("m")
        .call_tool("a", "{}")
        .call_tool("a", "{}")
        .call_tool("b", "{}")
        .call_tool("a", "{}")
        .call_tool("a", "{}")
        .reply_text("fine");
    let (outcome, _, _) = drive(
        LoopConfig::default(),
        provider,
        tools.clone(),
        vec![Box::new(ConsecutiveSteps::new(3).unwrap())],
    )
    .await;
    assert_eq!(outcome.final_text, "fine");

    let provider = ScriptedProvider::new("m")
        .call_tool("a", "{}")
        .call_tool("a", "{}")
        .call_tool("a", "{}")
        .reply_text("never");
    let a = RecordingTool::new("a");
    let tools = ToolSet::new().with(a.clone());
    let (outcome, run, _) =
        drive(LoopConfig::default(), provider, tools, vec![Box::new(ConsecutiveSteps::new(3).unwrap())])
            .await;
    assert!(
        matches!(outcome.stop, StopCause::LoopDetected { ref detector, .. } if detector == "consecutive_steps")
    );
    assert_eq!(a.call_count(), 2, "the third identical step was stopped before it ran");
    let unanswered = run
        .messages()
        .iter()
        .flat_map(Message::tool_results)
        .filter(|r| r.flag.as_deref() == Some("not-executed"))
        .count();
    assert_eq!(unanswered, 1, "the stopped call got a result so the history stays valid");
}

fn view<'a>(counters: &'a Counters, config: &'a LoopConfig) -> TurnView<'a> {
    TurnView { counters, messages: &[], config, elapsed: Default::default() }
}

fn result(ok: bool) -> ToolResult {
    if ok { ToolResult::ok("c", "fine") } else { ToolResult::error("c", "Error: failed") }
}

fn reflections(guard: &mut ErrorStreak, outcomes: &[bool]) -> usize {
    reflections_on(guard, outcomes, |_| "Error: failed".to_owned())
}

fn reflections_on(guard: &mut ErrorStreak, outcomes: &[bool], error: impl Fn(usize) -> String) -> usize {
    let (counters, config) = (Counters::default(), LoopConfig::default());
    let call = ToolCall::new("c", "t", "{}");
    outcomes
        .iter()
        .enumerate()
        .map(|(i, ok)| {
            let result = if *ok { result(true) } else { ToolResult::error("c", error(i)) };
            guard.after_tools(&view(&counters, &config), std::slice::from_ref(&call), &[result]).len()
        })
        .filter(|n| *n > 0)
        .count()
}

#[test]
fn three_errors_reflect_and_a_success_resets_the_streak() {
    let mut guard = ErrorStreak::new(3).unwrap();
    assert_eq!(reflections(&mut guard, &[false, false, false]), 1);
    assert_eq!(reflections(&mut guard, &[true, false, false]), 0, "the success reset the streak");
    assert_eq!(reflections(&mut guard, &[false]), 1);
    guard.on_user_turn();
    assert_eq!(reflections(&mut guard, &[false, false]), 0);
}

#[test]
fn the_default_reflection_needs_a_repeated_error_in_the_streak() {
    let mut guard = ErrorStreak::repeats_only(3).unwrap();
    let distinct = |i: usize| {
        ["No such file", "Parameter `old_str` is required", "File already exists"][i % 3].to_owned()
    };
    assert_eq!(
        reflections_on(&mut guard, &[false, false, false], distinct),
        0,
        "three different failures: exploring"
    );
    assert_eq!(
        reflections_on(&mut guard, &[false], |_| "No such file".to_owned()),
        1,
        "the same failure again"
    );
    let mut guard = ErrorStreak::repeats_only(3).unwrap();
    assert_eq!(reflections(&mut guard, &[false, false]), 0, "a repeat, but the streak is short");
    assert_eq!(reflections(&mut guard, &[false]), 1);
    assert_eq!(reflections(&mut guard, &[false, false]), 0, "the next reflection needs a full streak again");
}

fn thrash_verdicts(calls: &[(&str, &str)]) -> Vec<Option<&'static str>> {
    let mut detector = looprail_guardrails::ThrashWindow::new(6, 3, 4, Level::AskHuman);
    calls
        .iter()
        .enumerate()
        .map(|(i, (tool, args))| {
            detector.observe(&observed(i as u64, tool, args, "out", &OutputLines::of("out"))).map(|d| d.tier)
        })
        .collect()
}

#[test]
fn thrash_windows_fire_exactly_at_their_edges() {
    let a = ("grep", r#"{"q": "a"}"#);
    let other = |n: &'static str| ("ls", n);
    // 3 identical in the last 6: the 1st A is the 6th call back.
    let hit = thrash_verdicts(&[other("1"), a, other("2"), other("3"), a, other("4"), a]);
    assert_eq!(hit.last(), Some(&Some("identical")));
    // One call further apart: the 1st A has left the window.
    let miss = thrash_verdicts(&[a, other("2"), other("3"), other("4"), a, other("5"), a]);
    assert_eq!(miss.last(), Some(&None));
    // 4 calls of one tool with differing arguments in the last 6: pattern thrash.
    let t = |n: &'static str| ("edit", n);
    let hit = thrash_verdicts(&[t("1"), t("2"), other("x"), t("3"), other("y"), t("4")]);
    assert_eq!(hit.last(), Some(&Some("pattern")));
    let miss = thrash_verdicts(&[t("1"), other("x"), t("2"), other("y"), t("3"), other("z"), t("4")]);
    assert_eq!(miss.last(), Some(&None), "only 3 of the last 6");
}

fn novelty_levels(calls: &[(&str, &str, &str)]) -> Vec<(u64, String)> {
    let config = LoopConfig::default();
    let counters = Counters::default();
    let mut guard = LoopGuard::new(&GuardrailsConfig::default());
    let mut levels = Vec::new();
    for (i, (tool, args, output)) in calls.iter().enumerate() {
        let call = ToolCall::new(format!("c{i}"), *tool, *args);
        let result = ToolResult::ok(format!("c{i}"), *output);
        for d in guard.after_tools(&view(&counters, &config), &[call], &[result]) {
            if let Decision::Emit(Event::LoopDetected { call_index, level, .. }) = d {
                levels.push((call_index, level));
            }
        }
    }
    levels
}

#[test]
fn edit_then_rerun_the_same_test_is_progress_even_with_the_same_failure() {
    let mut calls = Vec::new();
    let edits: Vec<String> =
        (0..15).map(|i| format!(r#"{{"command": "str_replace", "new_str": "attempt {i}"}}"#)).collect();
    for edit in &edits {
        calls.push(("editor", edit.as_str(), "The file was edited."));
        calls.push(("bash", r#"{"command": "pytest tests/test_x.py"}"#, "1 failed, 20 passed in 0.31s"));
    }
    assert_eq!(novelty_levels(&calls), [], "every edit is new: nothing to detect");
}

#[test]
fn a_poll_whose_output_grows_with_new_lines_is_never_flagged() {
    let modules = ["core", "net", "io", "json", "http", "tls", "cli", "db", "cache", "auth"];
    let logs: Vec<String> = (1..40)
        .map(|n| {
            (0..n)
                .map(|i| format!("building module {}-{}\n", modules[i % 10], modules[i / 10 % 10]))
                .collect()
        })
        .collect();
    let mut calls = Vec::new();
    for log in &logs {
        calls.push(("bash", r#"{"command": "sleep 30"}"#, ""));
        calls.push(("BashOutput", r#"{"bash_id": "b1"}"#, log.as_str()));
    }
    assert_eq!(novelty_levels(&calls), []);
}

#[test]
fn a_poll_that_only_adds_the_same_line_is_waiting_a_nudge_at_most() {
    // Issue 33: a wait is ended by the wall clock, never by the ladder's ask_human.
    let logs: Vec<String> = (1..40).map(|n| "still running\n".repeat(n)).collect();
    let mut calls = Vec::new();
    for log in &logs {
        calls.push(("bash", r#"{"command": "sleep 30"}"#, ""));
        calls.push(("BashOutput", r#"{"bash_id": "b1"}"#, log.as_str()));
    }
    let levels = novelty_levels(&calls);
    assert!(!levels.is_empty(), "a wait that moves nothing is noticed");
    assert!(levels.iter().all(|(_, level)| level == "nudge"), "{levels:?}");
    // The same command with the same output, not a poll: a loop, handed to a human.
    let calls = [("bash", r#"{"command": "cat build.log"}"#, "still running"); 8];
    assert!(novelty_levels(&calls).iter().any(|(_, level)| level == "ask_human"));
}

#[test]
fn the_same_call_with_the_same_result_climbs_at_the_3rd_5th_and_7th_call() {
    let calls =
        [("editor", r#"{"command": "create", "path": "t.py"}"#, "ERROR: Parameter `file_text` is required");
            8];
    let levels = novelty_levels(&calls);
    let expected = [(2, "nudge"), (4, "directive"), (6, "ask_human")];
    assert_eq!(levels, expected.map(|(i, l)| (i, l.to_owned())));
    // A short detour does not restart the count: the loop that comes back continues where it
    // stopped (the 3rd pytest after the look at a.py is its 7th stale call overall).
    let mut calls = vec![("bash", r#"{"command": "pytest"}"#, "1 failed"); 3];
    calls.push(("editor", r#"{"command": "view", "path": "a.py"}"#, "def f(): pass"));
    calls.extend([("bash", r#"{"command": "pytest"}"#, "1 failed"); 5]);
    let levels = novelty_levels(&calls);
    assert_eq!(levels, [(2, "nudge"), (5, "directive"), (7, "ask_human")].map(|(i, l)| (i, l.to_owned())));
    // Sustained progress in between (nine different views) forgets the loop: the second burst
    // starts again from its first rung, and the ladder, stepped down, nudges again.
    let views: Vec<String> = (0..9).map(|i| format!(r#"{{"command": "view", "path": "m{i}.py"}}"#)).collect();
    let mut calls = vec![("bash", r#"{"command": "pytest"}"#, "1 failed"); 3];
    calls.extend(views.iter().map(|v| ("editor", v.as_str(), "def f(): pass")));
    calls.extend([("bash", r#"{"command": "pytest"}"#, "1 failed"); 3]);
    let levels = novelty_levels(&calls);
    assert_eq!(levels, [(2, "nudge"), (13, "nudge")].map(|(i, l)| (i, l.to_owned())));
}

#[test]
fn the_audit_evidence_names_the_repeated_calls() {
    let config = LoopConfig::default();
    let counters = Counters::default();
    let mut guard = LoopGuard::new(&GuardrailsConfig::default());
    let mut found = Vec::new();
    for (i, (args, out)) in [("a", "x"), ("b", "y"), ("a", "x"), ("b", "y"), ("a", "x")].iter().enumerate() {
        let call = ToolCall::new(format!("c{i}"), "t", format!(r#"{{"k": "{args}"}}"#));
        let result = ToolResult::ok(format!("c{i}"), *out);
        for d in guard.after_tools(&view(&counters, &config), &[call], &[result]) {
            if let Decision::Emit(Event::LoopDetected { tier, evidence, .. }) = d {
                found.push((tier, evidence));
            }
        }
    }
    assert_eq!(found, [("cycle".to_owned(), vec![0, 1])], "A-B-A-B: the 2nd A and B repeat calls 0 and 1");
}

fn cycle_verdicts(sequence: &str) -> Vec<bool> {
    let mut detector = CycleDetector::new(5, 3);
    sequence
        .chars()
        .enumerate()
        .map(|(i, c)| {
            detector
                .observe(&observed(
                    i as u64,
                    "t",
                    &format!("{{\"x\": \"{c}\"}}"),
                    "out",
                    &OutputLines::of("out"),
                ))
                .is_some()
        })
        .collect()
}

#[test]
fn a_b_a_b_a_b_is_a_cycle_and_a_b_c_d_a_b_is_not() {
    assert_eq!(cycle_verdicts("ABABAB").last(), Some(&true));
    assert!(cycle_verdicts("ABCDAB").iter().all(|v| !v));
    assert_eq!(cycle_verdicts("ABCABCABC").last(), Some(&true));
    assert!(cycle_verdicts("AAAAAA").iter().all(|v| !v), "plain repetition is thrash, not a cycle");
}

#[test]
fn four_identical_action_observation_pairs_are_detected_three_are_not() {
    let mut detector = SameObservation::new(20, 4);
    let args = r#"{"cmd": "mvn test"}"#;
    let outputs = [
        "BUILD FAILURE at line 41",
        "BUILD FAILURE at line 57",
        "BUILD FAILURE at line 60",
        "BUILD FAILURE at line 12",
    ];
    let verdicts: Vec<bool> = outputs
        .iter()
        .enumerate()
        .map(|(i, o)| detector.observe(&observed(i as u64, "shell", args, o, &OutputLines::of(o))).is_some())
        .collect();
    assert_eq!(verdicts, [false, false, false, true], "line numbers do not hide the repeat (B4)");
    let mut other = SameObservation::new(20, 4);
    let different = ["BUILD FAILURE", "BUILD SUCCESS", "BUILD FAILURE", "BUILD SUCCESS"];
    assert!(
        different.iter().enumerate().all(|(i, o)| other
            .observe(&observed(i as u64, "shell", args, o, &OutputLines::of(o)))
            .is_none())
    );
}

fn feed(guard: &mut LoopGuard, config: &LoopConfig, calls: &[(&str, &str)]) -> Vec<Decision> {
    let counters = Counters::default();
    let mut all = Vec::new();
    for (i, (tool, args)) in calls.iter().enumerate() {
        let call = ToolCall::new(format!("c{i}"), *tool, *args);
        let result = ToolResult::ok(format!("c{i}"), "same output");
        all.extend(guard.after_tools(&view(&counters, config), &[call], &[result]));
    }
    all
}

#[test]
fn a_new_user_message_resets_the_ladder_but_not_the_repeat_counter() {
    let config = LoopConfig::default();
    let mut guard = LoopGuard::new(&GuardrailsConfig::default());
    feed(&mut guard, &config, &[("grep", "{}"); 5]);
    assert_eq!(guard.level(), Level::Directive);
    guard.on_user_turn();
    assert_eq!(guard.level(), Level::None);
    assert!(feed(&mut guard, &config, &[("grep", "{}"); 2]).is_empty(), "the window was cleared too");

    let mut counter = RepeatCounter::new(RepeatCounterConfig::default(), vec![]);
    let (counters, config) = (Counters::default(), LoopConfig::default());
    let call = ToolCall::new("x", "grep", "{}");
    for _ in 0..3 {
        counter.before_tools(&view(&counters, &config), std::slice::from_ref(&call));
    }
    counter.on_user_turn();
    assert_eq!(counter.count("grep", "{}"), 3, "the repeat counter lives as long as the executor");
}

#[test]
fn polling_tools_are_never_flagged() {
    let config = LoopConfig::default();
    let mut guard = LoopGuard::new(&GuardrailsConfig {
        polling_tools: vec!["job_status".into()],
        ..GuardrailsConfig::default()
    });
    assert!(feed(&mut guard, &config, &[("job_status", r#"{"id": "j1"}"#); 30]).is_empty());
    let mut unmarked = LoopGuard::new(&GuardrailsConfig::default());
    assert!(!feed(&mut unmarked, &config, &[("job_status", r#"{"id": "j1"}"#); 30]).is_empty());
}

#[test]
fn without_an_ask_human_tool_the_top_of_the_ladder_stops_the_run() {
    let mut config = LoopConfig::default();
    config.guardrails.ask_human_tool = None;
    let mut guard = LoopGuard::new(&GuardrailsConfig::default());
    let decisions = feed(&mut guard, &config, &[("grep", "{}"); 8]);
    assert!(decisions.iter().any(|d| matches!(d, Decision::Stop(StopCause::LoopDetected { .. }))));
    assert!(!decisions.iter().any(|d| matches!(d, Decision::ForceToolChoice(_))));
}

#[tokio::test]
async fn a_looping_run_climbs_nudge_directive_ask_human_and_a_human_answer_resets_it() {
    let shell = RecordingTool::new("shell").fail_times(100, looprail_loop_core::tool::ToolErrorKind::Failed);
    let tools = ToolSet::new().with(shell.clone());
    let mut provider = ScriptedProvider::new("m");
    for _ in 0..30 {
        provider = provider.call_tool("shell", r#"{"cmd": "make test"}"#);
    }
    let provider = Arc::new(provider);
    let mut builder = Run::builder(LoopConfig::default()).user("fix it").tools(tools.definitions());
    for guard in default_stack(&GuardrailsConfig::default()) {
        builder = builder.boxed_guard(guard);
    }
    let mut run = builder.build().unwrap();
    let (sink, mut rx) = EventSink::channel();
    let driver = Driver::new(provider.clone(), tools).with_events(sink);
    let outcome = driver.drive(&mut run).await.unwrap();
    assert_eq!(outcome.state, RunState::WaitingOnHuman);
    let mut levels = Vec::new();
    while let Ok(e) = rx.try_recv() {
        if let Event::LoopDetected { level, call_index, .. } = e {
            levels.push((call_index, level));
        }
    }
    assert_eq!(levels, [(2, "nudge".to_owned()), (4, "directive".to_owned()), (6, "ask_human".to_owned())]);
    let tags: Vec<String> =
        run.messages().iter().filter_map(|m| m.internal.as_ref().map(|t| t.reason.clone())).collect();
    assert!(tags.contains(&"loop_nudge".to_owned()) && tags.contains(&"loop_directive".to_owned()));
    assert!(tags.contains(&"error_reflection".to_owned()), "three failing calls in a row also reflect");
    assert_eq!(shell.call_count(), 7);
    assert_eq!(
        run.header().guards["loop_guard"]["ladder"]["level"],
        "ask_human",
        "the level is saved with the run (F20)"
    );

    run.provide_human_reply("Run only the failing module.").unwrap();
    assert_eq!(run.header().guards["loop_guard"]["ladder"]["level"], "none");
}
