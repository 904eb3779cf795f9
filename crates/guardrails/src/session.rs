//! One agent's guards driven step by step, with no I/O: the state machine behind the audit's
//! replay and behind the guard a host program runs in process (a Python or TypeScript agent
//! framework through looprail's bindings).
//!
//! A host reports what its agent loop does, in order: a user message
//! ([`GuardSession::user_message`]), the moment before each model call
//! ([`GuardSession::before_model`]: budgets, time limits, the iteration cap), each model reply
//! ([`GuardSession::model_response`]: the loop detectors read its calls) and each tool result
//! ([`GuardSession::tool_result`]: the observations). Each step answers with the [`Actions`] the
//! guards asked for, and every guard event is kept in [`GuardSession::report`], in the form
//! `looprail audit` prints. Fed a recorded run, the session reports what the audit reports:
//! [`crate::replay::replay`] is this session driven over a log.
//!
//! ```
//! use std::time::Duration;
//! use looprail_guardrails::session::GuardSession;
//! use looprail_guardrails::{GuardrailsConfig, default_stack};
//! use looprail_loop_core::config::LoopConfig;
//! use looprail_loop_core::message::{ToolCall, ToolResult};
//! use looprail_loop_core::provider::{ModelResponse, StopReason, Usage};
//!
//! let mut session = GuardSession::new(default_stack(&GuardrailsConfig::default()), LoopConfig::default());
//! session.user_message(None);
//! let mut stopped = None;
//! for turn in 0..20 {
//!     let at = Duration::from_secs(turn);
//!     if let Some(cause) = session.before_model(at).stop {
//!         stopped = Some(cause);
//!         break;
//!     }
//!     let call = ToolCall::new(&format!("c{turn}"), "read_file", r#"{"path":"a.txt"}"#);
//!     let reply = ModelResponse {
//!         text: None,
//!         tool_calls: vec![call],
//!         stop_reason: StopReason::ToolUse,
//!         usage: None,
//!         model: String::new(),
//!         id: None,
//!     };
//!     if let Some(cause) = session.model_response(&reply, &Usage::default(), 0.0, at, None).stop {
//!         stopped = Some(cause);
//!         break;
//!     }
//!     let observed = session.tool_result(ToolResult::ok(&format!("c{turn}"), "the same text"));
//!     if let Some(cause) = observed.stop {
//!         stopped = Some(cause);
//!         break;
//!     }
//! }
//! assert!(stopped.is_some(), "a model reading one file over and over is stopped");
//! assert!(!session.report().events.is_empty(), "after the ladder's nudges");
//! ```

use std::borrow::Borrow;
use std::time::Duration;

use looprail_loop_core::config::LoopConfig;
use looprail_loop_core::event::Event;
use looprail_loop_core::guard::{Counters, Decision, Guard, TurnView};
use looprail_loop_core::message::{Message, ToolCall, ToolResult};
use looprail_loop_core::outcome::{LimitReason, StopCause};
use looprail_loop_core::provider::{ModelResponse, Usage};
use looprail_loop_core::tool::ToolChoice;
use looprail_loop_core::watch::{Degenerated, degenerate_reply};
use serde::{Deserialize, Serialize};

use crate::replay::{DegenerateFound, ReplayEvent, ReplayReport};

/// What a session keeps between steps: all a host saves to carry it across processes (with
/// the guards' own states, [`crate::saved_states`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionState {
    /// Turns, tool calls, tokens and cost so far.
    pub counters: Counters,
    /// A user message was seen: the next one starts a new stretch.
    #[serde(default)]
    pub seen_user: bool,
    /// The last reply's calls, while their results come in.
    #[serde(default)]
    pub open: Option<OpenTurn>,
    /// Every guard event so far (less those taken with [`GuardSession::take_events`]), and
    /// where the run was stopped.
    #[serde(default)]
    pub report: ReplayReport,
    /// The call index of the last guard event, taken or not (a stop is placed there).
    #[serde(default)]
    pub last_event_at: Option<u64>,
}

impl Default for SessionState {
    fn default() -> Self {
        // One user turn from the start, as a run has: the first user message does not start
        // a second one.
        Self {
            counters: Counters { user_turns: 1, ..Counters::default() },
            seen_user: false,
            open: None,
            report: ReplayReport::default(),
            last_event_at: None,
        }
    }
}

/// A reply's tool calls and the results reported so far.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OpenTurn {
    /// The calls, in the reply's order.
    pub calls: Vec<ToolCall>,
    /// Each call's result, once reported.
    pub results: Vec<Option<ToolResult>>,
    /// The run-wide index of the first call.
    pub first_index: u64,
    /// The run's time at the reply's request.
    pub at_ms: u64,
}

