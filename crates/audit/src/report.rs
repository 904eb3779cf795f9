//! The audit's output: a table per run and a summary, or JSON other tools parse.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Serialize;

pub use crate::run_report::{RunReport, StopKind, Tokens};
use crate::sets::{LoopCounts, SetReport};

/// Totals over all runs.
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    /// Runs audited.
    pub runs: usize,
    /// Tool calls in them.
    pub tool_calls: u64,
    /// Events by detector, then by level.
    pub detections: BTreeMap<String, BTreeMap<String, u64>>,
    /// Runs a loop guard would have stopped (not counting hand-offs to a human).
    pub runs_stopped: usize,
    /// Runs that would have been handed to a human.
    pub runs_handed_to_human: usize,
    /// The runs that loop, and how soon the guards answered them.
    pub loops: LoopCounts,
    /// Runs a budget or cap would have stopped (each with one fallback reply, F10).
    pub runs_stopped_by_limits: usize,
    /// Tool calls after the stop points: work a live run would not have done.
    pub tool_calls_saved: u64,
    /// Tokens of conversation after the stop points.
    pub tokens_saved_by_stopping: u64,
    /// Replies found repeating themselves (B14).
    pub degenerate_replies: usize,
    /// Bytes of those replies a live run would not have read (it cuts them where the
    /// repetition began).
    pub degenerate_bytes_cut: u64,
    /// The largest context seen, without and with compaction.
    pub peak_tokens: u64,
    /// The same with auto-compaction on.
    pub peak_tokens_with_compaction: u64,
    /// Audit speed.
    pub runs_per_second: f64,
}

/// A file the audit could not read, or read only in part.
#[derive(Debug, Clone, Serialize)]
pub struct FileError {
    /// The file.
    pub path: String,
    /// Why.
    pub error: String,
    /// True when the file's other runs (or its lines before a cut one) were audited.
    pub read_in_part: bool,
}

impl FileError {
    /// How the table and the page label it.
    pub fn label(&self) -> &'static str {
        if self.read_in_part { "read in part" } else { "not read" }
    }
}

/// Everything the audit found.
#[derive(Debug, Clone, Serialize)]
pub struct AuditReport {
    /// Per run.
    pub runs: Vec<RunReport>,
    /// Files that could not be read (the audit went on without them).
    pub errors: Vec<FileError>,
    /// Totals.
    pub summary: Summary,
    /// Per path given: the runs' lengths and the limits that would stop none of the runs that
    /// ended by themselves.
    pub sets: Vec<SetReport>,
}

impl AuditReport {
    pub(crate) fn new(
        runs: Vec<RunReport>,
        errors: Vec<FileError>,
        elapsed: Duration,
        paths: &[std::path::PathBuf],
    ) -> Self {
        let mut detections: BTreeMap<String, BTreeMap<String, u64>> = BTreeMap::new();
        for event in runs.iter().flat_map(|r| &r.events) {
            *detections.entry(event.detector.clone()).or_default().entry(event.level.clone()).or_default() +=
                1;
        }
        let stopped = |reason: &str| {
            runs.iter().filter(|r| r.stop_reason.as_deref().is_some_and(|s| s.starts_with(reason))).count()
        };
        let summary = Summary {
            runs: runs.len(),
            tool_calls: runs.iter().map(|r| r.tool_calls).sum(),
            detections,
            runs_stopped: stopped("loop_detected"),
            runs_handed_to_human: stopped("ask_human"),
            loops: LoopCounts::of(&runs),
            runs_stopped_by_limits: stopped("limit:"),
            tool_calls_saved: runs
                .iter()
                .filter_map(|r| r.stopped_at.map(|at| r.tool_calls.saturating_sub(at + 1)))
                .sum(),
            tokens_saved_by_stopping: runs.iter().map(|r| r.saved_tokens).sum(),
            degenerate_replies: runs.iter().map(|r| r.degenerate_replies.len()).sum(),
            degenerate_bytes_cut: runs
                .iter()
                .flat_map(|r| &r.degenerate_replies)
                .map(|d| d.read_bytes.saturating_sub(d.kept_bytes))
                .sum(),
            peak_tokens: runs.iter().map(|r| r.tokens.peak).max().unwrap_or(0),
            peak_tokens_with_compaction: runs
                .iter()
                .map(|r| r.tokens.peak_with_compaction)
                .max()
                .unwrap_or(0),
            runs_per_second: runs.len() as f64 / elapsed.as_secs_f64().max(1e-9),
        };
        let sets = crate::sets::per_path(&runs, paths);
        Self { runs, errors, summary, sets }
    }
}
