//! Offline replay (B5): recorded conversations through the same guard stack a live run uses,
//! with tool results taken from the log. This is what `looprail audit` runs.

use looprail_loop_core::config::LoopConfig;
use looprail_loop_core::context::LoggedContext;
use looprail_loop_core::guard::Guard;
use looprail_loop_core::message::{Message, Role, ToolCall, ToolResult};
use looprail_loop_core::provider::{ModelResponse, StopReason, Usage};
use looprail_loop_core::watch::{WatchReplies, WatchedPart, inspect};
use serde::{Deserialize, Serialize};

use crate::session::GuardSession;

pub use crate::error_patterns::{ErrorClassifier, ErrorPatterns};

mod loops;
mod timeline;
pub use loops::{ANSWER_LEVELS, LOOP_DISTINCT, LOOP_WINDOW, LoopTiming, loop_start};
pub use timeline::{RecordedReply, Timeline};

/// One guard event at a tool call, as the audit reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReplayEvent {
    /// 0-based index over the run of the tool call at which it fired.
    pub call_index: u64,
    /// The stable event name (`agent.loop.detected`, `agent.guardrail.intervened`).
    pub event: String,
    /// The detector or guard.
    pub detector: String,
    /// `nudge`, `directive`, `ask_human`, `hint`, `abort`, `stop` or `reflection`.
    pub level: String,
    /// The tool involved.
    pub tool: String,
    /// The kind of repetition, such as `identical`, `cycle` or `no_novelty` (empty for
    /// guards without tiers).
    #[serde(default)]
    pub tier: String,
    /// The earlier calls (0-based run-wide indices) the call at `call_index` was found to
    /// repeat: why the detector fired. Empty when the guard names none.
    #[serde(default)]
    pub evidence: Vec<u64>,
}

/// What a live run with this stack would have done on a recorded run.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ReplayReport {
    /// Tool calls in the log.
    pub tool_calls: u64,
    /// Guard events in order.
    pub events: Vec<ReplayEvent>,
    /// The call index at which the run would have been stopped or handed to a human.
    pub stopped_at: Option<u64>,
    /// Why: `ask_human`, `loop_detected:<detector>`, `limit:<budget or cap>` (`max_turns`,
    /// `token_budget`, `tool_call_budget`, `cost_limit`, `max_iterations`) or another stop
    /// cause.
    pub stop_reason: Option<String>,
    /// True when the stop is a budget or cap, which a live run answers with one fallback reply
    /// (F10): one more model call, counted here.
    #[serde(default)]
    pub fallback_reply: bool,
    /// Replies a degenerate-reply watch found repeating themselves (B14), in order (only with
    /// [`replay_watched`]).
    #[serde(default)]
    pub degenerate_replies: Vec<DegenerateFound>,
}

/// A recorded reply that repeated one block until it ended (B14): a live run would have cut it
/// after `kept_bytes` of its `read_bytes`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DegenerateFound {
    /// The model turn (1-based over the run).
    pub turn: u64,
    /// Tool calls made before it.
    pub calls_before: u64,
    /// Its text, or the arguments of one of its calls.
    #[serde(flatten)]
    pub part: WatchedPart,
    /// The repeated block's length in bytes.
    pub period: u32,
    /// Copies of it the watch had read when it fired.
    pub repeats: u32,
    /// Bytes of the part a live run keeps (up to where the repetition began).
    pub kept_bytes: u64,
    /// Bytes of the part in the log.
    pub read_bytes: u64,
}

/// The results of `calls` among the tool messages from `messages[start]` on, in call order;
/// a call with no logged result gets an empty one.
pub fn results_for(messages: &[Message], start: usize, calls: &[ToolCall]) -> Vec<ToolResult> {
    let following: Vec<&ToolResult> = messages[start..]
        .iter()
        .take_while(|m| m.role == Role::Tool)
        .flat_map(Message::tool_results)
        .collect();
    calls
        .iter()
        .map(|call| {
            following
                .iter()
                .find(|r| r.call_id == call.id)
                .map_or_else(|| ToolResult::ok(&call.id, ""), |r| (*r).clone())
        })
        .collect()
}

/// Replays `messages` through `guards` and reports where they would have intervened. Tool
/// results must already carry their error flags (see [`ErrorPatterns::classify`]). A user
/// message after the first starts a new user turn, as in a live conversation. Only the
/// guards act here: no iteration cap, and token budgets count nothing (see [`replay_counted`]
/// for the whole live stack).
pub fn replay(messages: &[Message], guards: &mut [Box<dyn Guard>], config: &LoopConfig) -> ReplayReport {
    replay_with(messages, guards, config, &[], false, None, &Timeline::default())
}

