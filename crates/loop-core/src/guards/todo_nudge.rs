//! The todo nudge cap (F14).

use serde::{Deserialize, Serialize};

use crate::engine::tool_calls::parse_arguments;
use crate::event::Event;
use crate::guard::{Decision, Guard, GuardStateError, TurnView, state_from_value, state_to_value};
use crate::message::{Message, ToolCall, ToolResult};

/// The todo tool this guard watches by default. Its arguments are
/// `{"todos": [{"content": "...", "status": "pending" | "in_progress" | "completed" | "cancelled"}]}`,
/// each call replacing the whole list.
pub const TODO_TOOL: &str = "todo_write";

/// When the model says it is done while its todo list has open items, sends one nudge per
/// attempt, at most `cap` times per user turn, then accepts the answer (F14). The list is read
/// from successful calls of the todo tool as they happen, so finishing costs O(1).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TodoNudge {
    tool: String,
    cap: u32,
    nudges: u32,
    open: Vec<String>,
}

impl TodoNudge {
    /// Watches [`TODO_TOOL`] with the given cap.
    pub fn new(cap: u32) -> Self {
        Self { tool: TODO_TOOL.to_owned(), cap, nudges: 0, open: Vec::new() }
    }

    /// Watches another todo tool with the same argument shape.
    #[must_use]
    pub fn with_tool(mut self, tool: impl Into<String>) -> Self {
        self.tool = tool.into();
        self
    }

    /// The open items as last written.
    pub fn open_items(&self) -> &[String] {
        &self.open
    }

    fn read_list(call: &ToolCall) -> Option<Vec<String>> {
        let args = parse_arguments(call).ok()?;
        let todos = args.get("todos")?.as_array()?;
        Some(
            todos
                .iter()
                .filter(|item| {
                    let status = item.get("status").and_then(|s| s.as_str()).unwrap_or("pending");
                    !matches!(status, "completed" | "cancelled" | "done")
                })
                .map(|item| {
                    item.get("content").and_then(|c| c.as_str()).unwrap_or("(unnamed item)").to_owned()
                })
                .collect(),
        )
    }
}

impl Guard for TodoNudge {
    fn name(&self) -> &str {
        "todo_nudge"
    }

    fn after_tools(
        &mut self,
        _view: &TurnView<'_>,
        calls: &[ToolCall],
        results: &[ToolResult],
    ) -> Vec<Decision> {
        for (call, result) in calls.iter().zip(results) {
            if call.name == self.tool
                && !result.is_error
                && let Some(open) = Self::read_list(call)
            {
                self.open = open;
            }
        }
        Vec::new()
    }

    fn at_finish(&mut self, _view: &TurnView<'_>, _text: &str) -> Vec<Decision> {
        if self.open.is_empty() || self.nudges >= self.cap {
            return Vec::new();
        }
        self.nudges += 1;
        let items = self.open.iter().take(5).map(|i| format!("- {i}")).collect::<Vec<_>>().join("\n");
        let text = format!(
            "You said you are done, but your todo list still has {} open item(s):\n{items}\n\
             Finish them, or mark them completed or cancelled with `{}` if they no longer apply.",
            self.open.len(),
            self.tool
        );
        vec![
            Decision::Inject(Message::internal_user("todo_nudge", text)),
            Decision::Emit(Event::GuardIntervened {
                guard: "todo_nudge".into(),
                action: format!("nudge {}", self.nudges),
            }),
        ]
    }

    fn on_user_turn(&mut self) {
        self.nudges = 0;
    }

    fn save_state(&self) -> serde_json::Value {
        state_to_value(self)
    }

    fn load_state(&mut self, state: serde_json::Value) -> Result<(), GuardStateError> {
        *self = state_from_value("todo_nudge", state)?;
        Ok(())
    }
}
