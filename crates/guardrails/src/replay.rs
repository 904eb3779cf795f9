//! Offline replay (B5): recorded conversations through the same guard stack a live run uses,
//! with tool results taken from the log. This is what `looprail audit` runs.

use looprail_loop_core::config::LoopConfig;
use looprail_loop_core::context::LoggedContext;
use looprail_loop_core::event::Event;
use looprail_loop_core::guard::{Counters, Decision, Guard, TurnView};
use looprail_loop_core::message::{Message, Role, ToolCall, ToolResult};
use looprail_loop_core::outcome::StopCause;
use looprail_loop_core::provider::{ModelResponse, StopReason, Usage};
use looprail_loop_core::tool::ToolChoice;
use looprail_loop_core::watch::{WatchReplies, WatchedPart, degenerate_reply, inspect};
use serde::{Deserialize, Serialize};

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

fn limit_name(reason: looprail_loop_core::outcome::LimitReason) -> String {
    looprail_loop_core::event::wire_name(&reason).unwrap_or_default()
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

struct Replayer<'a> {
    report: ReplayReport,
    calls: &'a [ToolCall],
    first_index: u64,
}

impl Replayer<'_> {
    fn last(&self) -> (u64, String) {
        let n = self.calls.len() as u64;
        (
            self.first_index + n.saturating_sub(1),
            self.calls.last().map(|c| c.name.clone()).unwrap_or_default(),
        )
    }

    /// Records decisions; returns true when the run would stop here.
    fn take(&mut self, decisions: Vec<Decision>, ask_tool: Option<&str>) -> bool {
        for decision in decisions {
            match decision {
                Decision::Emit(Event::LoopDetected { call_index, detector, tier, tool, level, evidence }) => {
                    self.report.events.push(ReplayEvent {
                        call_index,
                        event: "agent.loop.detected".into(),
                        detector,
                        level,
                        tool,
                        tier,
                        evidence,
                    });
                }
                Decision::Emit(Event::GuardIntervened { guard, action }) => {
                    let (call_index, tool) = self.last();
                    let level = if action == "reflection" { action } else { "nudge".to_owned() };
                    self.report.events.push(ReplayEvent {
                        call_index,
                        event: "agent.guardrail.intervened".into(),
                        detector: guard,
                        level,
                        tool,
                        tier: String::new(),
                        evidence: Vec::new(),
                    });
                }
                Decision::ForceToolChoice(ToolChoice::Named(name)) if Some(name.as_str()) == ask_tool => {
                    let at = self.report.events.last().map_or_else(|| self.last().0, |e| e.call_index);
                    self.report.stopped_at = Some(at);
                    self.report.stop_reason = Some("ask_human".into());
                    return true;
                }
                Decision::Stop(cause) => {
                    let at = self.report.events.last().map_or_else(|| self.last().0, |e| e.call_index);
                    self.report.stopped_at = Some(at);
                    self.report.stop_reason = Some(match cause {
                        StopCause::LoopDetected { detector, .. } => format!("loop_detected:{detector}"),
                        StopCause::Limit { reason } => {
                            // A live run answers a limit with its fallback reply (F10).
                            self.report.fallback_reply = true;
                            format!("limit:{}", limit_name(reason))
                        }
                        other => other.describe(),
                    });
                    return true;
                }
                _ => {}
            }
        }
        false
    }
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
    let mut counters = Counters { user_turns: 1, ..Counters::default() };
    // The assistant messages so far: the index of a reply in `timeline`.
    let mut reply = 0usize;
    let mut report = ReplayReport::default();
    let mut seen_user = false;
    let ask_tool = config.guardrails.ask_human_tool.as_deref();
    let mut context = LoggedContext::default();
    for (i, message) in messages.iter().enumerate() {
        // The prompt a turn here is sent: the context before this message.
        let prompt = context.tokens();
        context.push(message, tokens.get(i).copied().unwrap_or(0));
        match message.role {
            Role::User if !message.is_internal() => {
                if seen_user {
                    counters.start_user_turn(None);
                    guards.iter_mut().for_each(|g| g.on_user_turn());
                }
                seen_user = true;
            }
            Role::Assistant => {
                let elapsed = timeline.elapsed(reply);
                counters.mark_stretch_time(u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX));
                if let Some(stop) = before_turn(messages, i, guards, config, &counters, caps, elapsed) {
                    let made = counters.tool_calls;
                    let mut replayer = Replayer {
                        report: std::mem::take(&mut report),
                        calls: &[],
                        first_index: u64::from(made),
                    };
                    replayer.take(stop, None);
                    report = replayer.report;
                    report.stopped_at = Some(u64::from(made.saturating_sub(1)));
                    report.tool_calls = messages.iter().flat_map(Message::tool_calls).count() as u64;
                    return report;
                }
                let calls: Vec<ToolCall> = message.tool_calls().cloned().collect();
                counters.turns += 1;
                counters.iterations += 1;
                let estimated = Usage {
                    input_tokens: prompt,
                    output_tokens: tokens.get(i).copied().unwrap_or(0),
                    ..Usage::default()
                };
                let spent = timeline.usage(reply, &estimated);
                counters.usage.add(spent);
                counters.cost += timeline.cost(reply, config, spent);
                reply += 1;
                let response = ModelResponse {
                    text: message.joined_text(),
                    tool_calls: calls.clone(),
                    stop_reason: if calls.is_empty() { StopReason::EndTurn } else { StopReason::ToolUse },
                    usage: None,
                    model: String::new(),
                    id: None,
                };
                let view = TurnView { counters: &counters, messages: &messages[..=i], config, elapsed };
                if let Some(replies) = replies
                    && degenerate(&response, replies, guards, &view, &mut report)
                {
                    report.tool_calls = messages.iter().flat_map(Message::tool_calls).count() as u64;
                    return report;
                }
                if calls.is_empty() {
                    continue;
                }
                let results = results_for(messages, i + 1, &calls);
                let mut replayer = Replayer {
                    report: std::mem::take(&mut report),
                    calls: &calls,
                    first_index: counters.tool_calls.into(),
                };
                counters.tool_calls =
                    counters.tool_calls.saturating_add(u32::try_from(calls.len()).unwrap_or(u32::MAX));
                let view = TurnView { counters: &counters, messages: &messages[..=i], config, elapsed };
                let mut stopped = false;
                for guard in guards.iter_mut() {
                    stopped |= replayer.take(guard.after_response(&view, &response), ask_tool);
                }
                // A hint (ReplaceResult) is recorded through its own LoopDetected event; the
                // logged result is still fed below, as the log is all there is.
                for guard in guards.iter_mut() {
                    stopped |= replayer.take(guard.before_tools(&view, &calls), ask_tool);
                }
                if !stopped {
                    let answered = messages[i + 1..].iter().take_while(|m| m.role == Role::Tool).count();
                    let view = TurnView {
                        counters: &counters,
                        messages: &messages[..=i + answered],
                        config,
                        elapsed,
                    };
                    for guard in guards.iter_mut() {
                        stopped |= replayer.take(guard.after_tools(&view, &calls, &results), ask_tool);
                    }
                }
                report = replayer.report;
                if stopped {
                    report.tool_calls = messages.iter().flat_map(Message::tool_calls).count() as u64;
                    return report;
                }
            }
            _ => {}
        }
    }
    report.tool_calls = counters.tool_calls.into();
    report
}

