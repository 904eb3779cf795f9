//! [`Trace`]: a history driven through a guard stack exactly as the engine drives it, with
//! every decision kept.

use std::fmt;

use looprail_loop_core::config::LoopConfig;
use looprail_loop_core::event::Event;
use looprail_loop_core::guard::{Counters, Decision, Guard, TurnView};
use looprail_loop_core::message::{Message, ToolCall, ToolResult};
use looprail_loop_core::provider::{ModelResponse, StopReason};
use looprail_loop_core::tool::ToolChoice;

use super::history::{History, Step};

/// The decisions taken at one tool call.
#[derive(Debug, Clone, PartialEq)]
pub struct TraceStep {
    /// The 0-based index of the call over the history.
    pub call_index: usize,
    /// Every decision, in order (after the response, before and after the tools).
    pub decisions: Vec<Decision>,
}

/// A history and what the stack decided on it.
#[derive(Debug, Clone, PartialEq)]
pub struct Trace {
    /// The history.
    pub history: History,
    /// One entry per tool call that drew decisions.
    pub steps: Vec<TraceStep>,
    /// The tool that hands a run to a human (`ask_human`).
    pub ask_tool: Option<String>,
}

/// Drives `history` through `guards` with the engine's three hooks per call and a user-turn
/// reset per [`Step::UserTurn`]. Call ids are `c0`, `c1`, ... over the whole history.
pub(crate) fn drive(
    guards: &mut [Box<dyn Guard>],
    history: &History,
    config: &LoopConfig,
    first: usize,
) -> Trace {
    let mut counters = Counters { user_turns: 1, ..Counters::default() };
    let mut messages = vec![Message::user("task")];
    let mut steps = Vec::new();
    let mut index = first;
    for step in &history.steps {
        let Step::Call { tool, arguments, output, is_error } = step else {
            guards.iter_mut().for_each(|g| g.on_user_turn());
            counters.start_user_turn(None);
            messages.push(Message::user("and now?"));
            continue;
        };
        let id = format!("c{index}");
        let call = ToolCall::new(&id, tool.clone(), arguments.clone());
        let result = if *is_error {
            ToolResult::error(&id, output.clone())
        } else {
            ToolResult::ok(&id, output.clone())
        };
        counters.turns += 1;
        counters.iterations += 1;
        counters.tool_calls += 1;
        let response = ModelResponse {
            text: None,
            tool_calls: vec![call.clone()],
            stop_reason: StopReason::ToolUse,
            usage: None,
            model: "kit".into(),
            id: None,
        };
        messages.push(Message::assistant_with_calls(None, vec![call.clone()]));
        let mut decisions = Vec::new();
        let calls = std::slice::from_ref(&call);
        {
            let view =
                TurnView { counters: &counters, messages: &messages, config, elapsed: Default::default() };
            for guard in guards.iter_mut() {
                decisions.extend(guard.after_response(&view, &response));
            }
            for guard in guards.iter_mut() {
                decisions.extend(guard.before_tools(&view, calls));
            }
        }
        messages.push(Message::tool_result(result.clone()));
        let view = TurnView { counters: &counters, messages: &messages, config, elapsed: Default::default() };
        for guard in guards.iter_mut() {
            decisions.extend(guard.after_tools(&view, calls, std::slice::from_ref(&result)));
        }
        if !decisions.is_empty() {
            steps.push(TraceStep { call_index: index, decisions });
        }
        index += 1;
    }
    Trace { history: history.clone(), steps, ask_tool: config.guardrails.ask_human_tool.clone() }
}

/// The rank of a ladder level named in an event (`None` for levels off the ladder).
pub(crate) fn rank(level: &str) -> Option<u8> {
    match level {
        "nudge" => Some(1),
        "directive" => Some(2),
        "ask_human" => Some(3),
        _ => None,
    }
}

impl Trace {
    /// The first call at which the run would stop or be handed to a human, and how.
    pub fn handed_over_at(&self) -> Option<(usize, String)> {
        self.steps.iter().find_map(|step| {
            step.decisions.iter().find_map(|d| match d {
                Decision::Stop(cause) => Some((step.call_index, format!("stop: {}", cause.describe()))),
                Decision::ForceToolChoice(ToolChoice::Named(name))
                    if Some(name) == self.ask_tool.as_ref() =>
                {
                    Some((step.call_index, "ask_human".to_owned()))
                }
                _ => None,
            })
        })
    }

    /// Every loop-detection event, as `(call index, level)`.
    pub fn detections(&self) -> Vec<(usize, String)> {
        self.steps
            .iter()
            .flat_map(|step| {
                step.decisions.iter().filter_map(move |d| match d {
                    Decision::Emit(Event::LoopDetected { level, .. }) => {
                        Some((step.call_index, level.clone()))
                    }
                    _ => None,
                })
            })
            .collect()
    }

    /// What each decision does (its kind, event name and level), keyed by call index: the
    /// same for two histories that differ only in how arguments are written.
    pub(crate) fn shape(&self) -> Vec<String> {
        self.steps
            .iter()
            .flat_map(|s| {
                s.decisions.iter().map(move |d| {
                    let what = match d {
                        Decision::Emit(Event::LoopDetected { level, detector, .. }) => {
                            format!("detected {detector} {level}")
                        }
                        Decision::Emit(event) => format!("event {}", event.name()),
                        Decision::Inject(_) => "inject".to_owned(),
                        Decision::ForceToolChoice(choice) => format!("force {choice:?}"),
                        Decision::ReplaceResult(_) => "replace result".to_owned(),
                        Decision::Stop(cause) => format!("stop {}", cause.describe()),
                        other => format!("{other:?}"),
                    };
                    format!("{}: {what}", s.call_index)
                })
            })
            .collect()
    }

    /// Decisions rendered in full for comparison, keyed by call index.
    pub(crate) fn rendered(&self) -> Vec<String> {
        self.steps
            .iter()
            .flat_map(|s| s.decisions.iter().map(move |d| format!("{}: {d:?}", s.call_index)))
            .collect()
    }
}

impl fmt::Display for Trace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "history ({} calls):", self.history.calls())?;
        write!(f, "{}", self.history)?;
        writeln!(f, "decisions:")?;
        if self.steps.is_empty() {
            writeln!(f, "  (none)")?;
        }
        for step in &self.steps {
            for decision in &step.decisions {
                let text = match decision {
                    Decision::Emit(event) => format!("event {} {event}", event.name()),
                    other => format!("{other:?}"),
                };
                let text: String = text.chars().take(160).collect();
                writeln!(f, "  at #{}: {text}", step.call_index)?;
            }
        }
        Ok(())
    }
}
