//! Claude Code logs, JSONL: the session files it keeps (`~/.claude/projects/.../<session>.jsonl`:
//! lines `{"type": "user"|"assistant"|"summary"|..., "message": {...}, "uuid", "parentUuid",
//! "isSidechain", "sessionId"}`) and its `--output-format stream-json` stream (lines
//! `{"type": "assistant"|"user", "message": {...}, "parent_tool_use_id", "session_id"}` between
//! a `system` init and a `result`). Messages are Anthropic Messages (`tool_use` and
//! `tool_result` blocks). An assistant message streamed as several lines (one per content block,
//! one `message.id`) is one turn again.
//!
//! Where Claude Code compacted the conversation (a `system` line of subtype
//! `compact_boundary`, then in session files the summary as a user message marked
//! `isCompactSummary`), the context restarts from the summary. Lines marked `isMeta` (text the
//! harness adds, such as a local command's caveat) and the `<task-notification>` a finished
//! background task wakes the agent with count as context but are no user turns;
//! what Claude Code wrote in the model's place (an API error, its `<synthetic>` model's
//! messages) is no turn at all. Of its `attachment` lines, queued prompts and hooks' context
//! are read (see [`claude_code_harness`](super::claude_code_harness)).
//!
//! Sub-agent (Task) conversations are kept apart from the main one: in the stream by their
//! `parent_tool_use_id`, in session files as sidechains (`isSidechain`), each named
//! `agent-<agentId>` where its lines carry one, else by its chain's first uuid. Since version
//! 2.1.2 a sub-agent's lines are a file of their own (`<session>/subagents/agent-<id>.jsonl`):
//! that file is one run. A branch a rewind abandoned is a conversation of its own
//! ([`claude_code_branches`](super::claude_code_branches)). Sidechains Claude Code runs for
//! itself (its compaction calls, start-up warm-ups) are no runs.

use std::collections::{HashMap, HashSet};

use looprail::guardrails::replay::RecordedReply;
use looprail::providers::anthropic;
use serde_json::Value;

use super::claude_code_harness as harness;

/// A conversation of a log.
pub struct Conversation {
    /// `None` for the main one, the sub-agent's key otherwise.
    pub key: Option<String>,
    /// Its messages, in Anthropic's `{"role", "content"}` form.
    pub messages: Vec<Value>,
    /// The largest prompt its assistant messages' `usage` records: input, cache writes and
    /// cache reads together, as Anthropic counts a request's input.
    pub logged_peak: Option<u64>,
    /// Each assistant message's record: when its request went out (the time of the line
    /// before it in its conversation), its model and its usage.
    pub replies: Vec<RecordedReply>,
}

/// The prompt an assistant message's `usage` says its request had.
fn prompt_tokens(message: &Value) -> Option<u64> {
    let usage = message.get("usage")?;
    let field = |key: &str| usage.get(key).and_then(Value::as_u64);
    let parts = ["input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"].map(field);
    parts.iter().any(Option::is_some).then(|| parts.iter().flatten().sum())
}

/// True when a message line looks like Claude Code's. Any line may be the first: a session file
/// can open with many bookkeeping lines (`summary`, `file-history-snapshot`, `permission-mode`,
/// titles) before its first message.
pub fn detect(lines: &[Value]) -> bool {
    lines.iter().any(|line| {
        let kind = line.get("type").and_then(Value::as_str).unwrap_or_default();
        matches!(kind, "user" | "assistant")
            && line.get("message").is_some_and(|m| m.get("role").is_some())
            && (line.get("sessionId").is_some()
                || line.get("session_id").is_some()
                || line.get("uuid").is_some()
                || line.get("parent_tool_use_id").is_some())
    })
}

/// The conversations of a log, main first, in order of appearance, then each branch a rewind
/// abandoned (named `abandoned-<uuid of its first prompt>`, with the part before the fork).
pub fn conversations(lines: &[Value]) -> Vec<Conversation> {
    let mut parts = super::claude_code_branches::split(lines).into_iter();
    let Some((_, active)) = parts.next() else { return Vec::new() };
    let mut found = conversations_in(&active);
    found.retain(|conversation| !conversation.is_harness_call());
    for (name, branch) in parts {
        // An abandoned branch's main conversation; its sub-agents are the active part's.
        if let Some(main) = conversations_in(&branch).into_iter().find(|c| c.key.is_none()) {
            found.push(Conversation { key: name, ..main });
        }
    }
    found
}

