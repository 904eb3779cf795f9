//! The recorded-run formats the audit reads, detected from the content: OpenAI chat and
//! Anthropic Messages logs (documents, arrays, JSONL), SWE-agent `.traj` files and OpenHands
//! event histories (one run, or an evaluation `output.jsonl` with one run per line), Claude
//! Code logs (session files and the stream-json output, sub-agents as runs of their own),
//! Codex CLI rollouts, and the other agents' and frameworks' logs of the modules below
//! (mini-swe-agent, τ-bench, Gemini, LangChain and LangGraph, the Vercel AI SDK).
//!
//! Where an agent compacted its own history (Claude Code, Codex, OpenHands' condenser), the
//! reader leaves a [`HISTORY_SUMMARY`] message holding what the agent went on with, so the
//! context is measured again from there; text a harness injected is tagged internal (context,
//! but no user turn).

mod claude_code;
mod claude_code_branches;
mod claude_code_harness;
mod codex;
mod codex_exec;
mod gemini_api;
mod gemini_cli;
mod langchain;
mod log;
mod mini_swe_agent;
mod openhands;
mod openhands_events;
mod openhands_sdk;
mod registry;
#[cfg(test)]
mod robustness;
mod swe_agent;
mod tau_bench;
mod time;
mod vercel_ai;

use looprail::core::message::{ContentPart, HISTORY_SUMMARY, InternalTag, Message, Role};
use looprail::core::transcript::read_log;
use looprail::guardrails::replay::{RecordedReply, Timeline};
use serde_json::Value;

pub use log::{JsonLines, Log};
pub use registry::{FORMATS, LogFormat};

// The text of a message's content as the agent logs write it: a string, a list of parts with
// `text` (`{"type": "text" | "input_text" | "output_text", "text"}`), or an object with
// `content` (a Codex tool output): the Responses items reader's reading, which is the same.
use looprail::core::transcript::responses::item_text as text_of;

