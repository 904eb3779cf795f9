//! Property tests of the detectors and the ladder (issue 5).

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use looprail_guardrails::{EscalationLadder, GuardrailsConfig, Level, LoopGuard, default_stack};
use looprail_loop_core::config::LoopConfig;
use looprail_loop_core::guard::{Counters, Decision, TurnView};
use looprail_loop_core::prelude::*;
use proptest::prelude::*;

/// A call: tool index, argument values for keys k0..k3, result index.
type Call = (u8, [u8; 4], u8);

fn call_strategy() -> impl Strategy<Value = Call> {
    (0u8..3, [0u8..3, 0u8..3, 0u8..3, 0u8..3], 0u8..3)
}

fn render(call: &Call, order: &[usize; 4], spaced: bool) -> (String, String, String) {
    let (tool, values, out) = call;
    let sep = if spaced { ", " } else { "," };
    let body: Vec<String> =
        order.iter().map(|k| format!("\"k{k}\":{}{}", if spaced { " " } else { "" }, values[*k])).collect();
    (
        format!("t{tool}"),
        format!("{{{}}}", body.join(sep)),
        format!("output {out} at line {}", values[0] as u32 * 17),
    )
}

fn verdicts(guards: &mut [Box<dyn Guard>], calls: &[Call], order: &[usize; 4], spaced: bool) -> Vec<String> {
    verdicts_from(guards, calls, order, spaced, 0)
}

/// Like `verdicts`, for calls that start at `first` in the run (call ids are run-wide).
fn verdicts_from(
    guards: &mut [Box<dyn Guard>],
    calls: &[Call],
    order: &[usize; 4],
    spaced: bool,
    first: usize,
) -> Vec<String> {
    verdicts_with(guards, calls, order, spaced, first, &[])
}

/// Like `verdicts_from`, with each output's line number replaced by `numbers[i]` (when given).
fn verdicts_with(
    guards: &mut [Box<dyn Guard>],
    calls: &[Call],
    order: &[usize; 4],
    spaced: bool,
    first: usize,
    numbers: &[u32],
) -> Vec<String> {
    let config = LoopConfig::default();
    let counters = Counters::default();
    let view = TurnView { counters: &counters, messages: &[], config: &config, elapsed: Default::default() };
    let mut out = Vec::new();
    for (i, call) in calls.iter().enumerate() {
        let (tool, args, mut output) = render(call, order, spaced);
        if let Some(n) = numbers.get(i) {
            output = format!("output {} at line {n}", call.2);
        }
        let id = format!("c{}", first + i);
        let c = ToolCall::new(&id, tool, args);
        let r = ToolResult::ok(&id, output);
        for guard in guards.iter_mut() {
            for d in guard.before_tools(&view, std::slice::from_ref(&c)) {
                out.push(format!("{i}:{d:?}"));
            }
            for d in guard.after_tools(&view, std::slice::from_ref(&c), std::slice::from_ref(&r)) {
                out.push(format!("{i}:{d:?}"));
            }
        }
    }
    out
}