/// What the guards asked for at one step.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Actions {
    /// The guard events of this step (also kept in the session's report).
    pub events: Vec<ReplayEvent>,
    /// Messages for the model (a nudge, a directive, a reflection prompt), in order.
    pub inject: Vec<Message>,
    /// Calls not to run, each with the result the model reads instead.
    pub replace: Vec<ToolResult>,
    /// The ladder's highest rung reached at this step (`nudge`, `directive`...), if it moved.
    pub escalated: Option<String>,
    /// The guards want a human's answer before the agent goes on (the ladder's ask rung).
    pub ask_human: bool,
    /// A tool the next reply must call (other than the ask-the-user tool).
    pub force_tool: Option<String>,
    /// The agent must stop, for this cause (a loop, a budget, a time limit).
    pub stop: Option<StopCause>,
}

impl Actions {
    /// True when the guards asked for nothing.
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

/// One agent's guards and what they have seen (see the [module docs](self)). `G` holds the
/// guards (a `Vec` owned by the session, or a slice borrowed for its time), `C` the loop's
/// settings.
pub struct GuardSession<G = Vec<Box<dyn Guard>>, C = LoopConfig> {
    guards: G,
    config: C,
    state: SessionState,
    iteration_cap: bool,
}

impl<G, C> std::fmt::Debug for GuardSession<G, C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GuardSession").field("state", &self.state).finish_non_exhaustive()
    }
}

impl<G: AsMut<[Box<dyn Guard>]>, C: Borrow<LoopConfig>> GuardSession<G, C> {
    /// A new session of `guards`, with the loop's settings `config`.
    pub fn new(guards: G, config: C) -> Self {
        Self::resume(guards, config, SessionState::default())
    }

    /// A session that goes on from `state` (the guards carry their own states).
    pub fn resume(guards: G, config: C, state: SessionState) -> Self {
        Self { guards, config, state, iteration_cap: true }
    }

    /// The same session with no iteration cap: only the guards stop it.
    pub fn without_iteration_cap(self) -> Self {
        Self { iteration_cap: false, ..self }
    }

    /// What the session keeps between steps.
    pub fn state(&self) -> &SessionState {
        &self.state
    }

    /// The guards, in the order they run.
    pub fn guards(&self) -> &G {
        &self.guards
    }

    /// Every guard event so far, and the stop, in the audit's form.
    pub fn report(&self) -> &ReplayReport {
        &self.state.report
    }

    /// The guard events since the last call, taken out of the report (a long-lived session
    /// keeps none it has handed on).
    pub fn take_events(&mut self) -> Vec<ReplayEvent> {
        std::mem::take(&mut self.state.report.events)
    }

    /// The guards and the state, taken apart.
    pub fn into_parts(self) -> (G, SessionState) {
        (self.guards, self.state)
    }

    /// A message from the user: after the first, a new stretch, whose budgets and ladder
    /// start afresh. `at` is the run's time when it came, when known (else the next model
    /// call's time starts the stretch).
    pub fn user_message(&mut self, at: Option<Duration>) {
        if self.state.seen_user {
            self.state.counters.start_user_turn(at.map(millis));
            self.guards.as_mut().iter_mut().for_each(|g| g.on_user_turn());
        }
        self.state.seen_user = true;
    }

    /// Restarts every guard's ladder, as a human's answer does, within the same stretch.
    pub fn restart_guards(&mut self) {
        self.guards.as_mut().iter_mut().for_each(|g| g.on_user_turn());
    }

    /// Before a model call at the run's time `at`: the budgets, the time limits and the
    /// iteration cap. A reply whose results did not all come in is forgotten: the guards read
    /// a reply's calls with all their results, or not at all.
    pub fn before_model(&mut self, at: Duration) -> Actions {
        self.state.open = None;
        self.state.counters.mark_stretch_time(millis(at));
        let config = self.config.borrow();
        let view = TurnView { counters: &self.state.counters, messages: &[], config, elapsed: at };
        let mut decisions: Vec<Decision> =
            self.guards.as_mut().iter_mut().flat_map(|g| g.before_turn(&view)).collect();
        if !decisions.iter().any(|d| matches!(d, Decision::Stop(_))) {
            if !self.iteration_cap || self.state.counters.iterations < config.limits.max_iterations {
                return Actions::default();
            }
            decisions = vec![Decision::Stop(StopCause::Limit { reason: LimitReason::MaxIterations })];
        }
        let made = u64::from(self.state.counters.tool_calls);
        let mut actions = Actions::default();
        Recorder {
            report: &mut self.state.report,
            last_event_at: &mut self.state.last_event_at,
            calls: &[],
            first_index: made,
            ask_tool: None,
        }
        .take(decisions, &mut actions);
        self.state.report.stopped_at = Some(made.saturating_sub(1));
        actions
    }