/// [`replay`] with each message's token count (`tokens[i]` for `messages[i]`), so token budgets
/// are spent as in a live run: each turn costs its whole prompt (every message before it) as
/// input and its own message as output. Before each turn the guards' `before_turn` runs (the
/// budgets of `loop-core`'s default guards stop there) and the iteration cap is checked.
pub fn replay_counted(
    messages: &[Message],
    guards: &mut [Box<dyn Guard>],
    config: &LoopConfig,
    tokens: &[u64],
) -> ReplayReport {
    replay_with(messages, guards, config, tokens, true, None, &Timeline::default())
}

/// [`replay_counted`] with each recorded reply also read by a degenerate-reply watch (B14): a
/// reply found repeating itself is listed in [`ReplayReport::degenerate_replies`] and given to
/// the guards as a live run would give it (cut, [`StopReason::Degenerate`], no calls), so the
/// ladder's reaction is replayed too. The log's calls of that reply are still replayed: the
/// log is all there is of what came next.
pub fn replay_watched(
    messages: &[Message],
    guards: &mut [Box<dyn Guard>],
    config: &LoopConfig,
    tokens: &[u64],
    replies: &dyn WatchReplies,
) -> ReplayReport {
    replay_with(messages, guards, config, tokens, true, Some(replies), &Timeline::default())
}

/// [`replay_watched`] on the log's own record of its replies (`timeline`): each reply's recorded
/// usage is spent (an estimate where it has none) and priced at the config's prices by its
/// model, and the guards see the time each request went out, so cost budgets and the soft and
/// hard time limits stop the replay where they would have stopped the run.
pub fn replay_recorded(
    messages: &[Message],
    guards: &mut [Box<dyn Guard>],
    config: &LoopConfig,
    tokens: &[u64],
    replies: &dyn WatchReplies,
    timeline: &Timeline,
) -> ReplayReport {
    replay_with(messages, guards, config, tokens, true, Some(replies), timeline)
}

fn replay_with(
    messages: &[Message],
    guards: &mut [Box<dyn Guard>],
    config: &LoopConfig,
    tokens: &[u64],
    caps: bool,
    replies: Option<&dyn WatchReplies>,
    timeline: &Timeline,
) -> ReplayReport {
    let mut session = GuardSession::new(guards, config);
    if !caps {
        session = session.without_iteration_cap();
    }
    // The assistant messages so far: the index of a reply in `timeline`.
    let mut reply = 0usize;
    let mut context = LoggedContext::default();
    let logged_calls = || messages.iter().flat_map(Message::tool_calls).count() as u64;
    for (i, message) in messages.iter().enumerate() {
        // The prompt a turn here is sent: the context before this message.
        let prompt = context.tokens();
        context.push(message, tokens.get(i).copied().unwrap_or(0));
        match message.role {
            Role::User if !message.is_internal() => session.user_message(None),
            Role::Assistant => {
                let at = timeline.elapsed(reply);
                session.before_model(at);
                if session.report().stopped_at.is_some() {
                    break;
                }
                let calls: Vec<ToolCall> = message.tool_calls().cloned().collect();
                let estimated = Usage {
                    input_tokens: prompt,
                    output_tokens: tokens.get(i).copied().unwrap_or(0),
                    ..Usage::default()
                };
                let spent = timeline.usage(reply, &estimated);
                let cost = timeline.cost(reply, config, spent);
                reply += 1;
                let response = ModelResponse {
                    text: message.joined_text(),
                    stop_reason: if calls.is_empty() { StopReason::EndTurn } else { StopReason::ToolUse },
                    tool_calls: calls,
                    usage: None,
                    model: String::new(),
                    id: None,
                };
                let cut = replies.and_then(|r| inspect(&response, r.watch().as_mut()));
                session.model_response(&response, spent, cost, at, cut);
                if session.report().stopped_at.is_some() {
                    break;
                }
                let answered = messages[i + 1..].iter().take_while(|m| m.role == Role::Tool).count();
                if answered == 0 {
                    // Its results are not in the log: the guards never read them.
                    session.drop_open_turn();
                    continue;
                }
                for result in results_for(messages, i + 1, &response.tool_calls) {
                    session.tool_result(result);
                }
                if session.report().stopped_at.is_some() {
                    break;
                }
            }
            _ => {}
        }
    }
    let (_, state) = session.into_parts();
    let mut report = state.report;
    report.tool_calls =
        if report.stopped_at.is_some() { logged_calls() } else { u64::from(state.counters.tool_calls) };
    report
}
