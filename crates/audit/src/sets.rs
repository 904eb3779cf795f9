//! Per path given to the audit (a set of runs): how long the runs are, stretch by stretch, and
//! the limits that would stop none of the runs that ended by themselves (B16). A limit that
//! ends good work does as much harm as a loop guard that does; this is how to size one on your
//! own logs.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::run_report::{RunReport, StopKind};

/// Nearest-rank percentiles of a list of counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Spread {
    /// The median.
    pub p50: u64,
    /// The 90th percentile.
    pub p90: u64,
    /// The 99th percentile.
    pub p99: u64,
    /// The largest.
    pub max: u64,
}

impl Spread {
    /// The spread of `values` (all zero when there are none).
    ///
    /// ```
    /// use looprail_audit::sets::Spread;
    ///
    /// let spread = Spread::of((1..=100).collect());
    /// assert_eq!((spread.p50, spread.p90, spread.p99, spread.max), (50, 90, 99, 100));
    /// ```
    pub fn of(mut values: Vec<u64>) -> Self {
        values.sort_unstable();
        let at = |q: usize| -> u64 {
            if values.is_empty() {
                return 0;
            }
            // Nearest rank: the smallest value with at least q% of the values at or below it.
            let rank = (q * values.len()).div_ceil(100).max(1);
            values[rank - 1]
        };
        Self { p50: at(50), p90: at(90), p99: at(99), max: values.last().copied().unwrap_or(0) }
    }
}

/// How soon the guards answered the runs that loop.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct LoopCounts {
    /// Runs that loop (10 calls in a row with at most 2 distinct actions).
    pub runs: usize,
    /// Of those, runs the guards answered (a nudge or more) within 5 calls of the loop's start.
    pub noticed_within_5: usize,
    /// Of those, runs stopped or handed to a human within 10 calls of the loop's start.
    pub stopped_within_10: usize,
}

impl LoopCounts {
    /// The counts over `runs`.
    pub fn of<'a>(runs: impl IntoIterator<Item = &'a RunReport>) -> Self {
        let mut counts = Self::default();
        for timing in runs.into_iter().filter_map(|r| r.loop_timing.as_ref()) {
            counts.runs += 1;
            counts.noticed_within_5 += usize::from(timing.noticed_within(5));
            counts.stopped_within_10 += usize::from(timing.stopped_within(10));
        }
        counts
    }
}

/// One set's runs.
#[derive(Debug, Clone, Serialize)]
pub struct SetReport {
    /// The path given.
    pub path: String,
    /// Runs read under it.
    pub runs: usize,
    /// Those that ended by themselves (an answer, or a finishing call such as `submit`).
    pub ended_by_themselves: usize,
    /// Model turns per run.
    pub turns: Spread,
    /// Model turns of each run's longest stretch.
    pub stretch_turns: Spread,
    /// Tool calls of each run's longest stretch.
    pub stretch_calls: Spread,
    /// Runs a loop guard would have stopped or handed to a human.
    pub stopped_by_guards: usize,
    /// The runs that loop, and how soon the guards answered them.
    pub loops: LoopCounts,
    /// Runs a limit would have stopped.
    pub stopped_by_limits: usize,
    /// Of those, runs that ended by themselves: good work a limit would have cut.
    pub limits_cut_finished_runs: usize,
    /// The smallest iteration cap (model turns per stretch) that stops none of the runs that
    /// ended by themselves: their longest stretch plus one.
    pub safe_turn_cap: u64,
    /// The smallest tool-call budget per stretch that stops none of them.
    pub safe_tool_call_budget: u64,
}

/// The set each run belongs to: the first path given that holds it.
pub fn per_path(runs: &[RunReport], paths: &[PathBuf]) -> Vec<SetReport> {
    paths
        .iter()
        .map(|path| {
            let members: Vec<&RunReport> = runs.iter().filter(|run| holds(path, &run.path)).collect();
            set(path, &members)
        })
        .collect()
}

/// Whether the run named `name` (a path, with `#id` for a file of several runs) is under `path`.
fn holds(path: &Path, name: &str) -> bool {
    let file = name.rsplit_once('#').map_or(name, |(file, _)| file);
    Path::new(file).starts_with(path) || Path::new(name).starts_with(path)
}

fn set(path: &Path, runs: &[&RunReport]) -> SetReport {
    let finished: Vec<&&RunReport> = runs.iter().filter(|r| r.shape.ended_by_itself).collect();
    let by = |kind: StopKind| runs.iter().filter(|r| r.stop_kind == Some(kind)).count();
    SetReport {
        path: path.display().to_string(),
        runs: runs.len(),
        ended_by_themselves: finished.len(),
        turns: Spread::of(runs.iter().map(|r| r.shape.turns).collect()),
        stretch_turns: Spread::of(runs.iter().map(|r| r.shape.longest_stretch_turns).collect()),
        stretch_calls: Spread::of(runs.iter().map(|r| r.shape.longest_stretch_calls).collect()),
        stopped_by_guards: by(StopKind::Guard),
        loops: LoopCounts::of(runs.iter().copied()),
        stopped_by_limits: by(StopKind::Limit),
        limits_cut_finished_runs: finished.iter().filter(|r| r.stop_kind == Some(StopKind::Limit)).count(),
        safe_turn_cap: finished.iter().map(|r| r.shape.longest_stretch_turns).max().unwrap_or(0) + 1,
        safe_tool_call_budget: finished.iter().map(|r| r.shape.longest_stretch_calls).max().unwrap_or(0) + 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Percentiles are values of the list, in order.
        #[test]
        fn a_spread_is_ordered_and_drawn_from_the_values(values in prop::collection::vec(0u64..1_000, 1..200)) {
            let s = Spread::of(values.clone());
            prop_assert!(s.p50 <= s.p90 && s.p90 <= s.p99 && s.p99 <= s.max);
            for v in [s.p50, s.p90, s.p99, s.max] {
                prop_assert!(values.contains(&v));
            }
        }
    }

    #[test]
    fn a_run_belongs_to_the_path_that_holds_it() {
        assert!(holds(Path::new("/logs/a"), "/logs/a/x.json"));
        assert!(holds(Path::new("/logs/a"), "/logs/a/out.jsonl#task-1"));
        assert!(!holds(Path::new("/logs/a"), "/logs/ab/x.json"));
        assert!(holds(Path::new("/logs/a/x.json"), "/logs/a/x.json"));
    }
}
