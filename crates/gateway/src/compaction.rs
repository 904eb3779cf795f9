//! Optional compaction of long requests (F27's pattern, for clients that never compact): when
//! the request the gateway is about to send passes a share of the model's window (70% by
//! default), the older part of the conversation is replaced upstream by a summary, obtained once
//! from the upstream and kept in the conversation's state with the number of messages it covers.
//! Later requests (which still carry the whole history: the client never sees the summary)
//! reuse it, and only when the request passes the threshold again is the summary extended over
//! the next stretch. On the Responses API the same holds for the input items, cut only before
//! the first item of a reply (a reasoning item stays with what it produced).
//!
//! The decision is plain computation over a [`Request`]; the server makes the summary call.
//! Sizes are estimated from the bytes the client sent (4 bytes of JSON a token: JSON's own
//! syntax makes this overestimate, so compaction comes early rather than late) and cost nothing
//! per message.

use looprail_loop_core::message::{Message, Role};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::request::Request;
use crate::wire::{Api, TAG};

/// Bytes of JSON counted as one token.
const BYTES_PER_TOKEN: usize = 4;
/// The longest a message gets in the transcript sent for summary, in characters.
const MESSAGE_CHARS: usize = 2_000;

/// When and how much to compact.
#[derive(Debug, Clone, PartialEq)]
pub struct CompactionSettings {
    /// The model's context window in tokens.
    pub context_window: u64,
    /// The share of the window a request may reach before it is compacted.
    pub threshold: f64,
    /// The share of the window kept verbatim at the end of a compacted request.
    pub keep_fraction: f64,
    /// The output cap of the summary call (sent on Anthropic, which requires one).
    pub summary_max_tokens: u32,
    /// The model that writes summaries; `None` uses the request's own.
    pub summary_model: Option<String>,
}

impl Default for CompactionSettings {
    fn default() -> Self {
        Self {
            context_window: 128_000,
            threshold: 0.7,
            keep_fraction: 0.3,
            summary_max_tokens: 1_024,
            summary_model: None,
        }
    }
}

/// A conversation's summary: what replaces its first `upto` messages (leading system
/// messages excepted) upstream.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// How many of the client's messages it covers.
    pub upto: usize,
    /// The summary text.
    pub text: String,
}

/// What to do with a request's size.
#[derive(Debug, Clone, PartialEq)]
pub enum Plan {
    /// Send it as it is.
    Keep,
    /// Replace its messages before `upto` with the summary already kept.
    Reuse {
        /// Where the verbatim part starts.
        upto: usize,
    },
    /// Summarise messages `from..upto` (after the summary already kept, if any) and replace
    /// everything before `upto` with the result.
    Summarise {
        /// The first message to summarise.
        from: usize,
        /// Where the verbatim part starts.
        upto: usize,
    },
}

/// How many messages lead the request as system prompts (kept whatever happens).
pub fn leading_system(request: &mut Request<'_>) -> Result<usize, String> {
    let mut leading = 0;
    while leading < request.len() && {
        let messages = request.message(leading)?;
        !messages.is_empty() && messages.iter().all(|m| m.role == Role::System)
    } {
        leading += 1;
    }
    Ok(leading)
}

/// Decides whether `request` (a body of `body_len` bytes) needs compacting, given the summary
/// the conversation already has.
pub fn plan(
    settings: &CompactionSettings,
    request: &mut Request<'_>,
    summary: Option<&Summary>,
    body_len: usize,
) -> Result<Plan, String> {
    let len = request.len();
    let leading = leading_system(request)?;
    let kept = summary.filter(|s| s.upto > leading && s.upto < len);
    let start = kept.map_or(leading, |s| s.upto);
    let removed: usize = (leading..start).map(|i| request.raw_len(i)).sum();
    let summary_bytes = kept.map_or(0, |s| s.text.len() + 200);
    let estimate = (body_len.saturating_sub(removed) + summary_bytes) / BYTES_PER_TOKEN;
    let settled = match kept {
        Some(s) => Plan::Reuse { upto: s.upto },
        None => Plan::Keep,
    };
    if (estimate as f64) <= settings.threshold * settings.context_window as f64 {
        return Ok(settled);
    }
    // Keep the most recent messages that fit the verbatim share; summarise the stretch before.
    let keep_bytes = (settings.keep_fraction * settings.context_window as f64) as usize * BYTES_PER_TOKEN;
    let mut tail = 0;
    let mut cut = None;
    for i in (start.max(leading + 1)..len).rev() {
        tail += request.raw_len(i);
        if tail > keep_bytes {
            cut = Some(i + 1);
            break;
        }
    }
    let Some(cut) = cut else { return Ok(settled) };
    // The verbatim part starts at a reply of the model, so no tool result loses its call and
    // the summary (a user message) is followed by the assistant, as Anthropic requires.
    for upto in cut..len {
        if request.starts_reply(upto)? {
            return Ok(if upto > start { Plan::Summarise { from: start, upto } } else { settled });
        }
    }
    Ok(settled)
}