    /// A model reply at the run's time `at` that spent `spent` tokens costing `cost`. `cut`
    /// is what a degenerate-reply watch found in it and the bytes of the part it read (see
    /// [`looprail_loop_core::watch::inspect`]): the guards then see the reply cut, as a live
    /// run gives it, before its calls.
    pub fn model_response(
        &mut self,
        response: &ModelResponse,
        spent: &Usage,
        cost: f64,
        at: Duration,
        cut: Option<(Degenerated, u64)>,
    ) -> Actions {
        self.state.open = None;
        let counters = &mut self.state.counters;
        counters.turns += 1;
        counters.iterations += 1;
        counters.usage.add(spent);
        counters.cost += cost;
        let mut actions = Actions::default();
        if let Some((found, read)) = cut
            && self.degenerate(response, found, read, at, &mut actions)
        {
            return actions;
        }
        let calls = &response.tool_calls;
        if calls.is_empty() {
            return actions;
        }
        let first_index = u64::from(self.state.counters.tool_calls);
        let counters = &mut self.state.counters;
        counters.tool_calls =
            counters.tool_calls.saturating_add(u32::try_from(calls.len()).unwrap_or(u32::MAX));
        let config = self.config.borrow();
        let ask_tool = config.guardrails.ask_human_tool.as_deref();
        let view = TurnView { counters: &self.state.counters, messages: &[], config, elapsed: at };
        let mut recorder = Recorder {
            report: &mut self.state.report,
            last_event_at: &mut self.state.last_event_at,
            calls,
            first_index,
            ask_tool,
        };
        let mut stopped = false;
        for guard in self.guards.as_mut().iter_mut() {
            stopped |= recorder.take(guard.after_response(&view, response), &mut actions);
        }
        for guard in self.guards.as_mut().iter_mut() {
            stopped |= recorder.take(guard.before_tools(&view, calls), &mut actions);
        }
        if !stopped {
            self.state.open = Some(OpenTurn {
                calls: calls.clone(),
                results: vec![None; calls.len()],
                first_index,
                at_ms: millis(at),
            });
        }
        actions
    }

    /// A tool call's result (its error flag already set, see
    /// [`crate::replay::ErrorPatterns::classify`]). When it is the last of its reply's calls,
    /// the guards read them all and say what they make of it; before that, and for a result
    /// of no open call, nothing.
    pub fn tool_result(&mut self, result: ToolResult) -> Actions {
        let Some(open) = self.state.open.as_mut() else { return Actions::default() };
        let slot =
            open.calls.iter().zip(&mut open.results).find(|(c, r)| r.is_none() && c.id == result.call_id);
        if let Some((_, slot)) = slot {
            *slot = Some(result);
        }
        if open.results.iter().all(Option::is_some) { self.close_turn() } else { Actions::default() }
    }

    /// Forgets the last reply's calls without the guards reading their results (a log that
    /// records none).
    pub fn drop_open_turn(&mut self) {
        self.state.open = None;
    }

    /// The guards read the open reply's calls and results.
    fn close_turn(&mut self) -> Actions {
        let mut actions = Actions::default();
        let Some(open) = self.state.open.take() else { return actions };
        let results: Vec<ToolResult> = open
            .calls
            .iter()
            .zip(open.results)
            .map(|(call, result)| result.unwrap_or_else(|| ToolResult::ok(&call.id, "")))
            .collect();
        let config = self.config.borrow();
        let ask_tool = config.guardrails.ask_human_tool.as_deref();
        let elapsed = Duration::from_millis(open.at_ms);
        let view = TurnView { counters: &self.state.counters, messages: &[], config, elapsed };
        let mut recorder = Recorder {
            report: &mut self.state.report,
            last_event_at: &mut self.state.last_event_at,
            calls: &open.calls,
            first_index: open.first_index,
            ask_tool,
        };
        for guard in self.guards.as_mut().iter_mut() {
            recorder.take(guard.after_tools(&view, &open.calls, &results), &mut actions);
        }
        actions
    }

