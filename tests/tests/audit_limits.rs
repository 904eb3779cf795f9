//! Issue 34 on the recorded runs: `looprail audit` with its defaults (the coding-agent profile,
//! the gateway's) stops no run the benchmark resolved by a limit, in any set; limits and loop
//! guards are reported apart. Prints each set's run lengths and the caps that spare its
//! finished runs (`-- --nocapture`), the figures of docs/guardrails.md.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;

use looprail::LooprailConfig;
use looprail::core::profile::Profile;
use looprail_audit::report::StopKind;
use looprail_tests::trajectories;

const SETS: [&str; 4] = [
    "swe-agent-deepseek-chat-v2",
    "swe-agent-deepseek-coder-v2",
    "openhands-claude-3.5-sonnet",
    "tau-bench-gpt-4o-airline",
];

#[test]
fn no_resolved_run_is_stopped_by_a_limit_with_the_defaults() {
    let Some(root) = trajectories::root() else { return };
    for name in SETS {
        let dir = root.join(name);
        let resolved: HashMap<String, bool> = trajectories::load_dir(&dir)
            .into_iter()
            .map(|run| (run.path.file_name().unwrap().to_string_lossy().into_owned(), run.resolved()))
            .collect();
        for profile in Profile::ALL {
            let config = LooprailConfig::for_profile(profile);
            let report = looprail_audit::audit(std::slice::from_ref(&dir), &config, false).unwrap();
            assert_eq!(report.runs.len(), resolved.len(), "{name}: every run audited");
            let cut: Vec<&str> = report
                .runs
                .iter()
                .filter(|run| run.stop_kind == Some(StopKind::Limit))
                .filter(|run| {
                    resolved[std::path::Path::new(&run.path).file_name().unwrap().to_str().unwrap()]
                })
                .map(|run| run.path.as_str())
                .collect();
            let set = &report.sets[0];
            eprintln!(
                "{name} ({}): {} runs, {} ended by themselves; longest stretch p50 {} / p90 {} / max {} turns; stopped by limits {} (resolved {}), by guards {}; an iteration cap of {} spares every finished run",
                profile.name(),
                set.runs,
                set.ended_by_themselves,
                set.stretch_turns.p50,
                set.stretch_turns.p90,
                set.stretch_turns.max,
                set.stopped_by_limits,
                cut.len(),
                set.stopped_by_guards,
                set.safe_turn_cap,
            );
            if profile == Profile::CodingAgent {
                assert!(cut.is_empty(), "{name}: resolved runs stopped by a limit: {cut:?}");
                assert_eq!(set.stopped_by_limits, 0, "{name}: the defaults stop no run by a limit");
            }
        }
    }
}