/// Reads `response` with a watch from `replies`; a degenerate one is recorded and given to the
/// guards cut, as a live run would give it. True when a guard would stop the run there.
fn degenerate(
    response: &ModelResponse,
    replies: &dyn WatchReplies,
    guards: &mut [Box<dyn Guard>],
    view: &TurnView<'_>,
    report: &mut ReplayReport,
) -> bool {
    let mut watch = replies.watch();
    let Some((found, read)) = inspect(response, watch.as_mut()) else { return false };
    let counters = view.counters;
    report.degenerate_replies.push(DegenerateFound {
        turn: counters.turns.into(),
        calls_before: counters.tool_calls.into(),
        part: found.part,
        period: found.period,
        repeats: found.repeats,
        kept_bytes: found.keep,
        read_bytes: read,
    });
    let cut = degenerate_reply("", response.text.as_deref().unwrap_or_default(), found);
    let mut replayer =
        Replayer { report: std::mem::take(report), calls: &[], first_index: counters.tool_calls.into() };
    let ask_tool = view.config.guardrails.ask_human_tool.as_deref();
    let mut stopped = false;
    for guard in guards.iter_mut() {
        stopped |= replayer.take(guard.after_response(view, &cut), ask_tool);
    }
    *report = replayer.report;
    stopped
}

/// The decisions before a turn: every guard's `before_turn`, then the iteration cap.
fn before_turn(
    messages: &[Message],
    i: usize,
    guards: &mut [Box<dyn Guard>],
    config: &LoopConfig,
    counters: &Counters,
    caps: bool,
    elapsed: std::time::Duration,
) -> Option<Vec<Decision>> {
    let view = TurnView { counters, messages: &messages[..i], config, elapsed };
    let decisions: Vec<Decision> = guards.iter_mut().flat_map(|g| g.before_turn(&view)).collect();
    if decisions.iter().any(|d| matches!(d, Decision::Stop(_))) {
        return Some(decisions);
    }
    if caps && counters.iterations >= config.limits.max_iterations {
        let reason = looprail_loop_core::outcome::LimitReason::MaxIterations;
        return Some(vec![Decision::Stop(StopCause::Limit { reason })]);
    }
    None
}