/// A call's arguments as text: a string as it is (most logs keep the model's JSON text), any
/// other value as its JSON.
fn arguments_text(arguments: &Value) -> String {
    match arguments {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

/// A call's arguments as text ([`arguments_text`]), `{}` when the log has none.
fn arguments_or_empty(arguments: Option<&Value>) -> String {
    arguments.map_or_else(|| "{}".to_owned(), arguments_text)
}

/// A document's message list: the document itself when it is a list, else its `messages`.
fn message_list(doc: &Value) -> Option<&[Value]> {
    doc.as_array().or_else(|| doc.get("messages")?.as_array()).map(Vec::as_slice)
}

/// The roles of `messages`, in order (for the readers' tests).
#[cfg(test)]
fn roles(messages: &[Message]) -> Vec<looprail::core::message::Role> {
    messages.iter().map(|m| m.role).collect()
}

/// The agent's turn: its text (blank text is none) and its calls.
fn assistant_turn(text: String, calls: Vec<looprail::core::message::ToolCall>) -> Message {
    let text = Some(text).filter(|t| !t.trim().is_empty());
    if calls.is_empty() {
        Message::assistant(text.unwrap_or_default())
    } else {
        Message::assistant_with_calls(text, calls)
    }
}

/// Every text the messages hold (their texts, their calls' arguments, their results), one
/// per line: what a compacted history keeps of the messages it carries over.
fn flattened<'a>(messages: impl IntoIterator<Item = &'a Message>) -> String {
    let parts = messages.into_iter().flat_map(|m| &m.content).map(|part| match part {
        ContentPart::Text { text } => text.as_str(),
        ContentPart::ToolUse(call) => call.arguments.as_str(),
        ContentPart::ToolResult(result) => result.content.as_str(),
        ContentPart::Image { .. } => "",
    });
    parts.filter(|p| !p.is_empty()).collect::<Vec<_>>().join("\n")
}

/// One run found in a file.
#[derive(Debug)]
pub struct FoundRun {
    /// Its name's suffix (`#<id>`) in a file holding several runs.
    pub id: Option<String>,
    /// What the model was sent and answered.
    pub messages: Vec<Message>,
    /// The largest prompt the log itself says the provider counted (Claude Code's `usage`,
    /// Codex's `token_count`), in the provider's own tokens; `None` when the log records none.
    pub logged_peak: Option<u64>,
    /// What the log records of each reply (when its request went out, its model, its usage),
    /// for the replay of cost and time limits; empty when it records none.
    pub timeline: Timeline,
}

impl FoundRun {
    fn new(id: Option<String>, messages: Vec<Message>) -> Self {
        Self { id, messages, logged_peak: None, timeline: Timeline::default() }
    }

    /// `replies` as this run's timeline when they match its assistant messages one to one (a
    /// reader that cannot tell them apart records nothing rather than misplace a time).
    fn with_replies(mut self, replies: Vec<RecordedReply>) -> Self {
        let assistants = self.messages.iter().filter(|m| m.role == Role::Assistant).count();
        if replies.len() == assistants {
            self.timeline = Timeline::new(replies);
        }
        self
    }
}

/// Marks, in the chat a reader builds, a message the agent's harness wrote rather than a person
/// or the model; its value is the message's [`InternalTag`] reason. Such a message is context,
/// never a user turn.
const INTERNAL: &str = "looprail_internal";

/// The reason of a message a harness injected on its own (Claude Code's `isMeta` lines).
const HARNESS_META: &str = "harness_meta";

/// The chat message that stands for the recorded agent compacting its own history: a user
/// message holding the summary it carried on with (empty when the log keeps none), which
/// becomes a [`HISTORY_SUMMARY`] message, so the context is measured again from there.
fn compaction(summary: String) -> Value {
    serde_json::json!({"role": "user", "content": [{"type": "text", "text": summary}], INTERNAL: HISTORY_SUMMARY})
}

/// Reads a chat a format reader built: each message marked [`INTERNAL`] opens a part whose
/// first message is tagged with the mark's reason.
fn read_chat(chat: Vec<Value>) -> Result<Vec<Message>, String> {
    let mut parts: Vec<(Option<String>, Vec<Value>)> = vec![(None, Vec::new())];
    for message in chat {
        if let Some(reason) = message.get(INTERNAL).and_then(Value::as_str) {
            parts.push((Some(reason.to_owned()), Vec::new()));
        }
        if let Some((_, part)) = parts.last_mut() {
            part.push(message);
        }
    }
    let mut messages = Vec::new();
    for (reason, part) in parts {
        if part.is_empty() {
            continue;
        }
        let (_, read) = read_log(&Value::Array(part).to_string()).map_err(|e| e.to_string())?;
        let first = messages.len();
        messages.extend(read);
        if let (Some(reason), Some(message)) = (reason, messages.get_mut(first)) {
            message.internal = Some(InternalTag { reason });
        }
    }
    Ok(messages)
}

const EXPECTED: &str = "expected an OpenAI chat or Anthropic Messages log (a `messages` document, an array or \
JSONL of messages), a SWE-agent .traj (`trajectory` and `history`), a mini-swe-agent trajectory \
(`trajectory_format`), τ-bench or τ²-bench results (`traj`, `simulations`), Responses API items, an \
OpenHands history (`history` of events; output.jsonl with one run per line), a Claude Code log (session \
JSONL or stream-json), a Codex rollout (JSONL of `session_meta` and `response_item` lines), `codex exec \
--json` events, a Gemini CLI session, Gemini API `contents`, LangChain / LangGraph messages or Vercel AI SDK messages";

/// What a file holds: the runs read from it, each run of it that could not be read, named,
/// with why (a file of many runs is not refused for one bad run), and the lines of a JSONL log
/// that were not JSON (skipped: the runs are read from the others).
#[derive(Debug, Default)]
pub struct FileRuns {
    /// The runs read.
    pub runs: Vec<FoundRun>,
    /// The runs left out, each as `name: why`.
    pub left_out: Vec<String>,
    /// The (1-based) numbers of the lines skipped as not JSON.
    pub skipped_lines: Vec<usize>,
}

impl FileRuns {
    fn one(messages: Vec<Message>) -> Self {
        Self::single(FoundRun::new(None, messages))
    }

    fn single(run: FoundRun) -> Self {
        Self { runs: vec![run], ..Self::default() }
    }

    /// Runs read one by one (an error names its run): those that fail are left out, unless
    /// every one does, and then the file is not read.
    fn each(results: impl IntoIterator<Item = Result<FoundRun, String>>) -> Result<Self, String> {
        let mut file = Self::default();
        for result in results {
            match result {
                Ok(run) => file.runs.push(run),
                Err(e) => file.left_out.push(e),
            }
        }
        match (file.runs.is_empty(), file.left_out.first()) {
            (true, Some(first)) => Err(first.clone()),
            _ => Ok(file),
        }
    }
}

/// The run of a conversation the OpenHands agent SDK persisted, one event a file
/// (`events/event-<index>-<id>.json`), given its events in order.
pub fn read_sdk_events(events: &[Value]) -> Result<Vec<FoundRun>, String> {
    Ok(vec![FoundRun::new(None, openhands_sdk::read(events)?)])
}

/// Every run in `text`, or why none could be read: each [`FORMATS`] in turn reads what it
/// knows.
pub fn read_runs(text: &str) -> Result<FileRuns, String> {
    let log = Log::new(text);
    for format in FORMATS {
        if let Some(result) = format.read(&log) {
            return result;
        }
    }
    let chat_error = log.chat_error().unwrap_or("no chat log");
    Err(format!("{chat_error}; {EXPECTED}"))
}
