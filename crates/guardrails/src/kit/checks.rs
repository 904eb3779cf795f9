//! [`GuardKit`]: invariant checks for a guard stack, each returning a [`Violation`] that shows
//! the history and the decisions when it fails.

use std::fmt;

use looprail_loop_core::config::LoopConfig;
use looprail_loop_core::guard::Guard;

use super::history::{History, Step};
use super::trace::{Trace, drive, rank};
use crate::{GuardrailsConfig, default_stack};

/// A failed check: which, why, and the trace that shows it.
#[derive(Debug, Clone)]
pub struct Violation {
    /// The check that failed.
    pub check: &'static str,
    /// What went wrong.
    pub message: String,
    /// The history and every decision on it.
    pub trace: Trace,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{} failed: {}", self.check, self.message)?;
        write!(f, "{}", self.trace)
    }
}

/// An error, so `?` turns it into proptest's `TestCaseError` (which prints it).
impl std::error::Error for Violation {}

/// Checks for the guard stack `make` builds (a fresh one per check).
pub struct GuardKit {
    make: Box<dyn Fn() -> Vec<Box<dyn Guard>> + Send + Sync>,
    config: LoopConfig,
}

impl fmt::Debug for GuardKit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GuardKit").field("guards", &(self.make)().len()).finish()
    }
}

impl GuardKit {
    /// Checks for the stack `make` builds (your own guards included), under the default loop
    /// configuration.
    pub fn new(make: impl Fn() -> Vec<Box<dyn Guard>> + Send + Sync + 'static) -> Self {
        Self { make: Box::new(make), config: LoopConfig::default() }
    }

    /// Checks for looprail's stack built from `config` ([`default_stack`]).
    pub fn for_config(config: &GuardrailsConfig) -> Self {
        let config = config.clone();
        Self::new(move || default_stack(&config))
    }

    /// Uses this loop configuration (the ask-human tool's name, for one).
    #[must_use]
    pub fn with_loop_config(mut self, config: LoopConfig) -> Self {
        self.config = config;
        self
    }

    /// Drives `history` through a fresh stack.
    pub fn trace(&self, history: &History) -> Trace {
        drive(&mut (self.make)(), history, &self.config, 0)
    }

    fn fail(check: &'static str, message: impl Into<String>, trace: Trace) -> Result<(), Violation> {
        Err(Violation { check, message: message.into(), trace })
    }

    /// No decision at all (no event, no nudge, no stop) on a history without repetition.
    pub fn never_escalates(&self, history: &History) -> Result<(), Violation> {
        let trace = self.trace(history);
        match trace.steps.first() {
            Some(step) => {
                let message = format!("the stack acted at call #{}", step.call_index);
                Self::fail("never_escalates", message, trace)
            }
            None => Ok(()),
        }
    }

    /// Never stopped nor handed to a human (for work that progresses: edit → test cycles,
    /// polling whose output changes).
    pub fn never_stops(&self, history: &History) -> Result<(), Violation> {
        let trace = self.trace(history);
        match trace.handed_over_at() {
            Some((at, how)) => Self::fail("never_stops", format!("{how} at call #{at}"), trace),
            None => Ok(()),
        }
    }

    /// Stopped or handed to a human at or before the call with 0-based index `within - 1`
    /// (for an identical loop or a cycle with unchanged output).
    pub fn hands_to_human_within(&self, history: &History, within: usize) -> Result<(), Violation> {
        let trace = self.trace(history);
        match trace.handed_over_at() {
            Some((at, _)) if at < within => Ok(()),
            Some((at, how)) => Self::fail(
                "hands_to_human_within",
                format!("{how} only at call #{at}, wanted within {within} calls"),
                trace,
            ),
            None => Self::fail(
                "hands_to_human_within",
                format!("never handed over in {} calls", history.calls()),
                trace,
            ),
        }
    }

