//! The todo nudge through a Stop hook: an agent that ends its turn while its own todo list still
//! has open items is asked to go on, at most `todo_nudge_cap` times (3) per stretch.
//!
//! The list is read from the agent's todo tool as its calls run: Claude Code's `TodoWrite`,
//! Qwen Code's `todo_write` and Gemini CLI's `write_todos`, each call replacing the whole list
//! (`{"todos": [{"content" | "description": …, "status": …}]}`). An item is open unless its
//! status is `completed`, `cancelled` or `done`.

use serde_json::Value;

use crate::event::ToolUse;
use crate::session::TAG;

/// The agents' todo tools.
const TODO_TOOLS: &[&str] = &["TodoWrite", "todo_write", "write_todos"];

/// The open items of a todo tool's call, or `None` when the call is not one.
pub(crate) fn open_items(call: &ToolUse) -> Option<Vec<String>> {
    if !TODO_TOOLS.contains(&call.tool.as_str()) {
        return None;
    }
    let arguments: Value = serde_json::from_str(&call.arguments).ok()?;
    let todos = arguments.get("todos")?.as_array()?;
    Some(
        todos
            .iter()
            .filter(|item| {
                let status = item.get("status").and_then(Value::as_str).unwrap_or("pending");
                !matches!(status, "completed" | "cancelled" | "done")
            })
            .map(|item| {
                let text = item.get("content").or_else(|| item.get("description")).and_then(Value::as_str);
                text.unwrap_or("(unnamed item)").to_owned()
            })
            .collect(),
    )
}

/// What the agent reads when it tries to stop with `open` items.
pub(crate) fn nudge(open: &[String]) -> String {
    let items: Vec<String> = open.iter().take(5).map(|i| format!("- {i}")).collect();
    format!(
        "{TAG} You are ending your turn, but your todo list still has {} open item(s):\n{}\n\
         Finish them, or mark them completed or cancelled if they no longer apply.",
        open.len(),
        items.join("\n")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(tool: &str, arguments: &str) -> ToolUse {
        ToolUse { tool: tool.into(), arguments: arguments.into(), id: None }
    }

    #[test]
    fn each_agents_todo_list_is_read() {
        let claude = call(
            "TodoWrite",
            r#"{"todos": [{"content": "write the test", "status": "completed", "activeForm": "Writing"},
                {"content": "fix the parser", "status": "in_progress", "activeForm": "Fixing"}]}"#,
        );
        assert_eq!(open_items(&claude), Some(vec!["fix the parser".to_owned()]));
        let gemini = call("write_todos", r#"{"todos": [{"description": "ship it", "status": "pending"}]}"#);
        assert_eq!(open_items(&gemini), Some(vec!["ship it".to_owned()]));
        assert_eq!(open_items(&call("Bash", r#"{"command": "ls"}"#)), None);
        assert_eq!(open_items(&call("todo_write", "not json")), None);
    }
}
