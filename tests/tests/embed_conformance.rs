//! The in-process guard (`looprail_embed::AgentGuard`, behind the Python and Node bindings)
//! fed the development trajectories step by step, as a host reports them, reports the same
//! guard events, call for call, and stops where `looprail audit` stops (issue 69, B18).

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::sync::Arc;

use looprail::LooprailConfig;
use looprail::compaction::MemoCounter;
use looprail::core::context::TokenCounter;
use looprail::core::profile::Profile;
use looprail_audit::steps::{HostStep, steps};
use looprail_embed::{Action, AgentGuard, Call, GuardEvent, Reply};
use looprail_tests::trajectories;

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
    let counter = Arc::new(MemoCounter::new(Arc::new(looprail::compaction::TiktokenCounter::default())));
    let mut runs = 0;
    let mut with_events = 0;
    let mut stopped = 0;
    for set in std::fs::read_dir(&root).unwrap() {
        let set = set.unwrap().path();
        if !set.is_dir() {
            continue;
        }
        let mut files: Vec<PathBuf> =
            std::fs::read_dir(&set).unwrap().map(|e| e.unwrap().path()).filter(|p| p.is_file()).collect();
        files.sort();
        for file in files {
            let Ok((found, _)) = looprail_audit::load::read(&file) else { continue };
            for run in found {
                let name = file.display().to_string();
                let expected = looprail_audit::simulate::run(
                    &name,
                    run.messages.clone(),
                    run.logged_peak,
                    &run.timeline,
                    &config,
                    &counter,
                );
                let mut messages = run.messages;
                config.audit.error_patterns.classify(&mut messages);
                let tokens: Vec<u64> = messages.iter().map(|m| counter.count_message(m)).collect();
                let (events, stop) = drive(&config, &steps(&messages, &tokens, &run.timeline));
                assert_eq!(events, expected.events, "{name}: the same events, call for call");
                assert_eq!(stop, expected.stop_reason, "{name}: the same stop");
                runs += 1;
                with_events += usize::from(!events.is_empty());
                stopped += usize::from(stop.is_some());
            }
        }
    }
    eprintln!("{runs} runs, {with_events} with events, {stopped} stopped");
    assert!(runs >= 800, "every development set is read ({runs} runs)");
    assert!(with_events >= 50 && stopped >= 20, "the comparison covers the ladder and its stops");
}