fn stack() -> Vec<Box<dyn Guard>> {
    let config = GuardrailsConfig {
        repeat_counter: Some(looprail_guardrails::RepeatCounterConfig::default()),
        ..GuardrailsConfig::default()
    };
    default_stack(&config)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn no_detector_fires_without_a_repeated_call(n in 1usize..60) {
        // Every call a different tool with different arguments and output.
        let config = LoopConfig::default();
        let counters = Counters::default();
        let view = TurnView { counters: &counters, messages: &[], config: &config, elapsed: Default::default() };
        let mut guards = stack();
        for i in 0..n {
            let c = ToolCall::new(format!("c{i}"), format!("tool_{i}"), format!("{{\"n\": {i}}}"));
            let r = ToolResult::ok(format!("c{i}"), format!("result {i}"));
            for g in &mut guards {
                prop_assert!(g.before_tools(&view, std::slice::from_ref(&c)).is_empty());
                prop_assert!(g.after_tools(&view, std::slice::from_ref(&c), std::slice::from_ref(&r)).is_empty());
            }
        }
    }

    #[test]
    fn one_generic_tool_with_new_arguments_every_call_never_gets_an_event(
        outputs in prop::collection::vec(0u8..3, 1..80),
    ) {
        // A scaffold with a single `bash` tool: the tool name carries no information, and the
        // same few outputs recur ("ok", an error, nothing). Every call is new: no event.
        let config = LoopConfig::default();
        let counters = Counters::default();
        let view = TurnView { counters: &counters, messages: &[], config: &config, elapsed: Default::default() };
        let mut guards = default_stack(&GuardrailsConfig::default());
        for (i, out) in outputs.iter().enumerate() {
            let c = ToolCall::new(format!("c{i}"), "bash", format!("{{\"command\": \"step {i}\"}}"));
            let r = ToolResult::ok(format!("c{i}"), ["ok", "Error: exit 1", ""][*out as usize]);
            for g in &mut guards {
                prop_assert!(g.after_tools(&view, std::slice::from_ref(&c), std::slice::from_ref(&r)).is_empty());
            }
        }
    }

    #[test]
    fn a_status_poll_whose_observation_changes_never_climbs_past_a_nudge(
        outputs in prop::collection::vec(0u8..4, 2..80),
    ) {
        // The same poll every time; its output differs from the one before (it may come back
        // to an earlier one: a job flipping between states).
        let mut observations = vec![outputs[0]];
        for o in &outputs[1..] {
            if Some(o) != observations.last() {
                observations.push(*o);
            }
        }
        let config = LoopConfig::default();
        let counters = Counters::default();
        let view = TurnView { counters: &counters, messages: &[], config: &config, elapsed: Default::default() };
        let mut guard = LoopGuard::new(&GuardrailsConfig::default());
        for (i, out) in observations.iter().enumerate() {
            let c = ToolCall::new(format!("c{i}"), "job_status", r#"{"id": "j-1"}"#);
            let r = ToolResult::ok(format!("c{i}"), format!("state {}", ["queued", "running", "waiting", "idle"][*out as usize]));
            for d in guard.after_tools(&view, std::slice::from_ref(&c), std::slice::from_ref(&r)) {
                if let Decision::Stop(_) | Decision::ForceToolChoice(_) = d {
                    prop_assert!(false, "stopped or forced at call {i}");
                }
            }
            prop_assert!(guard.level() <= Level::Nudge, "climbed to {:?} at call {i}", guard.level());
        }
    }

    #[test]
    fn the_same_call_whose_output_grows_by_the_same_block_reaches_a_human(
        base in prop::collection::vec("[a-z]{1,12}( [a-z]{1,8})?", 1..20),
        block in prop::collection::vec("[a-z]{1,12}[;{}]?", 1..8),
        at in any::<prop::sample::Index>(),
        numbered in any::<bool>(),
    ) {
        // Issue 33: the same edit sent again and again; each time the file grows by the same
        // block (inserted at the same place), so every output is new and nothing is learned.
        let mut file = base.clone();
        let at = at.index(base.len() + 1);
        let mut levels = Vec::new();
        let mut guard = LoopGuard::new(&GuardrailsConfig::default());
        for i in 0..12 {
            for (k, line) in block.iter().enumerate() {
                file.insert(at + k, line.clone());
            }
            let shown: Vec<String> = file
                .iter()
                .enumerate()
                .map(|(n, l)| if numbered { format!("{}:{l}", n + 1) } else { l.clone() })
                .collect();
            let output = format!("[File: a.java ({} lines total)]\n{}\nFile updated.", file.len(), shown.join("\n"));
            levels.extend(observe(&mut guard, i, "edit", r#"{"command": "edit 3:3"}"#, &output));
        }
        prop_assert!(levels.iter().any(|(_, l)| l == "ask_human"), "{:?}", levels);
        let handed = levels.iter().find(|(_, l)| l == "ask_human").map(|(i, _)| *i);
        prop_assert!(handed.is_some_and(|i| i <= 9), "{:?}", levels);
    }

    #[test]
    fn the_same_call_whose_output_grows_by_new_content_never_passes_a_nudge(
        growth in prop::collection::vec(1usize..4, 2..40),
        sleeps in any::<bool>(),
    ) {
        // A log followed by the same call: every read brings lines never shown before.
        let mut log = String::from("build started");
        let mut n = 0;
        let mut guard = LoopGuard::new(&GuardrailsConfig::default());
        let args = if sleeps { r#"{"command": "sleep 5; tail -n 200 build.log"}"# } else { r#"{"command": "tail -n 200 build.log"}"# };
        for (i, lines) in growth.iter().enumerate() {
            for _ in 0..*lines {
                n += 1;
                log.push_str(&format!("\ncompiled {}", looprail_guardrails::kit::histories::word(n * 7919)));
            }
            for (at, level) in observe(&mut guard, i, "bash", args, &log) {
                prop_assert_eq!(level.as_str(), "nudge", "at call {}", at);
            }
        }
    }

    #[test]
    fn volatile_numbers_in_outputs_never_change_a_verdict(
        calls in prop::collection::vec(call_strategy(), 1..50),
        numbers in prop::collection::vec(0u32..1_000_000, 50),
    ) {
        let plain = verdicts(&mut stack(), &calls, &[0, 1, 2, 3], false);
        let renumbered = verdicts_with(&mut stack(), &calls, &[0, 1, 2, 3], false, 0, &numbers);
        prop_assert_eq!(plain, renumbered);
    }

    #[test]
    fn argument_key_order_and_whitespace_never_change_a_verdict(
        calls in prop::collection::vec(call_strategy(), 1..50),
        order in Just([0usize, 1, 2, 3]).prop_shuffle(),
    ) {
        let plain = verdicts(&mut stack(), &calls, &[0, 1, 2, 3], false);
        let permuted = verdicts(&mut stack(), &calls, &order, true);
        prop_assert_eq!(plain, permuted);
    }

    #[test]
    fn the_ladder_never_skips_a_level(ops in prop::collection::vec((any::<bool>(), 0u8..4, 0u64..3), 1..200)) {
        let mut ladder = EscalationLadder::new(2, 5);
        let mut index = 0u64;
        for (detect, cap, step) in ops {
            let before = ladder.level();
            index += step;
            let cap = [Level::None, Level::Nudge, Level::Directive, Level::AskHuman][cap as usize];
            if detect { ladder.on_detection(index, cap); } else { ladder.on_quiet_call(); }
            let after = ladder.level();
            let distance = (after as i32 - before as i32).abs();
            prop_assert!(distance <= 1, "{:?} -> {:?}", before, after);
            if detect { prop_assert!(after >= before); } else { prop_assert!(after <= before); }
        }
    }

    #[test]
    fn saved_state_restores_every_future_verdict(
        calls in prop::collection::vec(call_strategy(), 2..60),
        split in 0usize..60,
    ) {
        let split = split % calls.len();
        let order = [0, 1, 2, 3];
        let mut reference = stack();
        let all = verdicts(&mut reference, &calls, &order, false);

        let mut first = stack();
        verdicts(&mut first, &calls[..split], &order, false);
        let saved: Vec<serde_json::Value> = first.iter().map(|g| g.save_state()).collect();
        let json = serde_json::to_string(&saved).unwrap();
        let restored_states: Vec<serde_json::Value> = serde_json::from_str(&json).unwrap();
        let mut second = stack();
        for (guard, state) in second.iter_mut().zip(restored_states) {
            guard.load_state(state).unwrap();
        }
        let tail = verdicts_from(&mut second, &calls[split..], &order, false, split);
        // Verdicts carry their call index; shift the tail's to compare.
        let expected: Vec<String> = all
            .iter()
            .filter_map(|v| {
                let (i, rest) = v.split_once(':')?;
                let i: usize = i.parse().ok()?;
                (i >= split).then(|| format!("{}:{rest}", i - split))
            })
            .collect();
        prop_assert_eq!(tail, expected);
    }
}

/// One call through `guard`: the levels of the loop events it raised.
fn observe(guard: &mut LoopGuard, i: usize, tool: &str, args: &str, output: &str) -> Vec<(usize, String)> {
    let config = LoopConfig::default();
    let counters = Counters::default();
    let view = TurnView { counters: &counters, messages: &[], config: &config, elapsed: Default::default() };
    let c = ToolCall::new(format!("c{i}"), tool, args);
    let r = ToolResult::ok(format!("c{i}"), output);
    guard
        .after_tools(&view, std::slice::from_ref(&c), std::slice::from_ref(&r))
        .into_iter()
        .filter_map(|d| match d {
            Decision::Emit(Event::LoopDetected { level, .. }) => Some((i, level)),
            _ => None,
        })
        .collect()
}

#[test]
fn loop_guard_state_survives_json() {
    let mut guard = LoopGuard::new(&GuardrailsConfig::default());
    let json = serde_json::to_string(&guard.save_state()).unwrap();
    guard.load_state(serde_json::from_str(&json).unwrap()).unwrap();
    assert!(guard.load_state(serde_json::json!({"ladder": 5})).is_err(), "corrupt state is a typed error");
}
