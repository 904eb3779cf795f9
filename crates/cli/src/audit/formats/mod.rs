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
mod mini_swe_agent;
mod openhands;
mod openhands_sdk;
#[cfg(test)]
mod robustness;
mod swe_agent;
mod tau_bench;
mod vercel_ai;

use looprail::core::message::{ContentPart, HISTORY_SUMMARY, InternalTag, Message};
use looprail::core::transcript::read_log;
use serde_json::Value;

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
}

impl FoundRun {
    fn new(id: Option<String>, messages: Vec<Message>) -> Self {
        Self { id, messages, logged_peak: None }
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

/// What a file holds: the runs read from it, and each run of it that could not be read, named,
/// with why (a file of many runs is not refused for one bad run).
#[derive(Debug, Default)]
pub struct FileRuns {
    /// The runs read.
    pub runs: Vec<FoundRun>,
    /// The runs left out, each as `name: why`.
    pub left_out: Vec<String>,
}

impl FileRuns {
    fn one(messages: Vec<Message>) -> Self {
        Self::single(FoundRun::new(None, messages))
    }

    fn single(run: FoundRun) -> Self {
        Self { runs: vec![run], left_out: Vec::new() }
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

/// Every run in `text`, or why none could be read.
pub fn read_runs(text: &str) -> Result<FileRuns, String> {
    let trimmed = text.trim();
    if let Some(runs) = agent_jsonl(trimmed)? {
        return Ok(runs);
    }
    // Only a file naming these keys can be a SWE-agent, mini-swe-agent or OpenHands log: the
    // common case, a chat log, is parsed once, by the transcript reader.
    if !names_agent_keys(trimmed.as_bytes()) {
        return chat_or_results(text);
    }
    if let Ok(doc) = serde_json::from_str::<Value>(trimmed) {
        if mini_swe_agent::detect(&doc) {
            return Ok(FileRuns::one(mini_swe_agent::read(&doc)?));
        }
        if let Some(attempts) = swe_agent::attempts(&doc) {
            // Every attempt is a run, named by its index as SWE-agent numbers them
            // (`info.best_attempt_idx`); the top level's copy of the chosen one is not another.
            return FileRuns::each(attempts.iter().enumerate().map(|(i, attempt)| {
                let id = format!("attempt-{i}");
                swe_agent::read(attempt)
                    .map(|m| FoundRun::new(Some(id.clone()), m))
                    .map_err(|e| format!("{id}: {e}"))
            }));
        }
        if swe_agent::detect(&doc) {
            return Ok(FileRuns::one(swe_agent::read(&doc)?));
        }
        if openhands::detect(&doc) {
            // One line of an `output.jsonl` is still named by its instance.
            let id = if trimmed.contains('\n') { None } else { openhands::run_id(&doc) };
            return Ok(FileRuns::single(FoundRun::new(id, openhands::read(&doc)?)));
        }
    } else if let Some(runs) = openhands_lines(trimmed)? {
        return Ok(runs);
    }
    chat_or_results(text)
}

/// A chat log, or else a benchmark's results file of many runs (τ-bench, τ²-bench): tried
/// only when the text is no chat log, so a chat log is parsed once.
fn chat_or_results(text: &str) -> Result<FileRuns, String> {
    let chat_error = match read_log(text) {
        // A chat log without a single call may be one whose calls the chat reader does not
        // see: the AI SDK's (`parts`, `tool-call` parts). Only then is it read a second time.
        Ok((_, messages)) if messages.iter().all(|m| m.tool_calls().next().is_none()) => {
            let doc = serde_json::from_str::<Value>(text.trim()).ok();
            return match doc.as_ref().and_then(vercel_ai::messages) {
                Some(list) => Ok(FileRuns::one(vercel_ai::read(list)?)),
                None => Ok(FileRuns::one(messages)),
            };
        }
        Ok((_, messages)) => return Ok(FileRuns::one(messages)),
        Err(e) => e,
    };
    let Ok(doc) = serde_json::from_str::<Value>(text.trim()) else {
        // JSONL that no reader before took: a Gemini CLI session's lines.
        let lines: Vec<Value> = text.lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
        if gemini_cli::detect_lines(&lines) {
            return Ok(FileRuns::one(gemini_cli::read(&lines[1..])?));
        }
        return Err(format!("{chat_error}; {EXPECTED}"));
    };
    if let Some(runs) = tau_bench::runs(&doc) {
        return runs;
    }
    if let Some((contents, system)) = gemini_api::contents(&doc) {
        return Ok(FileRuns::one(gemini_api::read(contents, system)));
    }
    if gemini_cli::detect_document(&doc) {
        let messages = doc.get("messages").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
        return Ok(FileRuns::one(gemini_cli::read(messages)?));
    }
    if let Some(list) = langchain::messages(&doc) {
        return Ok(FileRuns::one(langchain::read(list)?));
    }
    if let Some(list) = vercel_ai::messages(&doc) {
        return Ok(FileRuns::one(vercel_ai::read(list)?));
    }
    // Responses API items in one array (the OpenAI Agents SDK's `to_input_list()`), as a Codex
    // rollout holds them.
    match doc.as_array() {
        Some(items) if codex::detect(items) => Ok(FileRuns::one(codex::messages(items)?)),
        _ => Err(format!("{chat_error}; {EXPECTED}")),
    }
}

/// Whether `text` names a key only agent trajectories have: `"trajectory"` (SWE-agent),
/// `"history"` (OpenHands) or `"trajectory_format"` (mini-swe-agent), found in one pass over it
/// (a chat log holds none, and is read to its end to find that out): all hold `ory`.
fn names_agent_keys(text: &[u8]) -> bool {
    memchr::memmem::find_iter(text, b"ory").any(|at| {
        let (before, after) = (&text[..at], &text[at + 3..]);
        (before.ends_with(b"\"traject") && (after.starts_with(b"\"") || after.starts_with(b"_format\"")))
            || (before.ends_with(b"\"hist") && after.starts_with(b"\""))
    })
}

/// JSONL whose lines are OpenHands runs (`None` when the first line is not one).
fn openhands_lines(text: &str) -> Result<Option<FileRuns>, String> {
    let mut lines = text.lines().filter(|l| !l.trim().is_empty()).enumerate().peekable();
    let Some((_, first)) = lines.peek() else { return Ok(None) };
    let Ok(first) = serde_json::from_str::<Value>(first) else { return Ok(None) };
    if !openhands::detect(&first) {
        return Ok(None);
    }
    // A run that cannot be read (an evaluation's crashed instance, with an empty history) is
    // left out and said; the others are audited.
    FileRuns::each(lines.map(|(index, line)| {
        let run: Value =
            serde_json::from_str(line).map_err(|e| format!("line {} is not JSON: {e}", index + 1))?;
        let id = openhands::run_id(&run).unwrap_or_else(|| format!("line-{}", index + 1));
        let messages = openhands::read(&run).map_err(|e| format!("run {id} (line {}): {e}", index + 1))?;
        Ok(FoundRun::new(Some(id), messages))
    }))
    .map(Some)
}

/// A Claude Code log or a Codex rollout (`None` when the text is neither): JSONL whose lines
/// carry a `type` and, for Claude Code, session ids or uuids (a Codex rollout of 2025 opens
/// with a metadata line without one).
fn agent_jsonl(text: &str) -> Result<Option<FileRuns>, String> {
    // Cheap checks first: a JSON document (one line or pretty-printed) is not parsed here.
    let mut non_empty = text.lines().filter(|l| !l.trim().is_empty());
    let (Some(first), Some(_)) = (non_empty.next(), non_empty.next()) else { return Ok(None) };
    if !first.trim_start().starts_with('{')
        || !(first.contains("\"type\"") || first.contains("\"timestamp\""))
    {
        return Ok(None);
    }
    let Ok(first) = serde_json::from_str::<Value>(first) else { return Ok(None) };
    if !first.is_object() || !(first.get("type").is_some() || codex::is_legacy_meta(&first)) {
        return Ok(None);
    }
    let mut lines = Vec::new();
    for (index, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        lines.push(
            serde_json::from_str::<Value>(line)
                .map_err(|e| format!("line {} is not JSON: {e}", index + 1))?,
        );
    }
    if codex_exec::detect(&lines) {
        return Ok(Some(FileRuns::one(codex_exec::messages(&lines))));
    }
    if codex::detect(&lines) {
        let mut run = FoundRun::new(None, codex::messages(&lines)?);
        run.logged_peak = codex::logged_peak(&lines);
        return Ok(Some(FileRuns::single(run)));
    }
    if claude_code::detect(&lines) {
        let mut found = claude_code::conversations(&lines);
        // A sub-agent's own file (Claude Code 2.1.2+ writes `<session>/subagents/agent-<id>.jsonl`,
        // every line a sidechain): one run, the file's.
        if let [only] = found.as_mut_slice() {
            only.key = None;
        }
        let conversations = found.into_iter().map(|conversation| {
            let key = conversation.key;
            let name = key.as_deref().map_or_else(|| "the main conversation".to_owned(), |k| format!("#{k}"));
            let messages = read_chat(conversation.messages).map_err(|e| format!("{name}: {e}"))?;
            Ok(FoundRun { id: key, messages, logged_peak: conversation.logged_peak })
        });
        return FileRuns::each(conversations).map(Some);
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::names_agent_keys as names;

    #[test]
    fn the_agent_trajectory_keys_are_found_in_one_pass() {
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
}
