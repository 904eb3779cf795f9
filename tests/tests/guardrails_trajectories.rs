//! The default guardrail stack on real recorded runs (issue 5): every stuck run gets a ladder
//! event by the 6th call of its loop and is handed to a human or stopped by the 11th, and no
//! run the agent finished by itself is stopped or handed over. Prints the figures for the
//! tuning guide, next to the seed rules.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use looprail_guardrails::replay::{ErrorPatterns, ReplayReport, replay};
use looprail_guardrails::signature::CallSignature;
use looprail_guardrails::{ConsecutiveSteps, GuardrailsConfig, Level, LoopGuard, default_stack};
use looprail_loop_core::Guard;
use looprail_loop_core::config::LoopConfig;
use looprail_loop_core::message::Message;
use looprail_tests::trajectories::{self, Recording};

/// The definition: the first index of 10 consecutive calls holding at most 2 distinct
/// (tool, canonical arguments).
fn loop_start(messages: &[Message]) -> Option<u64> {
    let calls: Vec<u64> = messages
        .iter()
        .flat_map(Message::tool_calls)
        .map(|c| CallSignature::of(&c.name, &c.arguments).call)
        .collect();
    (0..calls.len().saturating_sub(9))
        .find(|&s| {
            let mut distinct: Vec<u64> = calls[s..s + 10].to_vec();
            distinct.sort_unstable();
            distinct.dedup();
            distinct.len() <= 2
        })
        .map(|s| s as u64)
}

fn run_stack(recording: &Recording, guards: Vec<Box<dyn Guard>>) -> ReplayReport {
    let mut messages = recording.messages.clone();
    ErrorPatterns::default().classify(&mut messages);
    let mut guards = guards;
    replay(&messages, &mut guards, &LoopConfig::default())
}

fn all_runs() -> Option<Vec<Recording>> {
    let root = trajectories::root()?;
    let mut runs = trajectories::load_dir(&root.join("swe-agent-deepseek-chat-v2"));
    runs.extend(trajectories::load_dir(&root.join("tau-bench-gpt-4o-airline")));
    assert_eq!(runs.len(), 291, "every recorded run must load");
    Some(runs)
}

struct Figures {
    self_finished: usize,
    self_finished_stopped: usize,
    stuck: usize,
    caught: usize,
    /// Offsets from the loop start of the stop/hand-off.
    offsets: Vec<i64>,
}

fn figures(runs: &[Recording], stack: impl Fn() -> Vec<Box<dyn Guard>>) -> Figures {
    let mut f =
        Figures { self_finished: 0, self_finished_stopped: 0, stuck: 0, caught: 0, offsets: Vec::new() };
    for run in runs {
        let report = run_stack(run, stack());
        if run.self_finished() {
            f.self_finished += 1;
            f.self_finished_stopped += usize::from(report.stopped_at.is_some());
        }
        if let Some(start) = loop_start(&run.messages) {
            f.stuck += 1;
            if let Some(at) = report.stopped_at {
                f.caught += 1;
                f.offsets.push(at as i64 - start as i64);
            }
        }
    }
    f.offsets.sort_unstable();
    f
}

fn print(name: &str, f: &Figures) {
    eprintln!(
        "{name:<40} self-finished stopped or handed over: {}/{} ({:.1}%); stuck runs caught: {}/{}; stop offset from loop start: {:?}",
        f.self_finished_stopped,
        f.self_finished,
        100.0 * f.self_finished_stopped as f64 / f.self_finished.max(1) as f64,
        f.caught,
        f.stuck,
        f.offsets
    );
}

#[test]
fn the_default_stack_meets_the_tuning_targets_on_recorded_runs() {
    let Some(runs) = all_runs() else { return };
    let config = GuardrailsConfig::default();
    let mut stuck = 0;
    let mut worst_first = i64::MIN;
    let mut worst_stop = i64::MIN;
    for run in &runs {
        let report = run_stack(run, default_stack(&config));
        let name = run.path.file_name().unwrap().to_string_lossy().into_owned();
        if run.self_finished() {
            assert_eq!(report.stopped_at, None, "{name} finished by itself but would be stopped: {report:?}");
        }
        if let Some(start) = loop_start(&run.messages) {
            stuck += 1;
            let first = report
                .events
                .iter()
                .find(|e| ["nudge", "directive", "ask_human", "stop"].contains(&e.level.as_str()))
                .unwrap_or_else(|| panic!("{name}: stuck from call {start} but no ladder event"));
            let stopped = report
                .stopped_at
                .unwrap_or_else(|| panic!("{name}: stuck from call {start} but never stopped"));
            assert!(
                first.call_index <= start + 5,
                "{name}: first ladder event at {} for a loop from {start}",
                first.call_index
            );
            assert!(stopped <= start + 10, "{name}: stopped at {stopped} for a loop from {start}");
            worst_first = worst_first.max(first.call_index as i64 - start as i64);
            worst_stop = worst_stop.max(stopped as i64 - start as i64);
        }
    }
    assert_eq!(stuck, 13, "the recorded set holds 13 stuck runs");
    eprintln!(
        "worst first ladder event: loop start + {worst_first}; worst hand-off: loop start + {worst_stop}"
    );
    print("looprail default stack", &figures(&runs, || default_stack(&config)));
    print("S1: 3 identical steps -> stop", &figures(&runs, || vec![Box::new(ConsecutiveSteps::new(3))]));
    print("5th identical step -> stop", &figures(&runs, || vec![Box::new(ConsecutiveSteps::new(5))]));
    let seed_ladder = GuardrailsConfig {
        pattern_max_level: Level::AskHuman,
        escalation_gap: 1,
        deescalate_after: u32::MAX,
        cycle_repetitions: 64,
        cycle_max_period: 2,
        same_observation_threshold: 256,
        same_observation_window: 256,
        consecutive_stop: 0,
        reset_on_user_turn: false,
        ..GuardrailsConfig::default()
    };
    print(
        "S2: 3-in-6 / 4-in-6 ladder, no tuning",
        &figures(&runs, || vec![Box::new(LoopGuard::new(&seed_ladder))]),
    );
}
