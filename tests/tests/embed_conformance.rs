//! The in-process guard (`looprail_embed::AgentGuard`, behind the Python and Node bindings)
//! fed the development trajectories step by step, as a host reports them, reports the same
//! guard events, call for call, and stops where `looprail audit` stops (issue 69, B18).

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use looprail::LooprailConfig;
use looprail::core::profile::Profile;
use looprail_audit::steps::HostStep;
use looprail_embed::{Action, AgentGuard, Call, GuardEvent, Reply};
use looprail_tests::{host_steps, trajectories};

/// What the guard reported of one run: its events, and why it stopped.
fn drive(config: &LooprailConfig, run: &[HostStep]) -> (Vec<GuardEvent>, Option<String>) {
    let mut guard = AgentGuard::new(config);
    let ends = |action: Action| matches!(action, Action::Stop | Action::Ask);
    let mut stop = None;
    for step in run {
        let verdict = match step {
            HostStep::User => {
                guard.user_message(None);
                continue;
            }
            HostStep::Model { at_ms, text, calls, usage, model } => {
                let now = i64::try_from(*at_ms).unwrap();
                let before = guard.before_model(now);
                if ends(before.action) {
                    before
                } else {
                    let calls = calls
                        .iter()
                        .map(|c| Call {
                            id: c.id.clone(),
                            name: c.name.clone(),
                            arguments: c.arguments.clone(),
                        })
                        .collect();
                    let reply =
                        Reply { text: text.clone(), calls, usage: Some(*usage), model: model.clone() };
                    guard.model_response(&reply, now)
                }
            }
            HostStep::Result { id, output, failed } => guard.after_tool(id, output, *failed),
        };
        if ends(verdict.action) {
            stop = Some(verdict.reason);
            break;
        }
    }
    (guard.take_events(), stop)
}

#[test]
fn the_guard_in_process_reports_what_the_audit_reports_on_every_development_set() {
    let Some(root) = trajectories::root() else { return };
    let config = LooprailConfig::for_profile(Profile::CodingAgent);
    let cases = host_steps::cases(&root, &config);
    let (mut with_events, mut stopped) = (0, 0);
    for case in &cases {
        let (events, stop) = drive(&config, &case.steps);
        assert_eq!(events, case.events, "{}: the same events, call for call", case.name);
        assert_eq!(stop, case.stop, "{}: the same stop", case.name);
        with_events += usize::from(!events.is_empty());
        stopped += usize::from(stop.is_some());
    }
    eprintln!("{} runs, {with_events} with events, {stopped} stopped", cases.len());
    assert!(cases.len() >= 800, "every development set is read ({} runs)", cases.len());
    assert!(with_events >= 50 && stopped >= 20, "the comparison covers the ladder and its stops");
}
