//! The ladder's memory across detours, as properties: a loop that comes back after a short
//! detour resumes the ladder where it stopped; sustained progress steps it down.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use looprail_guardrails::{GuardrailsConfig, Level, LoopGuard};
use looprail_loop_core::config::LoopConfig;
use looprail_loop_core::guard::{Counters, Decision, TurnView};
use looprail_loop_core::prelude::*;
use proptest::prelude::*;

/// Feeds calls to a default `LoopGuard`: the index of each loop event and its level.
struct Feed {
    guard: LoopGuard,
    next: usize,
    levels: Vec<(usize, String)>,
}

impl Feed {
    fn new() -> Self {
        Self { guard: LoopGuard::new(&GuardrailsConfig::default()), next: 0, levels: Vec::new() }
    }

    fn call(&mut self, tool: &str, args: &str, output: &str) {
        let config = LoopConfig::default();
        let counters = Counters::default();
        let view =
            TurnView { counters: &counters, messages: &[], config: &config, elapsed: Default::default() };
        let i = self.next;
        self.next += 1;
        let c = ToolCall::new(format!("c{i}"), tool, args);
        let r = ToolResult::ok(format!("c{i}"), output);
        for d in self.guard.after_tools(&view, std::slice::from_ref(&c), std::slice::from_ref(&r)) {
            if let Decision::Emit(Event::LoopDetected { level, .. }) = d {
                self.levels.push((i, level));
            }
        }
    }

    /// A call that brings something new: its own arguments and output.
    fn novel(&mut self, tag: &str) {
        let i = self.next;
        self.call("bash", &format!(r#"{{"command": "ls {tag}{i}"}}"#), &format!("{tag}{i}.txt"));
    }

    fn ask_human_at(&self) -> Option<usize> {
        self.levels.iter().find(|(_, level)| level == "ask_human").map(|(i, _)| *i)
    }
}

/// The loop: one failing call, repeated with the same error (its output has several lines).
fn loop_call(feed: &mut Feed, command: &str) {
    feed.call("bash", &format!(r#"{{"command": "{command}"}}"#), "Traceback:\n  File x.py\nKeyError: 'k'");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn a_loop_resumed_after_a_detour_reaches_ask_human_no_later_than_the_detour_delays_it(
        before in 0usize..6,
        loop_calls_before_detour in 1usize..=6,
        detour in 1usize..=3,
        command in "[a-z]{3,8}",
    ) {
        let mut straight = Feed::new();
        for _ in 0..before { straight.novel("warmup"); }
        for _ in 0..20 { loop_call(&mut straight, &command); }
        let uninterrupted = straight.ask_human_at().expect("a loop is handed to a human");

        let mut feed = Feed::new();
        for _ in 0..before { feed.novel("warmup"); }
        for _ in 0..loop_calls_before_detour { loop_call(&mut feed, &command); }
        for _ in 0..detour { feed.novel("detour"); }
        for _ in 0..20 { loop_call(&mut feed, &command); }
        let resumed = feed.ask_human_at().expect("a loop with a detour is handed to a human");
        prop_assert!(resumed <= uninterrupted + detour, "{:?} (uninterrupted: {uninterrupted})", feed.levels);
    }

    #[test]
    fn a_detour_of_the_same_effect_counts_as_the_loop(
        loop_calls_before_detour in 3usize..=6,
        flags in 1usize..=3,
    ) {
        // "Another flag": the command changes, its output does not.
        let mut feed = Feed::new();
        for _ in 0..loop_calls_before_detour { loop_call(&mut feed, "python x.py"); }
        for f in 0..flags { loop_call(&mut feed, &format!("python -W{f} x.py")); }
        for _ in 0..20 { loop_call(&mut feed, "python x.py"); }
        let ask = feed.ask_human_at().unwrap();
        prop_assert!(ask <= 6, "the changed flags were stale calls of the loop: {:?}", feed.levels);
    }

    #[test]
    fn sustained_progress_steps_the_ladder_down_and_forgets_the_loop(
        loop_calls in 3usize..=6,
        progress in 17usize..40,
    ) {
        let mut feed = Feed::new();
        for _ in 0..loop_calls { loop_call(&mut feed, "make"); }
        prop_assert!(feed.guard.level() >= Level::Nudge);
        for _ in 0..progress { feed.novel("step"); }
        // Two step-downs of 8 calls of progress each: from a directive at most, back to none.
        prop_assert_eq!(feed.guard.level(), Level::None);
        let seen = feed.levels.len();
        for _ in 0..3 { loop_call(&mut feed, "make"); }
        prop_assert_eq!(&feed.levels[seen..], &[(loop_calls + progress + 1, "nudge".to_owned())][..]);
    }
}

#[test]
fn stale_calls_without_a_detection_do_not_step_the_ladder_down() {
    // Between edits the agent reads the same unchanged file again: the edits are progress,
    // the reads are not, so only the edits count towards the step down.
    let mut feed = Feed::new();
    feed.call("editor", r#"{"command": "view", "path": "notes.md"}"#, "# Notes\nnothing yet");
    for _ in 0..5 {
        loop_call(&mut feed, "pytest");
    }
    assert_eq!(feed.guard.level(), Level::Directive);
    for edit in 0..7 {
        feed.novel("edit");
        feed.call("editor", r#"{"command": "view", "path": "notes.md"}"#, "# Notes\nnothing yet");
        assert_eq!(feed.guard.level(), Level::Directive, "after edit {edit}");
    }
    feed.novel("edit");
    assert_eq!(feed.guard.level(), Level::Nudge, "the 8th edit is sustained progress");
}

#[test]
fn a_loop_told_off_that_comes_straight_back_after_one_change_resumes_at_once() {
    // The same failing test five times (a directive), one edit, the same failure again: the
    // streak continues from its fifth call, not from zero.
    let mut feed = Feed::new();
    for _ in 0..5 {
        loop_call(&mut feed, "pytest");
    }
    feed.novel("edit");
    loop_call(&mut feed, "pytest");
    loop_call(&mut feed, "pytest");
    // Uninterrupted, the 7th call (index 6) is handed over; the edit delays that by one call.
    assert_eq!(feed.levels.last(), Some(&(7, "ask_human".to_owned())), "{:?}", feed.levels);
}