    /// A reply the watch found repeating itself: recorded, and shown to the guards cut. True
    /// when the run stops (or is handed to a human) there.
    fn degenerate(
        &mut self,
        response: &ModelResponse,
        found: Degenerated,
        read: u64,
        at: Duration,
        actions: &mut Actions,
    ) -> bool {
        let counters = &self.state.counters;
        self.state.report.degenerate_replies.push(DegenerateFound {
            turn: counters.turns.into(),
            calls_before: counters.tool_calls.into(),
            part: found.part,
            period: found.period,
            repeats: found.repeats,
            kept_bytes: found.keep,
            read_bytes: read,
        });
        let cut = degenerate_reply("", response.text.as_deref().unwrap_or_default(), found);
        let config = self.config.borrow();
        let ask_tool = config.guardrails.ask_human_tool.as_deref();
        let view = TurnView { counters: &self.state.counters, messages: &[], config, elapsed: at };
        let first_index = u64::from(self.state.counters.tool_calls);
        let mut recorder = Recorder {
            report: &mut self.state.report,
            last_event_at: &mut self.state.last_event_at,
            calls: &[],
            first_index,
            ask_tool,
        };
        let mut stopped = false;
        for guard in self.guards.as_mut().iter_mut() {
            stopped |= recorder.take(guard.after_response(&view, &cut), actions);
        }
        stopped
    }
}

fn millis(at: Duration) -> u64 {
    u64::try_from(at.as_millis()).unwrap_or(u64::MAX)
}

/// Turns decisions into the report's events and the step's actions.
struct Recorder<'a> {
    report: &'a mut ReplayReport,
    last_event_at: &'a mut Option<u64>,
    calls: &'a [ToolCall],
    first_index: u64,
    ask_tool: Option<&'a str>,
}

impl Recorder<'_> {
    /// The last call of the step and its tool (what an event with no call of its own names).
    fn last(&self) -> (u64, String) {
        let n = self.calls.len() as u64;
        (
            self.first_index + n.saturating_sub(1),
            self.calls.last().map(|c| c.name.clone()).unwrap_or_default(),
        )
    }

    fn stopped_here(&self) -> u64 {
        self.last_event_at.unwrap_or_else(|| self.last().0)
    }

    fn push(&mut self, event: ReplayEvent, actions: &mut Actions) {
        *self.last_event_at = Some(event.call_index);
        actions.events.push(event.clone());
        self.report.events.push(event);
    }

    /// Records `decisions`; true when the run stops (or is handed to a human) here, and the
    /// rest of them is not read.
    fn take(&mut self, decisions: Vec<Decision>, actions: &mut Actions) -> bool {
        for decision in decisions {
            match decision {
                Decision::Emit(Event::LoopDetected { call_index, detector, tier, tool, level, evidence }) => {
                    let event = ReplayEvent {
                        call_index,
                        event: "agent.loop.detected".into(),
                        detector,
                        level,
                        tool,
                        tier,
                        evidence,
                    };
                    self.push(event, actions);
                }
                Decision::Emit(Event::GuardIntervened { guard, action }) => {
                    let (call_index, tool) = self.last();
                    let level = if action == "reflection" { action } else { "nudge".to_owned() };
                    let event = ReplayEvent {
                        call_index,
                        event: "agent.guardrail.intervened".into(),
                        detector: guard,
                        level,
                        tool,
                        tier: String::new(),
                        evidence: Vec::new(),
                    };
                    self.push(event, actions);
                }
                Decision::Emit(Event::GuardrailEscalated { level, .. }) => actions.escalated = Some(level),
                Decision::Inject(message) => actions.inject.push(message),
                Decision::ReplaceResult(result) => actions.replace.push(result),
                Decision::ForceToolChoice(ToolChoice::Named(name))
                    if Some(name.as_str()) == self.ask_tool =>
                {
                    self.report.stopped_at = Some(self.stopped_here());
                    self.report.stop_reason = Some("ask_human".into());
                    actions.ask_human = true;
                    return true;
                }
                Decision::ForceToolChoice(ToolChoice::Named(name)) => actions.force_tool = Some(name),
                Decision::Stop(cause) => {
                    self.report.stopped_at = Some(self.stopped_here());
                    self.report.stop_reason = Some(match &cause {
                        StopCause::LoopDetected { detector, .. } => format!("loop_detected:{detector}"),
                        StopCause::Limit { reason } => {
                            // A live run answers a limit with its fallback reply (F10).
                            self.report.fallback_reply = true;
                            format!(
                                "limit:{}",
                                looprail_loop_core::event::wire_name(reason).unwrap_or_default()
                            )
                        }
                        other => other.describe(),
                    });
                    actions.stop.get_or_insert(cause);
                    return true;
                }
                _ => {}
            }
        }
        false
    }
}
