//! [`Log`]: one file's text as the formats see it, each parsed form made once, when a format
//! first asks for it.

use std::cell::OnceCell;

use serde_json::Value;

/// The lines of a JSONL log that are JSON, and the (1-based) numbers of those that are not: a
/// log written by a process that also printed to it (a Node stack trace in a Claude Code log)
/// is read from its other lines, and the report says which were skipped.
#[derive(Debug, Default)]
pub struct JsonLines {
    /// The lines that are JSON, in order.
    pub values: Vec<Value>,
    /// The (1-based) number of each of those lines.
    pub numbers: Vec<usize>,
    /// The numbers of the non-empty lines that are not.
    pub skipped: Vec<usize>,
}

/// A log's text and its parsed forms.
#[derive(Debug)]
pub struct Log<'a> {
    text: &'a str,
    document: OnceCell<Option<Value>>,
    lines: OnceCell<JsonLines>,
    agent_keys: OnceCell<bool>,
    chat_error: OnceCell<String>,
}

impl<'a> Log<'a> {
    /// A log of `text`.
    pub fn new(text: &'a str) -> Self {
        Self {
            text,
            document: OnceCell::new(),
            lines: OnceCell::new(),
            agent_keys: OnceCell::new(),
            chat_error: OnceCell::new(),
        }
    }

    /// The text as it is.
    pub fn text(&self) -> &'a str {
        self.text
    }

    /// The text without surrounding whitespace.
    pub fn trimmed(&self) -> &'a str {
        self.text.trim()
    }

    /// The whole text as one JSON value, or `None` when it is not one (JSONL, say).
    pub fn document(&self) -> Option<&Value> {
        self.document.get_or_init(|| serde_json::from_str(self.trimmed()).ok()).as_ref()
    }

    /// The text as JSONL: every non-empty line parsed, those that are not JSON skipped and
    /// counted.
    pub fn lines(&self) -> &JsonLines {
        self.lines.get_or_init(|| {
            let mut lines = JsonLines::default();
            for (index, line) in self.text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
                match serde_json::from_str::<Value>(line) {
                    Ok(value) => {
                        lines.values.push(value);
                        lines.numbers.push(index + 1);
                    }
                    Err(_) => lines.skipped.push(index + 1),
                }
            }
            lines
        })
    }

    /// The lines skipped so far (empty when no format read the log as JSONL).
    pub fn skipped_lines(&self) -> &[usize] {
        self.lines.get().map_or(&[], |lines| lines.skipped.as_slice())
    }

    /// Whether the text names a key only agent trajectories have: `"trajectory"` (SWE-agent),
    /// `"history"` (OpenHands) or `"trajectory_format"` (mini-swe-agent), found in one pass
    /// over it (a chat log holds none, and is read to its end to find that out): all hold `ory`.
    pub fn names_agent_keys(&self) -> bool {
        *self.agent_keys.get_or_init(|| names_agent_keys(self.trimmed().as_bytes()))
    }

    /// Why the chat reader could not read the log, once it has tried: the first part of the
    /// error when no format can.
    pub fn chat_error(&self) -> Option<&str> {
        self.chat_error.get().map(String::as_str)
    }

    /// Records why the chat reader could not read the log.
    pub fn set_chat_error(&self, error: String) {
        let _ = self.chat_error.set(error);
    }

    /// Whether the log looks like an agent's JSONL (Claude Code, a Codex rollout or `codex
    /// exec --json`): two non-empty lines or more, the first that opens an object (lines of
    /// other text before it, such as a stack trace, are skipped) a JSON object with a `type` (or
    /// a Codex rollout's metadata line of 2025). Cheap checks first: a JSON document (one line
    /// or pretty-printed, whose first line is no whole object) is not parsed here.
    pub fn is_agent_jsonl(&self, legacy_meta: impl Fn(&Value) -> bool) -> bool {
        let mut non_empty = self.text.lines().filter(|l| !l.trim().is_empty());
        let (Some(_), Some(_)) = (non_empty.next(), non_empty.next()) else { return false };
        let Some(first) = self.text.lines().find(|l| l.trim_start().starts_with('{')) else { return false };
        if !(first.contains("\"type\"") || first.contains("\"timestamp\"")) {
            return false;
        }
        let Ok(first) = serde_json::from_str::<Value>(first) else { return false };
        first.is_object() && (first.get("type").is_some() || legacy_meta(&first))
    }
}

fn names_agent_keys(text: &[u8]) -> bool {
    memchr::memmem::find_iter(text, b"ory").any(|at| {
        let (before, after) = (&text[..at], &text[at + 3..]);
        (before.ends_with(b"\"traject") && (after.starts_with(b"\"") || after.starts_with(b"_format\"")))
            || (before.ends_with(b"\"hist") && after.starts_with(b"\""))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_agent_trajectory_keys_are_found_in_one_pass() {
        let names = names_agent_keys;
        assert!(names(br#"{"trajectory": [], "info": {}}"#));
        assert!(names(br#"{"instance_id": "x", "history": []}"#));
        assert!(names(br#"{"messages": [], "trajectory_format": "mini-swe-agent-1"}"#));
        assert!(!names(br#"{"trajectory_name": 1, "history_size": 2, "memory": "story"}"#));
        // Other words ending the same way, and the keys' names inside a string, are not keys.
        assert!(!names(br#"{"messages": [{"role": "user", "content": "the directory"}], "category": 1}"#));
        assert!(!names(br#"{"messages": [{"role": "user", "content": "see \"history\""}]}"#));
        assert!(!names(b"ory\""));
        assert!(!names(b""));
    }

    #[test]
    fn lines_that_are_not_json_are_skipped_and_counted() {
        let log = Log::new(
            "{\"type\": \"user\"}\n    at Object.<anonymous> (cli.js:12)\n\n{\"type\": \"assistant\"}\n",
        );
        assert_eq!(log.lines().values.len(), 2);
        assert_eq!(log.lines().skipped, [2]);
        assert!(log.is_agent_jsonl(|_| false));
        // A stack trace first does not hide that the log is an agent's JSONL.
        let first = Log::new("Error: EPIPE\n{\"type\": \"user\"}\n{\"type\": \"assistant\"}");
        assert!(first.is_agent_jsonl(|_| false));
        assert!(!Log::new("{\"messages\": []}").is_agent_jsonl(|_| false));
    }
}
