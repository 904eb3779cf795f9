//! The property-testing kit on looprail's own defaults and presets (issue 20): the checks a
//! user runs on their settings, run here on ours, so the kit is exercised in CI.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use looprail_guardrails::kit::histories::{self, Shape};
use looprail_guardrails::kit::{GuardKit, History, Step};
use looprail_guardrails::{GuardrailsConfig, Preset};
use proptest::prelude::*;

fn kit() -> GuardKit {
    GuardKit::for_config(&GuardrailsConfig::default())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn novel_exploration_draws_no_decision(history in histories::novel_exploration(&Shape::default(), 1..40)) {
        kit().never_escalates(&history)?;
    }

    #[test]
    fn edit_test_cycles_and_polling_are_never_stopped(
        edits in histories::with_user_turns(histories::edit_test_cycles(&Shape::default(), 1..15)),
        polls in histories::polling(&Shape { argument_padding: 300, ..Shape::default() }, 1..40),
    ) {
        kit().never_stops(&edits)?;
        kit().never_stops(&polls)?;
    }

    #[test]
    fn an_identical_loop_reaches_a_human_within_eight_calls(history in histories::identical_loop(&Shape::default(), 8..30)) {
        kit().hands_to_human_within(&history, 8)?;
    }

    #[test]
    fn a_cycle_reaches_a_human_within_its_fourth_round(
        history in histories::cycles(&Shape::default(), 2..6, 4..6),
    ) {
        let period = history.calls() / 4;
        kit().hands_to_human_within(&history, 4 * period.max(2) + 4)?;
    }

    #[test]
    fn every_preset_keeps_the_invariants_on_any_history(
        history in histories::any_history(&Shape::default()),
        split in 0usize..40,
        preset in prop::sample::select(Preset::ALL.to_vec()),
    ) {
        GuardKit::for_config(&preset.config()).always(&history, split)?;
    }
}

#[test]
fn a_violation_shows_the_history_and_the_decisions() {
    // A stack that hands loops to a human fails "never stops" on an identical loop.
    let step = || Step::call("read_file", serde_json::json!({"path": "a"}), "same");
    let history = History::new((0..12).map(|_| step()).collect());
    let violation = kit().never_stops(&history).unwrap_err();
    let text = violation.to_string();
    assert!(text.starts_with("never_stops failed: ask_human at call #"), "{text}");
    assert!(text.contains("#0 read_file {\"path\":\"a\"} -> same"), "{text}");
    assert!(text.contains("agent.loop.detected"), "{text}");
    // And a stack with no guards never hands anything over.
    let empty = GuardKit::new(Vec::new);
    assert!(empty.hands_to_human_within(&history, 12).is_err());
    assert!(empty.never_escalates(&history).is_ok());
}
