//! Where a recorded run loops, and how soon the guards answered it: the figures behind "every
//! loop noticed within 5 calls of its start and stopped within 10".
//!
//! A run *loops* when some 10 consecutive tool calls hold at most 2 distinct actions (tool and
//! canonical arguments): one call repeated, or two alternating. The loop starts at the first
//! call of the first such window.

use serde::Serialize;

use looprail_loop_core::message::Message;

use super::{ReplayEvent, ReplayReport};
use crate::signature::CallSignature;

/// Calls in the window a loop fills.
pub const LOOP_WINDOW: usize = 10;
/// Distinct actions at most in such a window.
pub const LOOP_DISTINCT: usize = 2;
/// Event levels that are the guards answering a loop (a reflection or a recovery is not).
pub const ANSWER_LEVELS: [&str; 4] = ["nudge", "directive", "ask_human", "stop"];

/// The index of the first call of the first window of [`LOOP_WINDOW`] calls holding at most
/// [`LOOP_DISTINCT`] distinct actions, if the run has one.
///
/// ```
/// use looprail_guardrails::replay::loop_start;
/// use looprail_loop_core::message::{Message, ToolCall};
///
/// let call = |i: usize, command: &str| {
///     Message::assistant_with_calls(None, vec![ToolCall::new(format!("c{i}"), "bash", format!(r#"{{"command": "{command}"}}"#))])
/// };
/// let mut messages: Vec<Message> = (0..3).map(|i| call(i, &format!("ls d{i}"))).collect();
/// messages.extend((3..13).map(|i| call(i, "make")));
/// // `ls d2` and nine calls of make: ten calls, two distinct.
/// assert_eq!(loop_start(&messages), Some(2));
/// assert_eq!(loop_start(&messages[..11]), None, "ls d2 and eight calls of make are not");
/// ```
pub fn loop_start(messages: &[Message]) -> Option<u64> {
    let calls: Vec<u64> = messages
        .iter()
        .flat_map(Message::tool_calls)
        .map(|c| CallSignature::of(&c.name, &c.arguments).call)
        .collect();
    let mut distinct = Vec::with_capacity(LOOP_WINDOW);
    calls
        .windows(LOOP_WINDOW)
        .position(|window| {
            distinct.clear();
            distinct.extend_from_slice(window);
            distinct.sort_unstable();
            distinct.dedup();
            distinct.len() <= LOOP_DISTINCT
        })
        .map(|at| at as u64)
}

/// A looping run: where its loop starts, and where the guards first answered it and stopped it
/// (or handed it to a human), also counted in calls from the loop's start (negative: before).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct LoopTiming {
    /// The loop's first call.
    pub start: u64,
    /// The call of the first nudge, directive, hand-over or stop.
    pub first_event: Option<u64>,
    /// The call at which the run was stopped or handed to a human.
    pub stopped: Option<u64>,
    /// `first_event - start`.
    pub first_event_after: Option<i64>,
    /// `stopped - start`.
    pub stopped_after: Option<i64>,
}

impl LoopTiming {
    /// The timing of `report`'s answer to the loop in `messages`, if they loop.
    pub fn of(messages: &[Message], report: &ReplayReport) -> Option<Self> {
        let start = loop_start(messages)?;
        let first_event = report
            .events
            .iter()
            .find(|e| ANSWER_LEVELS.contains(&e.level.as_str()))
            .map(|e: &ReplayEvent| e.call_index);
        let after = |at: u64| at as i64 - start as i64;
        Some(Self {
            start,
            first_event,
            stopped: report.stopped_at,
            first_event_after: first_event.map(after),
            stopped_after: report.stopped_at.map(after),
        })
    }

    /// Answered within `calls` of the loop's start (a nudge or more).
    pub fn noticed_within(&self, calls: i64) -> bool {
        self.first_event_after.is_some_and(|a| a <= calls)
    }

    /// Stopped or handed to a human within `calls` of the loop's start.
    pub fn stopped_within(&self, calls: i64) -> bool {
        self.stopped_after.is_some_and(|a| a <= calls)
    }
}
