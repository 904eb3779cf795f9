//! The report as plain text: one row per run (calls, events, where it would have stopped,
//! its context peak with and without compaction), then the totals.

use std::path::Path;

use crate::report::AuditReport;

/// The report as a table of runs and a summary, for the terminal.
pub fn render(report: &AuditReport) -> String {
    let mut out = format!(
        "{:<58} {:>6} {:>6} {:>10} {:>9} {:>9}\n",
        "run", "calls", "events", "stopped at", "peak", "compacted"
    );
    for run in &report.runs {
        let name =
            Path::new(&run.path).file_name().map_or(run.path.clone(), |n| n.to_string_lossy().into_owned());
        let stopped = run
            .stopped_at
            .map_or("-".to_owned(), |at| format!("{at} ({})", run.stop_reason.as_deref().unwrap_or("")));
        out.push_str(&format!(
            "{:<58} {:>6} {:>6} {:>10} {:>9} {:>9}\n",
            name.chars().take(58).collect::<String>(),
            run.tool_calls,
            run.events.len(),
            stopped,
            run.tokens.peak,
            run.tokens.peak_with_compaction
        ));
    }
    let s = &report.summary;
    out.push_str(&format!(
        "\n{} runs, {} tool calls; handed to a human: {}, stopped: {}; tool calls saved: {}, tokens saved by stopping: {}\n",
        s.runs, s.tool_calls, s.runs_handed_to_human, s.runs_stopped, s.tool_calls_saved, s.tokens_saved_by_stopping
    ));
    out.push_str(&format!(
        "peak context: {} tokens, {} with compaction\n",
        s.peak_tokens, s.peak_tokens_with_compaction
    ));
    for (detector, levels) in &s.detections {
        let levels: Vec<String> = levels.iter().map(|(l, n)| format!("{l} {n}")).collect();
        out.push_str(&format!("  {detector}: {}\n", levels.join(", ")));
    }
    for error in &report.errors {
        out.push_str(&format!("{}: {}: {}\n", error.label(), error.path, error.error));
    }
    out.push_str(&format!("{:.0} runs/s\n", s.runs_per_second));
    out
}
