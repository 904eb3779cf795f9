use proptest::prelude::*;

use super::{AfterResult, BeforeCall, Heard, HostLadder};

const MAKE: (&str, &str) = ("bash", r#"{"cmd":"make"}"#);
const DIRECTIVE: Heard = Heard { remark: true, directive: true, ask: false };
const QUIET: Heard = Heard { remark: false, directive: false, ask: false };

fn denied_make() -> HostLadder {
    let mut ladder = HostLadder::default();
    assert_eq!(ladder.after_result(Some(MAKE), DIRECTIVE), AfterResult::Remark);
    ladder
}

#[test]
fn the_directive_denies_the_identical_call_then_asks_then_stops() {
    let mut ladder = denied_make();
    // Identical after canonicalisation: key order and spacing do not matter.
    let BeforeCall::Deny(reason) = ladder.before_call("bash", r#"{ "cmd" : "make" }"#) else {
        panic!("the identical call is denied")
    };
    assert!(reason.starts_with("[looprail] Denied") && reason.contains("`bash`"));
    assert_eq!(ladder.before_call(MAKE.0, MAKE.1), BeforeCall::Ask);
    ladder.asked = true;
    assert_eq!(ladder.before_call(MAKE.0, MAKE.1), BeforeCall::Stop);
}

#[test]
fn once_the_human_was_asked_a_repeat_stops_at_once() {
    let mut ladder = denied_make();
    ladder.asked = true;
    assert!(matches!(ladder.before_call(MAKE.0, MAKE.1), BeforeCall::Deny(_)));
    assert_eq!(ladder.before_call(MAKE.0, MAKE.1), BeforeCall::Stop);
}

#[test]
fn a_different_quiet_call_clears_the_denial_and_other_calls_run() {
    let mut ladder = denied_make();
    assert_eq!(ladder.before_call("bash", r#"{"cmd":"make test"}"#), BeforeCall::Run);
    // The identical call's quiet result keeps the denial; a different one's clears it.
    assert_eq!(ladder.after_result(Some(MAKE), QUIET), AfterResult::Quiet);
    assert!(ladder.deny.is_some());
    assert_eq!(ladder.after_result(Some(("read_file", r#"{"path":"a"}"#)), QUIET), AfterResult::Quiet);
    assert_eq!(ladder.deny, None);
    assert_eq!(ladder.before_call(MAKE.0, MAKE.1), BeforeCall::Run);
}

#[test]
fn after_the_human_was_asked_any_remark_stops_and_an_ask_is_passed_on() {
    let mut ladder = HostLadder { asked: true, ..HostLadder::default() };
    let nudge = Heard { remark: true, ..Heard::default() };
    assert_eq!(ladder.after_result(Some(MAKE), nudge), AfterResult::StillLooping);
    let mut ladder = HostLadder::default();
    let ask = Heard { ask: true, ..Heard::default() };
    assert_eq!(ladder.after_result(Some(MAKE), ask), AfterResult::Ask);
    assert_eq!(ladder.after_result(None, DIRECTIVE), AfterResult::Remark);
    assert_eq!(ladder.deny, None, "a directive said at a reply names no call");
}

#[test]
fn the_state_keeps_its_json_shape() {
    let ladder = denied_make();
    let json = serde_json::to_value(&ladder).unwrap();
    assert_eq!(json["asked"], false);
    assert_eq!(json["deny"]["repeats"], 0);
    let old: HostLadder = serde_json::from_str(r#"{"deny":{"call":7,"reason":"r"}}"#).unwrap();
    assert_eq!(old.deny.map(|d| (d.call, d.repeats)), Some((7, 0)));
}

fn heard() -> impl Strategy<Value = Heard> {
    (any::<bool>(), any::<bool>(), any::<bool>()).prop_map(|(remark, directive, ask)| Heard {
        remark: remark || directive,
        directive,
        ask,
    })
}

proptest! {
    /// Whatever the guards say and whatever the agent calls, the call the directive named never
    /// runs while it is denied: its first repeat is denied, its second asks the human (once a
    /// stretch), and the next stops the agent.
    #[test]
    fn a_denied_call_never_runs_and_stops_by_its_third_repeat(
        steps in prop::collection::vec((0..3usize, heard()), 1..60),
    ) {
        let calls = [MAKE, ("read_file", r#"{"path":"x"}"#), ("bash", r#"{"cmd":"ls"}"#)];
        let mut ladder = HostLadder::default();
        for (pick, said) in steps {
            let call = calls[pick];
            let signature = crate::signature::CallSignature::of(call.0, call.1).call;
            let denied = ladder.deny.clone().filter(|d| d.call == signature);
            let asked_before = ladder.asked;
            let answer = ladder.before_call(call.0, call.1);
            let repeats = ladder.deny.as_ref().map_or(0, |d| d.repeats);
            match answer {
                BeforeCall::Run => {
                    prop_assert!(denied.is_none(), "the denied call ran");
                    if ladder.after_result(Some(call), said) == AfterResult::Ask {
                        ladder.asked = true;
                    }
                }
                BeforeCall::Deny(_) => prop_assert_eq!(repeats, 1),
                BeforeCall::Ask => {
                    prop_assert!(!asked_before && repeats == 2, "asked once, at the second repeat");
                    ladder.asked = true;
                }
                BeforeCall::Stop => {
                    prop_assert!(repeats >= 2 && denied.is_some());
                    return Ok(());
                }
            }
        }
    }
}
