//! The default guardrail stack on real recorded runs from three scaffolds, four sets, at once (issues 13, 33,
//! B10): SWE-agent (loops to catch), OpenHands (healthy edit → test runs to leave alone) and
//! tau-bench (conversations). Asserts the targets and prints the table of docs/guardrails.md,
//! with the presets' rows beside the default's (`-- --nocapture`).

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use looprail_guardrails::replay::{ANSWER_LEVELS, ErrorPatterns, ReplayReport, loop_start, replay};
use looprail_guardrails::{GuardrailsConfig, Preset, default_stack};
use looprail_loop_core::config::LoopConfig;
use looprail_loop_core::message::Message;
use looprail_tests::trajectories::{self, Recording};

const SWE_AGENT: &str = "swe-agent-deepseek-chat-v2";
const SWE_AGENT_CODER: &str = "swe-agent-deepseek-coder-v2";
const OPENHANDS: &str = "openhands-claude-3.5-sonnet";
const TAU_BENCH: &str = "tau-bench-gpt-4o-airline";

struct Set {
    name: &'static str,
    runs: Vec<(Recording, Vec<Message>)>,
}

/// The four sets, loaded once for all tests of this file.
fn load_sets() -> Option<&'static [Set]> {
    static SETS: std::sync::OnceLock<Option<Vec<Set>>> = std::sync::OnceLock::new();
    SETS.get_or_init(read_sets).as_deref()
}

fn read_sets() -> Option<Vec<Set>> {
    let root = trajectories::root()?;
    let sets: Vec<Set> = [(SWE_AGENT, 91), (SWE_AGENT_CODER, 91), (OPENHANDS, 500), (TAU_BENCH, 200)]
        .into_iter()
        .map(|(name, expected)| {
            let runs: Vec<(Recording, Vec<Message>)> = trajectories::load_dir(&root.join(name))
                .into_iter()
                .map(|run| {
                    let mut messages = run.messages.clone();
                    ErrorPatterns::default().classify(&mut messages);
                    (run, messages)
                })
                .collect();
            assert_eq!(runs.len(), expected, "every recorded run of {name} must load");
            Set { name, runs }
        })
        .collect();
    Some(sets)
}

fn report(messages: &[Message], config: &GuardrailsConfig) -> ReplayReport {
    replay(messages, &mut default_stack(config), &LoopConfig::default())
}

/// One row of the table.
#[derive(Debug, Default)]
struct Row {
    stuck: usize,
    caught: usize,
    /// Stuck runs whose first event came within 5 calls of the loop's start and that were
    /// stopped or handed to a human within 10.
    in_time: usize,
    /// Runs stopped or handed to a human, whatever their ending.
    stopped: usize,
    handed_over: usize,
    self_finished: usize,
    stopped_self_finished: usize,
    resolved: usize,
    stopped_resolved: usize,
    nudged_resolved: usize,
}

/// A guard message landed in a healthy run: a ladder event or a reflection (both cost tokens
/// and the model's attention); hints and stops count as stops.
fn intervened(report: &ReplayReport) -> bool {
    !report.events.is_empty()
}

fn row(set: &Set, config: &GuardrailsConfig) -> Row {
    let mut row = Row::default();
    for (run, messages) in &set.runs {
        let report = report(messages, config);
        let stopped = report.stopped_at.is_some();
        if let Some(start) = loop_start(messages) {
            row.stuck += 1;
            row.caught += usize::from(stopped);
            let first = report.events.first().map(|e| e.call_index);
            let in_time =
                first.is_some_and(|f| f <= start + 5) && report.stopped_at.is_some_and(|s| s <= start + 10);
            row.in_time += usize::from(in_time);
        }
        row.stopped += usize::from(stopped);
        row.handed_over += usize::from(report.stop_reason.as_deref() == Some("ask_human"));
        if run.self_finished() {
            row.self_finished += 1;
            row.stopped_self_finished += usize::from(stopped);
        }
        if run.resolved() {
            row.resolved += 1;
            row.stopped_resolved += usize::from(stopped);
            row.nudged_resolved += usize::from(intervened(&report));
        }
    }
    row
}

