//! How long a recorded run is, stretch by stretch (B16), and whether it ended by itself: what
//! the audit needs to show which limits would stop no good run.

use looprail::core::message::{Message, Role};
use serde::Serialize;

/// Tools whose call ends a run by the agent's own choice (SWE-agent's `submit`, OpenHands'
/// `finish`, Cline's and Roo-Code's `attempt_completion`, ...).
const FINISH_TOOLS: &[&str] =
    &["submit", "finish", "attempt_completion", "task_complete", "complete_task", "final_answer", "done"];

/// A run's length and ending.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct RunShape {
    /// Model turns in all.
    pub turns: u64,
    /// The longest stretch (the turns after one user message), in model turns.
    pub longest_stretch_turns: u64,
    /// The longest stretch in tool calls.
    pub longest_stretch_calls: u64,
    /// The run ended by itself: its last turn answers without a call, or calls a finishing tool
    /// (`submit`, `finish`, ...). A run a harness cut off (a budget of its own) did not.
    pub ended_by_itself: bool,
}

impl RunShape {
    /// The shape of `messages` (a user message that is not the harness's starts a stretch).
    ///
    /// ```
    /// use looprail::core::message::{Message, ToolCall};
    /// use looprail_audit::shape::RunShape;
    ///
    /// let call = |id: &str, name: &str| Message::assistant_with_calls(None, vec![ToolCall::new(id, name, "{}")]);
    /// let messages = vec![Message::user("fix it"), call("1", "bash"), call("2", "bash"), Message::user("and the docs"), call("3", "submit")];
    /// let shape = RunShape::of(&messages);
    /// assert_eq!((shape.turns, shape.longest_stretch_turns, shape.ended_by_itself), (3, 2, true));
    /// ```
    pub fn of(messages: &[Message]) -> Self {
        let mut shape = Self::default();
        let (mut turns, mut calls) = (0u64, 0u64);
        let mut last_assistant: Option<&Message> = None;
        for message in messages {
            match message.role {
                Role::User if !message.is_internal() => {
                    (turns, calls) = (0, 0);
                }
                Role::Assistant => {
                    shape.turns += 1;
                    turns += 1;
                    calls += message.tool_calls().count() as u64;
                    shape.longest_stretch_turns = shape.longest_stretch_turns.max(turns);
                    shape.longest_stretch_calls = shape.longest_stretch_calls.max(calls);
                    last_assistant = Some(message);
                }
                _ => {}
            }
        }
        shape.ended_by_itself = last_assistant.is_some_and(|m| match m.tool_calls().last() {
            None => true,
            Some(call) => FINISH_TOOLS.contains(&call.name.to_ascii_lowercase().as_str()),
        });
        shape
    }
}