    /// Loop detections climb the ladder one level at a time: no directive before a nudge, no
    /// ask_human before a directive. (A stack that resets at user turns starts again from a
    /// nudge, which this allows.)
    pub fn never_skips_a_level(&self, history: &History) -> Result<(), Violation> {
        let trace = self.trace(history);
        let mut highest = 0u8;
        for (at, level) in trace.detections() {
            let Some(r) = rank(&level) else { continue };
            if r > highest + 1 {
                let message = format!("{level} at call #{at} after at most level {highest}");
                return Self::fail("never_skips_a_level", message, trace);
            }
            highest = highest.max(r);
        }
        Ok(())
    }

    /// Saving every guard's state after `split` steps and restoring it into a fresh stack
    /// gives the same decisions on the rest of the history.
    pub fn restores_at(&self, history: &History, split: usize) -> Result<(), Violation> {
        let split = split.min(history.steps.len());
        let whole = self.trace(history);
        let head = History::new(history.steps[..split].to_vec());
        let tail = History::new(history.steps[split..].to_vec());
        let mut first = (self.make)();
        drive(&mut first, &head, &self.config, 0);
        let mut second = (self.make)();
        for (guard, from) in second.iter_mut().zip(&first) {
            let saved = serde_json::to_string(&from.save_state()).unwrap_or_default();
            let state = serde_json::from_str(&saved).unwrap_or(serde_json::Value::Null);
            if let Err(error) = guard.load_state(state) {
                return Self::fail(
                    "restores_at",
                    format!("`{}` refused its own state: {error}", guard.name()),
                    whole,
                );
            }
        }
        let resumed = drive(&mut second, &tail, &self.config, head.calls());
        let expected: Vec<String> =
            whole.rendered().into_iter().filter(|line| call_of(line) >= head.calls()).collect();
        if resumed.rendered() == expected {
            Ok(())
        } else {
            let message =
                format!("after a restore at step {split} the decisions differ: {:?}", resumed.rendered());
            Self::fail("restores_at", message, whole)
        }
    }

    /// The order of argument keys (and JSON whitespace) never changes a decision.
    pub fn ignores_key_order(&self, history: &History) -> Result<(), Violation> {
        let whole = self.trace(history);
        let reordered = History::new(
            history
                .steps
                .iter()
                .map(|step| match step {
                    Step::Call { tool, arguments, output, is_error } => Step::Call {
                        tool: tool.clone(),
                        arguments: reversed_keys(arguments),
                        output: output.clone(),
                        is_error: *is_error,
                    },
                    Step::UserTurn => Step::UserTurn,
                })
                .collect(),
        );
        let other = self.trace(&reordered);
        if whole.shape() == other.shape() {
            Ok(())
        } else {
            Self::fail("ignores_key_order", format!("with keys reversed: {:?}", other.shape()), whole)
        }
    }

    /// Every check that holds for any history: the ladder never skips a level, a restore at
    /// `split` changes nothing, key order changes nothing.
    pub fn always(&self, history: &History, split: usize) -> Result<(), Violation> {
        self.never_skips_a_level(history)?;
        self.restores_at(history, split)?;
        self.ignores_key_order(history)
    }
}

fn call_of(line: &str) -> usize {
    line.split(':').next().and_then(|n| n.parse().ok()).unwrap_or(0)
}

/// The same arguments written with every object's keys in reverse order and spaced out;
/// text that is not JSON is left as it is.
fn reversed_keys(arguments: &str) -> String {
    fn write(value: &serde_json::Value, out: &mut String) {
        match value {
            serde_json::Value::Object(map) => {
                out.push_str("{ ");
                for (i, (k, v)) in map.iter().rev().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    out.push_str(&serde_json::Value::String(k.clone()).to_string());
                    out.push_str(": ");
                    write(v, out);
                }
                out.push_str(" }");
            }
            serde_json::Value::Array(items) => {
                out.push_str("[ ");
                for (i, v) in items.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    write(v, out);
                }
                out.push_str(" ]");
            }
            other => out.push_str(&other.to_string()),
        }
    }
    match serde_json::from_str::<serde_json::Value>(arguments) {
        Ok(value) => {
            let mut out = String::new();
            write(&value, &mut out);
            out
        }
        Err(_) => arguments.to_owned(),
    }
}
