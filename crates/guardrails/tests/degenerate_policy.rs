//! What the loop guard does after a reply cut for repeating itself: a first one is recovered
//! from (the model is told what it repeated and goes on); a second one within three replies
//! climbs the ladder; one long after is recovered from again.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use looprail_guardrails::{GuardrailsConfig, LoopGuard, RECOVERY};
use looprail_loop_core::config::LoopConfig;
use looprail_loop_core::guard::{Counters, Decision, TurnView};
use looprail_loop_core::prelude::*;
use looprail_loop_core::provider::{ModelResponse, StopReason};

/// One reply through the guard: the level of its degenerate-reply event and the text it
/// injected, if any.
fn reply(guard: &mut LoopGuard, text: &str, degenerate: bool) -> (Option<String>, Option<String>) {
    let config = LoopConfig::default();
    let counters = Counters::default();
    let view = TurnView { counters: &counters, messages: &[], config: &config, elapsed: Default::default() };
    let mut response = ModelResponse::text("m", text);
    if degenerate {
        response.stop_reason = StopReason::Degenerate;
    }
    let mut level = None;
    let mut said = None;
    for decision in guard.after_response(&view, &response) {
        match decision {
            Decision::Emit(Event::LoopDetected { level: l, .. }) => level = Some(l),
            Decision::Inject(message) => said = message.joined_text(),
            _ => {}
        }
    }
    (level, said)
}

#[test]
fn a_first_degenerate_reply_is_recovered_from_and_a_second_soon_after_climbs() {
    let mut guard = LoopGuard::new(&GuardrailsConfig::default());
    let thought = "Wait, is it the cache or the cache? ";
    let (level, said) = reply(&mut guard, &format!("Let me check. {thought}"), true);
    assert_eq!(level.as_deref(), Some(RECOVERY));
    let said = said.unwrap();
    assert!(said.contains(thought.trim_end()), "the model reads what it repeated: {said}");
    assert_eq!(guard.level(), looprail_guardrails::Level::None, "no rung of the ladder");
    assert_eq!(reply(&mut guard, "Reading the cache code.", false).0, None);
    // A second one within three replies: the ladder's first rung.
    let (level, said) = reply(&mut guard, thought, true);
    assert_eq!(level.as_deref(), Some("nudge"));
    assert!(said.unwrap().contains("repeating"));
    // A third soon after: the next rung.
    assert_eq!(reply(&mut guard, thought, true).0.as_deref(), Some("directive"));
}

#[test]
fn degenerate_replies_far_apart_are_each_recovered_from() {
    let mut guard = LoopGuard::new(&GuardrailsConfig::default());
    for _ in 0..3 {
        assert_eq!(reply(&mut guard, "Hmm. Hmm. ", true).0.as_deref(), Some(RECOVERY));
        for _ in 0..3 {
            reply(&mut guard, "A plain reply.", false);
        }
    }
    // The recovery survives a save and load: the next one, straight after, climbs.
    reply(&mut guard, "Hmm. Hmm. ", true);
    let mut restored = LoopGuard::new(&GuardrailsConfig::default());
    restored.load_state(guard.save_state()).unwrap();
    assert_eq!(reply(&mut restored, "Hmm. Hmm. ", true).0.as_deref(), Some("nudge"));
}

#[test]
fn a_state_that_does_not_load_whole_is_not_loaded_at_all() {
    // Three detectors; the last one's part is damaged.
    let config = looprail_guardrails::Preset::Looprail01.config();
    let mut guard = LoopGuard::new(&config);
    let loop_config = LoopConfig::default();
    let counters = Counters::default();
    let view =
        TurnView { counters: &counters, messages: &[], config: &loop_config, elapsed: Default::default() };
    for i in 0..4 {
        let call = ToolCall::new(format!("c{i}"), "bash", r#"{"command": "make"}"#);
        guard.after_tools(&view, &[call], &[ToolResult::ok(format!("c{i}"), "error 2")]);
    }
    let mut damaged = guard.save_state();
    let last = damaged["detectors"].as_object().unwrap().keys().next_back().unwrap().clone();
    damaged["detectors"][&last] = serde_json::json!({"window": "damaged"});
    let mut fresh = LoopGuard::new(&config);
    let untouched = fresh.save_state();
    assert!(fresh.load_state(damaged).is_err());
    assert_eq!(fresh.save_state(), untouched, "nothing of the damaged state was taken");
}