impl Conversation {
    /// Whether this sidechain is a call Claude Code makes for itself rather than a sub-agent
    /// the model started: its compaction (agent ids `acompact-*`: the main conversation sent
    /// again to be summarised, which the main run already holds, calls included) and the
    /// `Warmup` probes versions 2.0.x sent each agent type at start-up to fill the prompt cache.
    fn is_harness_call(&self) -> bool {
        let Some(key) = &self.key else { return false };
        let first_prompt =
            self.messages.first().filter(|m| m.get("role").and_then(Value::as_str) == Some("user"));
        key.starts_with("agent-acompact")
            || first_prompt.is_some_and(|m| super::text_of(m.get("content")).trim() == "Warmup")
    }
}

fn sidechain(line: &Value) -> bool {
    line.get("isSidechain").and_then(Value::as_bool).unwrap_or(false)
}

/// The conversations of the given lines, main first, in order of appearance.
fn conversations_in(lines: &[&Value]) -> Vec<Conversation> {
    let mut order: Vec<Option<String>> = vec![None];
    let mut by_key: HashMap<Option<String>, Vec<Value>> = HashMap::from([(None, Vec::new())]);
    // Sidechain uuid -> the key of its chain.
    let mut chain_of: HashMap<String, String> = HashMap::new();
    // The `message.id` of the last assistant message per conversation, to merge its blocks.
    let mut last_id: HashMap<Option<String>, String> = HashMap::new();
    // Conversations whose agent compacted its history and whose summary has not come yet.
    let mut compacted: HashSet<Option<String>> = HashSet::new();
    let mut peaks: HashMap<Option<String>, u64> = HashMap::new();
    let mut replies: HashMap<Option<String>, Vec<RecordedReply>> = HashMap::new();
    // The time of each conversation's last line so far (ms since the epoch).
    let mut last_ms: HashMap<Option<String>, i64> = HashMap::new();
    for &line in lines {
        let kind = line.get("type").and_then(Value::as_str).unwrap_or_default();
        if kind == "system" && line.get("subtype").and_then(Value::as_str) == Some("compact_boundary") {
            let key = line.get("parent_tool_use_id").and_then(Value::as_str).map(str::to_owned);
            compacted.insert(key);
            continue;
        }
        // Text the model was sent from an attachment line, and whether the harness wrote it.
        let attached = match kind {
            "attachment" => match line.get("attachment").and_then(harness::attachment_message) {
                Some(attached) => Some(attached),
                None => continue,
            },
            "user" | "assistant" => None,
            _ => continue,
        };
        let message = match &attached {
            Some((message, _)) => message,
            None => match line.get("message") {
                Some(message) => message,
                None => continue,
            },
        };
        if harness::is_synthetic(line, message) {
            continue;
        }
        let key = if let Some(parent) = line.get("parent_tool_use_id").and_then(Value::as_str) {
            Some(parent.to_owned())
        } else if let Some(agent) = line.get("agentId").and_then(Value::as_str).filter(|_| sidechain(line)) {
            // Newer versions name each sub-agent.
            Some(format!("agent-{agent}"))
        } else if sidechain(line) {
            let uuid = line.get("uuid").and_then(Value::as_str).unwrap_or_default().to_owned();
            let parent = line.get("parentUuid").and_then(Value::as_str).unwrap_or_default();
            let chain = chain_of.get(parent).cloned().unwrap_or_else(|| uuid.clone());
            chain_of.insert(uuid, chain.clone());
            Some(chain)
        } else {
            None
        };
        if !by_key.contains_key(&key) {
            order.push(key.clone());
            by_key.insert(key.clone(), Vec::new());
        }
        let conversation = by_key.entry(key.clone()).or_default();
        let boundary = compacted.remove(&key);
        if line.get("isCompactSummary").and_then(Value::as_bool) == Some(true) {
            conversation.push(super::compaction(super::text_of(message.get("content"))));
            last_id.remove(&key);
            continue;
        }
        if boundary {
            // A boundary whose summary the log does not keep (the stream): the context restarts.
            conversation.push(super::compaction(String::new()));
            last_id.remove(&key);
        }
        let role = message.get("role").and_then(Value::as_str).unwrap_or(kind);
        let content = match message.get("content") {
            Some(Value::String(text)) => vec![serde_json::json!({"type": "text", "text": text})],
            Some(Value::Array(blocks)) => blocks.clone(),
            _ => Vec::new(),
        };
        let id = message.get("id").and_then(Value::as_str).unwrap_or_default().to_owned();
        let continues = role == "assistant" && !id.is_empty() && last_id.get(&key) == Some(&id);
        match conversation.last_mut() {
            Some(last) if continues => {
                if let Some(Value::Array(blocks)) = last.get_mut("content") {
                    blocks.extend(content);
                }
            }
            _ => {
                let mut message = serde_json::json!({"role": role, "content": content});
                // A line the harness added (a command's caveat, a skill's text, the notice that a
                // background task finished): context, not a turn of the person's.
                if role == "user"
                    && (line.get("isMeta").and_then(Value::as_bool) == Some(true)
                        || attached.as_ref().is_some_and(|(_, by_harness)| *by_harness)
                        || harness::is_notification(line, &message))
                {
                    message[super::INTERNAL] = Value::from(super::HARNESS_META);
                }
                conversation.push(message);
            }
        }
        let at = line.get("timestamp").and_then(Value::as_str).and_then(super::time::epoch_ms);
        let sent = last_ms.get(&key).copied().or(at);
        if let Some(at) = at {
            last_ms.insert(key.clone(), at);
        }
        if role == "assistant" {
            let recorded = replies.entry(key.clone()).or_default();
            let model = message.get("model").and_then(Value::as_str).map(str::to_owned);
            // Counted as the Anthropic client counts a reply's usage.
            let usage = message.get("usage").map(anthropic::usage);
            match recorded.last_mut() {
                // A block of the same reply: its latest usage is the reply's.
                Some(last) if continues => {
                    last.usage = usage.or(last.usage.take());
                    last.model = model.or(last.model.take());
                }
                _ => recorded.push(RecordedReply { sent_ms: sent, model, usage }),
            }
            if let Some(prompt) = prompt_tokens(message) {
                let peak = peaks.entry(key.clone()).or_default();
                *peak = (*peak).max(prompt);
            }
            last_id.insert(key, id);
        } else {
            last_id.remove(&key);
        }
    }
    order
        .into_iter()
        .filter_map(|key| {
            let messages = by_key.remove(&key)?;
            let logged_peak = peaks.get(&key).copied();
            let replies = replies.remove(&key).unwrap_or_default();
            (!messages.is_empty()).then_some(Conversation { key, messages, logged_peak, replies })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &str) -> Vec<Value> {
        text.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
    }

    #[test]
    fn the_stream_keeps_sub_agents_apart_and_merges_streamed_blocks() {
        let log = lines(concat!(
            r#"{"type":"system","subtype":"init","session_id":"s1","tools":["Bash","Task"]}"#,
            "\n",
            r#"{"type":"user","message":{"role":"user","content":"Fix the build."},"parent_tool_use_id":null,"session_id":"s1"}"#,
            "\n",
            r#"{"type":"assistant","message":{"id":"msg_1","role":"assistant","content":[{"type":"text","text":"Delegating."}]},"parent_tool_use_id":null,"session_id":"s1"}"#,
            "\n",
            r#"{"type":"assistant","message":{"id":"msg_1","role":"assistant","content":[{"type":"tool_use","id":"toolu_task","name":"Task","input":{"prompt":"Find the error"}}]},"parent_tool_use_id":null,"session_id":"s1"}"#,
            "\n",
            r#"{"type":"user","message":{"role":"user","content":"Find the error"},"parent_tool_use_id":"toolu_task","session_id":"s1"}"#,
            "\n",
            r#"{"type":"assistant","message":{"id":"msg_2","role":"assistant","content":[{"type":"tool_use","id":"toolu_b","name":"Bash","input":{"command":"make"}}]},"parent_tool_use_id":"toolu_task","session_id":"s1"}"#,
            "\n",
            r#"{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_b","content":"error: x","is_error":true}]},"parent_tool_use_id":"toolu_task","session_id":"s1"}"#,
            "\n",
            r#"{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_task","content":"x is undefined"}]},"parent_tool_use_id":null,"session_id":"s1"}"#,
            "\n",
            r#"{"type":"result","subtype":"success","result":"done","session_id":"s1"}"#,
        ));
        assert!(detect(&log));
        let found = conversations(&log);
        assert_eq!(found.len(), 2);
        let (main, sub) = (&found[0], &found[1]);
        assert_eq!(main.key, None);
        assert_eq!(main.messages.len(), 3, "user, one merged assistant turn, the Task result");
        assert_eq!(main.messages[1]["content"].as_array().unwrap().len(), 2);
        assert_eq!(sub.key.as_deref(), Some("toolu_task"));
        assert_eq!(sub.messages.len(), 3);
        assert_eq!((main.logged_peak, sub.logged_peak), (None, None), "this stream records no usage");
    }

    #[test]
    fn harness_lines_and_compaction_summaries_are_tagged_context() {
        let log = lines(concat!(
            r#"{"type":"user","uuid":"u1","sessionId":"s","message":{"role":"user","content":"Fix it"}}"#,
            "\n",
            r#"{"type":"user","uuid":"u2","isMeta":true,"sessionId":"s","message":{"role":"user","content":"Caveat: the messages below were generated by local commands."}}"#,
            "\n",
            r#"{"type":"assistant","uuid":"u3","sessionId":"s","message":{"id":"m1","role":"assistant","content":[{"type":"text","text":"On it"}]}}"#,
            "\n",
            r#"{"type":"system","subtype":"compact_boundary","uuid":"b","sessionId":"s","compactMetadata":{"trigger":"auto","preTokens":9}}"#,
            "\n",
            r#"{"type":"user","uuid":"u4","isCompactSummary":true,"sessionId":"s","message":{"role":"user","content":"So far: on it."}}"#,
            "\n",
            r#"{"type":"user","uuid":"u5","sessionId":"s","message":{"role":"user","content":"Go on"}}"#,
        ));
        let chat = conversations(&log).remove(0).messages;
        let messages = super::super::read_chat(chat).unwrap();
        let tags: Vec<Option<&str>> =
            messages.iter().map(|m| m.internal.as_ref().map(|t| t.reason.as_str())).collect();
        assert_eq!(tags, [None, Some("harness_meta"), None, Some("history_summary"), None]);
        assert!(messages[3].is_history_summary());
        assert_eq!(messages[3].joined_text().as_deref(), Some("So far: on it."));
        let notified = lines(concat!(
            r#"{"type":"user","uuid":"u1","sessionId":"s","message":{"role":"user","content":"Deploy it"}}"#,
            "\n",
            r#"{"type":"user","uuid":"u2","sessionId":"s","message":{"role":"user","content":"<task-notification>\n<task-id>b27</task-id>\n<status>completed</status>\n</task-notification>"}}"#,
            "\n",
            r#"{"type":"user","uuid":"u3","sessionId":"s","origin":{"kind":"task-notification"},"message":{"role":"user","content":"Background command finished"}}"#,
            "\n",
            r#"{"type":"user","uuid":"u4","sessionId":"s","origin":{"kind":"channel"},"message":{"role":"user","content":"Ship it"}}"#,
        ));
        let chat = conversations(&notified).remove(0).messages;
        let read = super::super::read_chat(chat).unwrap();
        let tags: Vec<Option<&str>> =
            read.iter().map(|m| m.internal.as_ref().map(|t| t.reason.as_str())).collect();
        assert_eq!(tags, [None, Some("harness_meta"), Some("harness_meta"), None]);
    }

    #[test]
    fn session_files_keep_sidechains_apart() {
        let log = lines(concat!(
            r#"{"type":"summary","summary":"Build fix","leafUuid":"u3"}"#,
            "\n",
            r#"{"type":"user","uuid":"u1","parentUuid":null,"isSidechain":false,"sessionId":"s","message":{"role":"user","content":"Fix it"}}"#,
            "\n",
            r#"{"type":"user","uuid":"c1","parentUuid":"u1","isSidechain":true,"sessionId":"s","message":{"role":"user","content":"Sub task"}}"#,
            "\n",
            r#"{"type":"assistant","uuid":"c2","parentUuid":"c1","isSidechain":true,"sessionId":"s","message":{"id":"m9","role":"assistant","content":[{"type":"text","text":"Sub done"}]}}"#,
            "\n",
            r#"{"type":"assistant","uuid":"u2","parentUuid":"u1","isSidechain":false,"sessionId":"s","message":{"id":"m1","role":"assistant","content":[{"type":"text","text":"Done"}]}}"#,
        ));
        assert!(detect(&log));
        let found = conversations(&log);
        assert_eq!(found.iter().map(|c| c.key.clone()).collect::<Vec<_>>(), [None, Some("c1".to_owned())]);
        assert_eq!(found[0].messages.len(), 2);
        assert_eq!(found[1].messages.len(), 2);
    }

    #[test]
    fn sidechains_claude_code_runs_for_itself_are_no_conversations() {
        let log = lines(concat!(
            r#"{"type":"user","uuid":"u1","parentUuid":null,"isSidechain":false,"sessionId":"s","message":{"role":"user","content":"Warmup"}}"#,
            "\n",
            r#"{"type":"user","uuid":"w1","parentUuid":null,"isSidechain":true,"sessionId":"s","message":{"role":"user","content":"Warmup"}}"#,
            "\n",
            r#"{"type":"assistant","uuid":"w2","parentUuid":"w1","isSidechain":true,"sessionId":"s","message":{"id":"m8","role":"assistant","content":[{"type":"text","text":"Ready."}]}}"#,
            "\n",
            r#"{"type":"user","uuid":"k1","parentUuid":null,"isSidechain":true,"agentId":"acompact-1","sessionId":"s","message":{"role":"user","content":"Fix it"}}"#,
            "\n",
            r#"{"type":"user","uuid":"c1","parentUuid":"u1","isSidechain":true,"sessionId":"s","message":{"role":"user","content":"Warm up the cache, then run the tests"}}"#,
        ));
        let keys: Vec<Option<String>> = conversations(&log).into_iter().map(|c| c.key).collect();
        // The person's own "Warmup" prompt stays the main conversation; a sub-agent whose task
        // merely mentions warming up is a sub-agent.
        assert_eq!(keys, [None, Some("c1".to_owned())]);
    }

    #[test]
    fn what_claude_code_wrote_in_the_models_place_is_no_turn() {
        let log = lines(concat!(
            r#"{"type":"user","uuid":"u1","sessionId":"s","message":{"role":"user","content":"Fix it"}}"#,
            "\n",
            r#"{"type":"assistant","uuid":"a1","parentUuid":"u1","sessionId":"s","isApiErrorMessage":true,"error":"server_error","apiErrorStatus":529,"message":{"id":"x","role":"assistant","model":"<synthetic>","content":[{"type":"text","text":"API Error: 529 Overloaded"}]}}"#,
            "\n",
            r#"{"type":"user","uuid":"u2","parentUuid":"a1","sessionId":"s","message":{"role":"user","content":"continue"}}"#,
            "\n",
            r#"{"type":"assistant","uuid":"a2","parentUuid":"u2","sessionId":"s","message":{"id":"m2","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"Fixed."}]}}"#,
        ));
        let found = conversations(&log);
        let roles: Vec<&str> = found[0].messages.iter().map(|m| m["role"].as_str().unwrap()).collect();
        assert_eq!(roles, ["user", "user", "assistant"]);
    }

    #[test]
    fn a_session_may_open_with_many_bookkeeping_lines() {
        // A resumed session's file: one summary per earlier conversation, snapshots and
        // settings before the first message.
        let mut text = String::new();
        for i in 0..15 {
            text.push_str(&format!(
                "{{\"type\":\"summary\",\"summary\":\"Earlier work {i}\",\"leafUuid\":\"l{i}\"}}\n"
            ));
        }
        text.push_str(
            r#"{"type":"file-history-snapshot","messageId":"m0","snapshot":{},"isSnapshotUpdate":false}"#,
        );
        text.push('\n');
        text.push_str(r#"{"type":"permission-mode","permissionMode":"default","sessionId":"s"}"#);
        text.push('\n');
        text.push_str(r#"{"type":"user","uuid":"u1","parentUuid":null,"sessionId":"s","message":{"role":"user","content":"Fix it"}}"#);
        let log = lines(&text);
        assert!(detect(&log));
        let found = conversations(&log);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].messages.len(), 1, "bookkeeping lines are no messages");
    }

    #[test]
    fn the_usage_each_conversation_logged_gives_its_peak() {
        let log = lines(concat!(
            r#"{"type":"user","uuid":"u1","sessionId":"s","message":{"role":"user","content":"Fix it"}}"#,
            "\n",
            r#"{"type":"assistant","uuid":"a1","sessionId":"s","message":{"id":"m1","role":"assistant","content":[{"type":"text","text":"On it"}],"usage":{"input_tokens":10,"cache_creation_input_tokens":900,"cache_read_input_tokens":0,"output_tokens":5}}}"#,
            "\n",
            r#"{"type":"user","uuid":"c1","parentUuid":"a1","isSidechain":true,"sessionId":"s","message":{"role":"user","content":"Sub task"}}"#,
            "\n",
            r#"{"type":"assistant","uuid":"c2","parentUuid":"c1","isSidechain":true,"sessionId":"s","message":{"id":"m9","role":"assistant","content":[{"type":"text","text":"Sub done"}],"usage":{"input_tokens":4000,"output_tokens":9}}}"#,
            "\n",
            r#"{"type":"assistant","uuid":"a2","sessionId":"s","message":{"id":"m2","role":"assistant","content":[{"type":"text","text":"Done"}],"usage":{"input_tokens":3,"cache_creation_input_tokens":20,"cache_read_input_tokens":910,"output_tokens":2}}}"#,
        ));
        let found = conversations(&log);
        // Input, cache writes and cache reads together: 933 beats the first request's 910.
        assert_eq!(found[0].logged_peak, Some(933));
        assert_eq!(found[1].logged_peak, Some(4000), "a sub-agent's requests are its own");
    }
}