fn clipped(text: &str) -> String {
    if text.chars().count() <= MESSAGE_CHARS {
        return text.to_owned();
    }
    let head: String = text.chars().take(MESSAGE_CHARS).collect();
    format!("{head} […]")
}

/// The transcript of `messages` the summary is written from, at most `max_chars` long (the
/// most recent part kept).
pub fn transcript(messages: &[Message], max_chars: usize) -> String {
    let mut lines: Vec<String> = Vec::new();
    for message in messages {
        let text = message.joined_text().unwrap_or_default();
        match message.role {
            Role::Tool => {
                for result in message.tool_results() {
                    lines.push(format!("tool result ({}): {}", result.call_id, clipped(&result.content)));
                }
            }
            role => {
                if !text.is_empty() {
                    lines.push(format!("{}: {}", format!("{role:?}").to_lowercase(), clipped(&text)));
                }
                for call in message.tool_calls() {
                    lines.push(format!("assistant called {}({})", call.name, clipped(&call.arguments)));
                }
            }
        }
    }
    let mut out = Vec::new();
    let mut size = 0;
    for line in lines.iter().rev() {
        size += line.len() + 1;
        if size > max_chars {
            out.push("(earlier messages omitted)".to_owned());
            break;
        }
        out.push(line.clone());
    }
    out.reverse();
    out.join("\n")
}

/// The body of the summary call: one user message holding the earlier summary and the
/// transcript, no tools.
pub fn summary_request(
    api: Api,
    settings: &CompactionSettings,
    model: &str,
    previous: Option<&str>,
    messages: &[Message],
) -> Value {
    // The transcript may fill about half the window.
    let max_chars = (settings.context_window as usize / 2).saturating_mul(BYTES_PER_TOKEN);
    let earlier = previous.map(|p| format!("Summary of what came before:\n{p}\n\n")).unwrap_or_default();
    let prompt = format!(
        "Summarise the conversation below for the assistant that will continue it: the user's \
         goal, what was done and found (files, commands, results, errors), the decisions made, \
         and what remains to do. Be specific and brief; reply with the summary only.\n\n\
         {earlier}Conversation:\n{}",
        transcript(messages, max_chars)
    );
    let model = settings.summary_model.as_deref().unwrap_or(model);
    let asked = json!([{ "role": "user", "content": prompt }]);
    match api {
        Api::OpenAi => json!({ "model": model, "messages": asked }),
        Api::Anthropic => {
            json!({ "model": model, "messages": asked, "max_tokens": settings.summary_max_tokens })
        }
        // Not stored upstream: the summary lives in the gateway's conversation state.
        Api::Responses => json!({ "model": model, "input": asked, "store": false }),
    }
}

/// Replaces the messages (the Responses API's input items) of `body` from `leading` to `upto`
/// with one user message holding the summary.
pub fn apply(api: Api, body: &mut Value, leading: usize, upto: usize, summary: &str) {
    let field = if api == Api::Responses { "input" } else { "messages" };
    let Some(messages) = body[field].as_array_mut() else { return };
    if leading >= upto || upto > messages.len() {
        return;
    }
    let text = format!(
        "{TAG} The earlier part of this conversation was summarised to fit the context window:\n{summary}"
    );
    let summary = match api {
        Api::Responses => crate::wire::responses::user_text_item(&text),
        _ => json!({ "role": "user", "content": text }),
    };
    messages.splice(leading..upto, [summary]);
}

#[cfg(test)]
mod tests;
