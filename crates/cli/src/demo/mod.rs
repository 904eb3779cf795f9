//! The demo scenarios: each a scripted run with the outcome it must reach.

mod crash_resume;
mod guard_scenarios;
mod harness;
mod loop_scenarios;

use std::process::ExitCode;
use std::time::Duration;

use crash_resume::crash_resume;
use guard_scenarios::{context_pressure, rag_dedup, thrash_ladder, tool_retries};
use harness::Scenario;
use loop_scenarios::{
    bad_tool_call, budget_stop, cancellation, continuation, empty_reply, human_pause, iteration_ceiling,
    normal,
};

const SCENARIOS: &[Scenario] = &[
    Scenario { name: "normal", what: "a tool call, then the answer", run: normal },
    Scenario { name: "budget", what: "tool-call budget stop with its fallback reply", run: budget_stop },
    Scenario { name: "max-tokens", what: "a truncated reply continued", run: continuation },
    Scenario { name: "empty-reply", what: "an empty model reply", run: empty_reply },
    Scenario { name: "ceiling", what: "the 50-iteration ceiling", run: iteration_ceiling },
    Scenario { name: "bad-call", what: "unknown tool and invalid JSON arguments", run: bad_tool_call },
    Scenario { name: "cancel", what: "cooperative cancellation", run: cancellation },
    Scenario { name: "ask-human", what: "the model asks a human", run: human_pause },
    Scenario {
        name: "thrash",
        what: "a thrashing model walked up the ladder to ask_human",
        run: thrash_ladder,
    },
    Scenario { name: "rag-dedup", what: "repeated retrievals deduplicated and cited", run: rag_dedup },
    Scenario {
        name: "tool-retry",
        what: "a transient failure retried only for the idempotent tool",
        run: tool_retries,
    },
    Scenario { name: "compaction", what: "context pressure compacted", run: context_pressure },
    Scenario {
        name: "crash-resume",
        what: "a crash mid-tool, resumed from the SQLite file",
        run: crash_resume,
    },
];

/// Runs every scenario and prints the summary table on stdout.
pub fn run(quiet: bool) -> ExitCode {
    let started = std::time::Instant::now();
    let mut rows = Vec::new();
    let mut failures = 0;
    for scenario in SCENARIOS {
        if !quiet {
            eprintln!("== {}: {}", scenario.name, scenario.what);
        }
        let row = match (scenario.run)(quiet) {
            Ok(check) => {
                if !check.ok {
                    failures += 1;
                }
                let o = &check.outcome;
                format!(
                    "{:<12} {:<6} {:<16} {:>5} {:>6} {:>7}  {}",
                    scenario.name,
                    if check.ok { "ok" } else { "FAILED" },
                    format!("{:?}", o.state),
                    o.turns,
                    o.tool_calls,
                    o.usage.total(),
                    check.note
                )
            }
            Err(error) => {
                failures += 1;
                format!("{:<12} {:<6} {error}", scenario.name, "ERROR")
            }
        };
        rows.push(row);
    }
    println!(
        "{:<12} {:<6} {:<16} {:>5} {:>6} {:>7}  note",
        "scenario", "result", "state", "turns", "tools", "tokens"
    );
    for row in rows {
        println!("{row}");
    }
    let elapsed = started.elapsed();
    println!(
        "{} of {} scenarios behaved as expected in {:.1?}",
        SCENARIOS.len() - failures,
        SCENARIOS.len(),
        Duration::from_millis(u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX))
    );
    if failures == 0 { ExitCode::SUCCESS } else { ExitCode::FAILURE }
}
