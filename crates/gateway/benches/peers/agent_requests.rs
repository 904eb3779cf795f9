//! What coding agents send (issue 68), for the agent-traffic cells: Claude-Code-shaped
//! Anthropic Messages requests, streamed and unnamed (the gateway recognises each conversation
//! by its content): a system prompt of about 13 KB (one cached block), some 35 KB of tool
//! schemas, the task, then a history of Bash calls and their outputs, sized to the cell (4, 50,
//! 150 or 500 KB; 100–300 messages at the two largest). `metadata.user_id` tells the fake
//! upstream which reply to give ([`Reply`]): the call the conversation's next request carries
//! in its history, as an agent's next request carries the model's last reply; or a slow stream.

use serde_json::{Value, json};

/// The sizes of the body cells, in KB.
pub const SIZES_KB: [usize; 4] = [4, 50, 150, 500];

/// How many calls a request of `size_kb` holds in its history before the cell's own steps,
/// and the bytes of each call's output.
fn shape(size_kb: usize) -> (usize, usize) {
    match size_kb {
        0..=8 => (2, 50),
        9..=64 => (2, 600),
        65..=200 => (100, 690),
        _ => (150, 2_680),
    }
}

/// The system prompt: `bytes` of instructions.
fn system(bytes: usize) -> Value {
    let rule = "When you change code, read the surrounding module first, keep the style of the file, \
        run the tests that cover it, and report what you changed and why in one short paragraph. ";
    let text: String = rule.repeat(bytes / rule.len() + 1).chars().take(bytes).collect();
    json!([{"type": "text", "text": format!("You are a coding agent working in the user's repository. {text}"),
        "cache_control": {"type": "ephemeral"}}])
}

/// `count` tools of about 2.2 KB each (description and schema), Claude Code's names first.
fn tools(count: usize) -> Vec<Value> {
    let names = [
        "Bash",
        "Read",
        "Edit",
        "Write",
        "Glob",
        "Grep",
        "Task",
        "TodoWrite",
        "WebFetch",
        "WebSearch",
        "NotebookEdit",
        "BashOutput",
        "KillShell",
        "ExitPlanMode",
        "SlashCommand",
        "MultiEdit",
    ];
    names
        .iter()
        .cycle()
        .take(count)
        .enumerate()
        .map(|(i, name)| {
            let description = format!(
                "{name}: {} ",
                "Use this tool with care: give absolute paths, quote arguments that hold spaces, and prefer \
                 the dedicated tools over shell commands for reading and searching files. "
                    .repeat(9)
            );
            let property = |p: usize| {
                (format!("argument_{p}"), json!({"type": "string", "description": format!("Argument {p} of {name}: what it names and how it is read.")}))
            };
            let properties: serde_json::Map<String, Value> = (0..8).map(property).collect();
            json!({"name": if i < names.len() { (*name).to_owned() } else { format!("{name}{i}") },
                "description": description,
                "input_schema": {"type": "object", "properties": properties, "required": ["argument_0"],
                    "additionalProperties": false, "$schema": "http://json-schema.org/draft-07/schema#"}})
        })
        .collect()
}

/// Conversation `tag`'s call `n`: the shell command it runs.
pub fn command(tag: &str, n: usize) -> String {
    format!("grep -rn \"config\" src/{tag}/module_{n}.rs")
}

/// The call id of conversation `tag`'s call `n`.
pub fn call_id(tag: &str, n: usize) -> String {
    format!("toolu_{tag}_{n}")
}

/// The output of call `n`, `bytes` long.
fn output(n: usize, bytes: usize) -> String {
    let line = format!("src/module_{n}.rs:{n}: let config = Config::load(path)?; // reads the settings\n");
    line.repeat(bytes / line.len() + 1).chars().take(bytes).collect()
}

/// What the fake upstream answers a request with, told by its `metadata.user_id`.
#[derive(Debug, PartialEq, Eq)]
pub enum Reply {
    /// Conversation `tag`'s call `n` (a streamed `tool_use`).
    Call {
        /// The conversation.
        tag: String,
        /// The call's number.
        n: usize,
    },
    /// A stream that waits `delay_ms` before its first event and sends `events` text deltas,
    /// one every `every_ms`.
    Slow {
        /// Milliseconds to the first event.
        delay_ms: u64,
        /// Text deltas.
        events: usize,
        /// Milliseconds between two deltas.
        every_ms: u64,
    },
}

impl Reply {
    /// The reply a request's `metadata.user_id` asks for.
    pub fn of(user_id: &str) -> Option<Self> {
        if let Some(rest) = user_id.strip_prefix("bench-call:") {
            let (tag, n) = rest.rsplit_once(':')?;
            return Some(Reply::Call { tag: tag.to_owned(), n: n.parse().ok()? });
        }
        let rest = user_id.strip_prefix("bench-slow:")?;
        let mut parts = rest.split(':');
        Some(Reply::Slow {
            delay_ms: parts.next()?.parse().ok()?,
            events: parts.next()?.parse().ok()?,
            every_ms: parts.next()?.parse().ok()?,
        })
    }
}

/// Conversation `tag`'s request at its `step` (0: its first in the cell) for a cell of
/// `size_kb`: the history holds every call before, each with its output.
pub fn request(tag: &str, size_kb: usize, step: usize) -> String {
    let (base, bytes) = shape(size_kb);
    let (system_bytes, tool_count) = if size_kb <= 8 { (1_000, 1) } else { (13_000, 16) };
    let calls = base + step;
    let mut messages = vec![json!({"role": "user", "content": [{"type": "text",
        "text": format!("Task {tag}: find where the application reads its configuration, and fix the default path.")}]})];
    for n in 0..calls {
        let id = call_id(tag, n);
        messages.push(json!({"role": "assistant", "content": [{"type": "tool_use", "id": id, "name": "Bash",
            "input": {"command": command(tag, n), "description": "search"}}]}));
        messages.push(json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": id,
            "content": output(n, bytes)}]}));
    }
    json!({"model": "claude-3-5-haiku-20241022", "max_tokens": 32_000, "stream": true,
        "system": system(system_bytes), "tools": tools(tool_count), "messages": messages,
        "metadata": {"user_id": format!("bench-call:{tag}:{calls}")}})
    .to_string()
}

/// A request whose reply is a slow stream (see [`Reply::Slow`]), small otherwise.
pub fn slow_request(tag: &str, delay_ms: u64, events: usize, every_ms: u64) -> String {
    json!({"model": "claude-3-5-haiku-20241022", "max_tokens": 32_000, "stream": true,
        "system": system(1_000), "tools": tools(1),
        "messages": [{"role": "user", "content": [{"type": "text", "text": format!("Task {tag}: explain the build.")}]}],
        "metadata": {"user_id": format!("bench-slow:{delay_ms}:{events}:{every_ms}")}})
    .to_string()
}
