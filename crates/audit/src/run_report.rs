//! One run's result: what the guards did, where a live run would have stopped, its context
//! sizes and its shape.

use looprail::guardrails::replay::{DegenerateFound, LoopTiming, ReplayEvent, ReplayReport};
use serde::Serialize;

use crate::shape::RunShape;

/// Context sizes of one run.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Tokens {
    /// The conversation's largest size.
    pub peak: u64,
    /// Its largest size with auto-compaction on.
    pub peak_with_compaction: u64,
    /// How many times the recorded agent compacted its own history (the peaks are measured
    /// from each compaction on).
    pub compactions_in_log: u64,
    /// The largest prompt the log records the provider counting (its own usage records, in
    /// the provider's tokens, which need not be cl100k's), when the log has any.
    pub logged_peak: Option<u64>,
}

/// One run's result, in the exact JSON shape the audit documents.
#[derive(Debug, Clone, Serialize)]
pub struct RunReport {
    /// The file.
    pub path: String,
    /// Tool calls in the log.
    pub tool_calls: u64,
    /// Guard events.
    pub events: Vec<ReplayEvent>,
    /// Call index at which a live run would have been stopped or handed to a human.
    pub stopped_at: Option<u64>,
    /// Why.
    pub stop_reason: Option<String>,
    /// A budget or cap stopped it: a live run would have made one fallback call for its reply
    /// (F10).
    pub fallback_reply: bool,
    /// What stopped it: `guard` (a loop detector, the ladder's hand-off to a human) or `limit`
    /// (a budget, a time limit, the iteration cap); `None` when nothing would have.
    pub stop_kind: Option<StopKind>,
    /// Context sizes.
    pub tokens: Tokens,
    /// Its length, stretch by stretch, and whether it ended by itself.
    pub shape: RunShape,
    /// Replies that repeated one block over and over (B14): where, and how much of each a live
    /// run would have kept.
    pub degenerate_replies: Vec<DegenerateFound>,
    /// When the run loops (10 calls in a row with at most 2 distinct actions): where the loop
    /// starts and how many calls later the guards first answered it and stopped it.
    #[serde(rename = "loop")]
    pub loop_timing: Option<LoopTiming>,
    #[serde(skip)]
    pub(crate) saved_tokens: u64,
}

/// What kind of stop a live run would have met.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StopKind {
    /// A loop guard: a detector's stop, or the ladder handing the run to a human.
    Guard,
    /// A limit: a budget, a time limit or the iteration cap (answered with a fallback reply).
    Limit,
}

impl RunReport {
    pub(crate) fn new(
        name: &str,
        replay: ReplayReport,
        loop_timing: Option<LoopTiming>,
        tokens: Tokens,
        shape: RunShape,
        saved_tokens: u64,
    ) -> Self {
        let stop_kind = replay
            .stop_reason
            .as_deref()
            .map(|reason| if reason.starts_with("limit:") { StopKind::Limit } else { StopKind::Guard });
        Self {
            path: name.to_owned(),
            tool_calls: replay.tool_calls,
            events: replay.events,
            stopped_at: replay.stopped_at,
            stop_reason: replay.stop_reason,
            fallback_reply: replay.fallback_reply,
            stop_kind,
            tokens,
            shape,
            degenerate_replies: replay.degenerate_replies,
            loop_timing,
            saved_tokens,
        }
    }
}
