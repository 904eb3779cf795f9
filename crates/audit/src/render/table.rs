//! The report as plain text: one row per run (calls, events, where it would have stopped,
//! its context peak with and without compaction), then the totals.

use std::path::Path;

use looprail::core::watch::WatchedPart;
use looprail::guardrails::replay::DegenerateFound;

use crate::report::{AuditReport, StopKind};
use crate::sets::{LoopCounts, SetReport, Spread};

/// The report as a table of runs and a summary, for the terminal.
pub fn render(report: &AuditReport) -> String {
    let mut out = format!(
        "{:<52} {:>6} {:>6} {:>18} {:>22} {:>9} {:>9}\n",
        "run", "calls", "events", "guard stop", "limit stop", "peak", "compacted"
    );
    for run in &report.runs {
        let name =
            Path::new(&run.path).file_name().map_or(run.path.clone(), |n| n.to_string_lossy().into_owned());
        let stop = |kind: StopKind| match (run.stop_kind, run.stopped_at) {
            (Some(k), Some(at)) if k == kind => {
                let reason = run.stop_reason.as_deref().unwrap_or("");
                format!("{at} ({})", reason.strip_prefix("limit:").unwrap_or(reason))
            }
            _ => "-".to_owned(),
        };
        out.push_str(&format!(
            "{:<52} {:>6} {:>6} {:>18} {:>22} {:>9} {:>9}\n",
            name.chars().take(52).collect::<String>(),
            run.tool_calls,
            run.events.len(),
            stop(StopKind::Guard),
            stop(StopKind::Limit),
            run.tokens.peak,
            run.tokens.peak_with_compaction
        ));
    }
    let s = &report.summary;
    out.push_str(&format!(
        "\n{} runs, {} tool calls; by the loop guards: handed to a human {}, stopped {}; by limits: stopped {}; tool calls saved: {}, tokens saved by stopping: {}\n",
        s.runs,
        s.tool_calls,
        s.runs_handed_to_human,
        s.runs_stopped,
        s.runs_stopped_by_limits,
        s.tool_calls_saved,
        s.tokens_saved_by_stopping
    ));
    out.push_str(&format!(
        "peak context: {} tokens, {} with compaction\n",
        s.peak_tokens, s.peak_tokens_with_compaction
    ));
    if s.degenerate_replies > 0 {
        out.push_str(&format!(
            "degenerate replies: {} (a live run would have cut {} bytes of them)\n",
            s.degenerate_replies, s.degenerate_bytes_cut
        ));
    }
    for run in report.runs.iter().filter(|r| !r.degenerate_replies.is_empty()) {
        for found in &run.degenerate_replies {
            out.push_str(&format!("  {}: {}\n", run.path, degenerate(found)));
        }
    }
    for (detector, levels) in &s.detections {
        let levels: Vec<String> = levels.iter().map(|(l, n)| format!("{l} {n}")).collect();
        out.push_str(&format!("  {detector}: {}\n", levels.join(", ")));
    }
    out.push_str(&loops(&s.loops));
    for run in &report.runs {
        if let Some(timing) = &run.loop_timing {
            let after = |offset: Option<i64>| offset.map_or("never".to_owned(), |o| format!("{o:+}"));
            out.push_str(&format!(
                "  {}: loops from call {}; first answered {}, stopped {}\n",
                run.path,
                timing.start,
                after(timing.first_event_after),
                after(timing.stopped_after)
            ));
        }
    }
    for set in &report.sets {
        out.push_str(&sets(set));
    }
    for error in &report.errors {
        out.push_str(&format!("{}: {}: {}\n", error.label(), error.path, error.error));
    }
    out.push_str(&format!("{:.0} runs/s\n", s.runs_per_second));
    out
}

/// The loop counts in words.
fn loops(counts: &LoopCounts) -> String {
    format!(
        "runs that loop (10 calls in a row, at most 2 distinct): {}; answered within 5 calls of the loop's start: {}; stopped within 10: {}\n",
        counts.runs, counts.noticed_within_5, counts.stopped_within_10
    )
}

/// One degenerate reply in words.
pub(crate) fn degenerate(found: &DegenerateFound) -> String {
    let part = match found.part {
        WatchedPart::Text => "its text".to_owned(),
        WatchedPart::Arguments { index } => format!("the arguments of its call {index}"),
    };
    format!(
        "turn {}: {part} repeated a {}-byte block ({} copies read); {} of {} bytes kept",
        found.turn, found.period, found.repeats, found.kept_bytes, found.read_bytes
    )
}

fn spread(s: &Spread) -> String {
    format!("p50 {} / p90 {} / p99 {} / max {}", s.p50, s.p90, s.p99, s.max)
}

/// One set's lengths and the limits that spare its finished runs.
fn sets(set: &SetReport) -> String {
    format!(
        "set {}: {} runs, {} ended by themselves\n  turns per run: {}\n  longest stretch, turns: {}; tool calls: {}\n  \
         stopped by loop guards: {}; by limits: {} (of them ended by themselves: {})\n  {}  \
         limits that stop none of the runs that ended by themselves: an iteration cap of at least {} turns per stretch, a tool-call budget of at least {}\n",
        set.path,
        set.runs,
        set.ended_by_themselves,
        spread(&set.turns),
        spread(&set.stretch_turns),
        spread(&set.stretch_calls),
        set.stopped_by_guards,
        set.stopped_by_limits,
        set.limits_cut_finished_runs,
        loops(&set.loops),
        set.safe_turn_cap,
        set.safe_tool_call_budget,
    )
}