fn print_row(set: &str, rule: &str, r: &Row) {
    let pct = |n: usize, d: usize| 100.0 * n as f64 / d.max(1) as f64;
    eprintln!(
        "| {set} | {rule} | {}/{} | {}/{} | {} | {}/{} ({:.1}%) | {}/{} | {}/{} ({:.1}%) |",
        r.in_time,
        r.stuck,
        r.caught,
        r.stuck,
        r.handed_over,
        r.stopped_self_finished,
        r.self_finished,
        pct(r.stopped_self_finished, r.self_finished),
        r.stopped_resolved,
        r.resolved,
        r.nudged_resolved,
        r.resolved,
        pct(r.nudged_resolved, r.resolved),
    );
}

#[test]
fn the_default_stack_meets_the_targets_on_all_four_sets() {
    let Some(sets) = load_sets() else { return };
    let config = GuardrailsConfig::default();
    for set in sets {
        let mut stuck = 0;
        for (run, messages) in &set.runs {
            let report = report(messages, &config);
            let name = run.path.file_name().unwrap().to_string_lossy().into_owned();
            let Some(start) = loop_start(messages) else { continue };
            stuck += 1;
            let first = report
                .events
                .iter()
                .find(|e| ANSWER_LEVELS.contains(&e.level.as_str()))
                .unwrap_or_else(|| panic!("{name}: stuck from call {start} but no ladder event"));
            assert!(
                first.call_index <= start + 5,
                "{name}: first event at {} for a loop from {start}",
                first.call_index
            );
            assert_eq!(report.stop_reason.as_deref(), Some("ask_human"), "{name}: stuck but not handed over");
            let handed = report.stopped_at.unwrap();
            assert!(handed <= start + 10, "{name}: handed over at {handed} for a loop from {start}");
            assert!(!first.evidence.is_empty(), "{name}: an event names the calls it matched");
        }
        let r = row(set, &config);
        match set.name {
            SWE_AGENT => {
                assert_eq!(stuck, 13, "the SWE-agent set holds 13 stuck runs");
                assert_eq!(r.stopped_self_finished, 0, "{r:?}");
            }
            SWE_AGENT_CODER => {
                // Issue 33: five of these send the same edit 20 to 40 times while the file grows.
                assert_eq!(stuck, 11, "the deepseek-coder SWE-agent set holds 11 stuck runs");
                assert_eq!(r.stopped_self_finished, 0, "{r:?}");
            }
            OPENHANDS => {
                assert_eq!(stuck, 1, "only django__django-16667 loops");
                assert_eq!(r.stopped_resolved, 0, "{r:?}");
                assert!(r.stopped_self_finished * 200 <= r.self_finished, "at most 0.5%: {r:?}");
                assert!(
                    r.nudged_resolved * 10 <= r.resolved,
                    "nudges on at most 10% of resolved runs: {r:?}"
                );
                let looping =
                    set.runs.iter().find(|(run, _)| run.path.ends_with("django__django-16667.json"));
                let report = report(&looping.unwrap().1, &config);
                assert_eq!(report.stop_reason.as_deref(), Some("ask_human"));
            }
            TAU_BENCH => {
                // As the docs say: no tau-bench run stopped, nor handed to a human, however it
                // ended.
                assert_eq!(set.runs.len(), 200);
                assert_eq!((r.stopped, r.handed_over), (0, 0), "{r:?}");
            }
            _ => unreachable!(),
        }
    }
    eprintln!(
        "| set | rule | stuck runs caught in time | stuck runs caught | handed to a human | self-finished stopped | resolved stopped | resolved runs nudged |"
    );
    eprintln!("|---|---|---|---|---|---|---|---|");
    for set in sets {
        for preset in Preset::ALL {
            let label = if preset == Preset::Novelty {
                "**default** (`novelty`)".to_owned()
            } else {
                format!("`{}`", preset.name())
            };
            print_row(set.name, &label, &row(set, &preset.config()));
        }
    }
}

#[test]
fn the_literal_rules_stop_good_work_that_the_default_leaves_alone() {
    // The reason for the redesign, kept as a regression check: S2's rules as written hand
    // healthy OpenHands runs to a human; the default hands none of the resolved ones.
    let Some(sets) = load_sets() else { return };
    let openhands = sets.iter().find(|s| s.name == OPENHANDS).unwrap();
    let literal = row(openhands, &Preset::S2Literal.config());
    let default = row(openhands, &GuardrailsConfig::default());
    assert!(literal.stopped_resolved > 10, "{literal:?}");
    assert_eq!(default.stopped_resolved, 0);
}
