//! [`AgentGuard`]: one agent's guard, driven by its host's calls.

use std::time::Duration;

use looprail::LooprailConfig;
use looprail::core::message::{Message, ToolCall, ToolResult};
use looprail::core::provider::{ModelResponse, StopReason, Usage};
use looprail::core::watch::{Degenerated, ReplyWatch, WatchReplies, inspect};
use looprail::guardrails::DegenerateReplies;
pub use looprail::guardrails::host_ladder::TAG;
use looprail::guardrails::host_ladder::{AfterResult, BeforeCall, Heard, question};
use looprail::guardrails::replay::{ErrorPatterns, ReplayEvent};
use looprail::guardrails::session::{Actions, GuardSession};
use looprail::guardrails::{restored_stack, saved_states};

use crate::saved::{Saved, SavedError, Stretch};
use crate::verdict::{Action, Call, Reply, Verdict};

/// One agent's guard: the loop detectors with their escalation ladder, the budgets and time
/// limits, the degenerate-reply watch. The host reports each step of its loop and does what
/// the [`Verdict`] says. Times are ms since the epoch (any clock that does not go back).
pub struct AgentGuard {
    session: GuardSession,
    config: LooprailConfig,
    errors: ErrorPatterns,
    replies: DegenerateReplies,
    /// The reply streaming now, read as it comes.
    watch: Option<Box<dyn ReplyWatch>>,
    streamed: u64,
    cut: Option<(Degenerated, u64)>,
    stretch: Stretch,
    calls: Vec<Call>,
    started_ms: Option<i64>,
}

impl std::fmt::Debug for AgentGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentGuard").field("session", &self.session).finish_non_exhaustive()
    }
}

impl AgentGuard {
    /// A fresh guard with these settings (the `loop`, `guardrails` and `audit.error_patterns`
    /// sections are read).
    pub fn new(config: &LooprailConfig) -> Self {
        Self::from_saved(config, Saved::default())
    }

    /// A guard that goes on from what [`AgentGuard::save`] wrote. A guard whose saved state no
    /// longer fits the settings (a setting changed) starts afresh; a text that is not a saved
    /// guard is an error.
    pub fn restore(config: &LooprailConfig, saved: &str) -> Result<Self, SavedError> {
        Ok(Self::from_saved(config, Saved::parse(saved)?))
    }

    fn from_saved(config: &LooprailConfig, saved: Saved) -> Self {
        let guards = restored_stack(&config.loop_, &config.guardrails, saved.guards).traced();
        Self {
            session: GuardSession::resume(guards, config.loop_.clone(), saved.session),
            config: config.clone(),
            errors: config.audit.error_patterns.clone(),
            replies: DegenerateReplies::new(config.guardrails.degenerate_reply.clone()),
            watch: None,
            streamed: 0,
            cut: None,
            stretch: saved.stretch,
            calls: saved.calls,
            started_ms: saved.started_ms,
        }
    }

    /// The guard's state as JSON text, for [`AgentGuard::restore`] in this process or another.
    pub fn save(&self) -> String {
        let (guards, state) = (saved_states(self.session.guards()), self.session.state().clone());
        Saved {
            version: crate::saved::VERSION,
            session: state,
            guards,
            stretch: self.stretch.clone(),
            calls: self.calls.clone(),
            started_ms: self.started_ms,
        }
        .to_json()
    }

    /// The guard events since the last call (loops found, the ladder's rungs), in the form
    /// `looprail audit` reports them.
    pub fn take_events(&mut self) -> Vec<ReplayEvent> {
        self.session.take_events()
    }

    /// The calls of the last reply, in order (a binding names a call by its index here).
    pub fn last_calls(&self) -> &[Call] {
        &self.calls
    }

    /// The settings the guard runs with.
    pub fn config(&self) -> &LooprailConfig {
        &self.config
    }

    fn at(&mut self, now_ms: i64) -> Duration {
        let started = *self.started_ms.get_or_insert(now_ms);
        Duration::from_millis(u64::try_from(now_ms.saturating_sub(started)).unwrap_or(0))
    }

    /// A message from the user: a new stretch, with its own budgets and a fresh ladder.
    /// `now_ms` is when it came, when the host knows it (else the next model call starts the
    /// stretch's clock).
    pub fn user_message(&mut self, now_ms: Option<i64>) {
        let at = now_ms.map(|now| self.at(now));
        self.session.user_message(at);
        self.stretch = Stretch::default();
    }

    /// Before each model call: the budgets, the time limits and the iteration cap. A nudge left
    /// over from the last tool calls comes here when no result carried it.
    pub fn before_model(&mut self, now_ms: i64) -> Verdict {
        if let Some(stopped) = self.stopped() {
            return stopped;
        }
        let at = self.at(now_ms);
        let actions = self.session.before_model(at);
        self.watch = None;
        self.streamed = 0;
        self.cut = None;
        self.answer(actions, None)
    }

    /// A piece of the reply's text as it streams. True when the reply has started repeating
    /// itself (a degenerate reply): the host should stop reading it, and report the reply with
    /// the text it kept.
    pub fn stream_text(&mut self, delta: &str) -> bool {
        if self.cut.is_some() {
            return true;
        }
        let watch = self.watch.get_or_insert_with(|| self.replies.watch());
        self.streamed += delta.len() as u64;
        if let Some(found) = watch.text(delta) {
            self.cut = Some((found, self.streamed));
            return true;
        }
        false
    }

    /// A model reply, whole (or as far as it streamed). Its calls are what the loop detectors
    /// read; its usage counts toward the budgets. A reply that was not streamed through
    /// [`AgentGuard::stream_text`] is read whole by the degenerate-reply watch.
    pub fn model_response(&mut self, reply: &Reply, now_ms: i64) -> Verdict {
        if let Some(stopped) = self.stopped() {
            return stopped;
        }
        let at = self.at(now_ms);
        let response = ModelResponse {
            text: reply.text.clone(),
            tool_calls: reply.calls.iter().map(|c| ToolCall::new(&c.id, &c.name, &c.arguments)).collect(),
            stop_reason: if reply.calls.is_empty() { StopReason::EndTurn } else { StopReason::ToolUse },
            usage: reply.usage,
            model: reply.model.clone(),
            id: None,
        };
        let cut = match (self.cut.take(), self.watch.take()) {
            (Some(cut), _) => Some(cut),
            (None, Some(_)) => None,
            (None, None) => inspect(&response, self.replies.watch().as_mut()),
        };
        self.streamed = 0;
        let spent = reply.usage.unwrap_or_default();
        let cost = self.config.loop_.prices.cost(&reply.model, &spent);
        let actions = self.session.model_response(&response, &spent, cost, at, cut);
        self.calls = reply.calls.clone();
        for replaced in &actions.replace {
            self.stretch.replaced.push((replaced.call_id.clone(), replaced.content.clone()));
        }
        self.answer(actions, None)
    }

    /// Before a call of the last reply runs.
    pub fn before_tool(&mut self, call: &Call) -> Verdict {
        if let Some(stopped) = self.stopped() {
            return stopped;
        }
        if let Some(at) = self.stretch.replaced.iter().position(|(id, _)| *id == call.id) {
            let (_, text) = self.stretch.replaced.remove(at);
            return Verdict::with(Action::Deny, text, "");
        }
        match self.stretch.ladder.before_call(&call.name, &call.arguments) {
            BeforeCall::Run => Verdict::allow(),
            BeforeCall::Deny(reason) => Verdict::with(Action::Deny, reason, ""),
            BeforeCall::Ask => self.ask(question(&call.name)),
            BeforeCall::Stop => {
                let why =
                    format!("{TAG} The agent kept repeating `{}` after it was told to stop.", call.name);
                self.stop(why, "loop_detected:repeated_after_denial")
            }
        }
    }

    /// A call's result (`failed` when the tool says so; the error patterns of the settings
    /// also mark it). With the reply's last result, the guards read them all: a nudge then
    /// comes back to go with this result.
    pub fn after_tool(&mut self, call_id: &str, output: &str, failed: bool) -> Verdict {
        if let Some(stopped) = self.stopped() {
            return stopped;
        }
        let failed = failed || self.errors.is_error(output);
        let result =
            if failed { ToolResult::error(call_id, output) } else { ToolResult::ok(call_id, output) };
        let actions = self.session.tool_result(result);
        let call = self.calls.iter().find(|c| c.id == call_id).cloned();
        self.answer(actions, call.as_ref())
    }

    /// The verdict for what the guards asked for at a step (`call`: the call whose result
    /// closed the step).
    fn answer(&mut self, actions: Actions, call: Option<&Call>) -> Verdict {
        // The tool a stop or a question names (only those need it).
        let tool = || {
            let tool =
                call.map(|c| c.name.as_str()).or_else(|| actions.events.last().map(|e| e.tool.as_str()));
            tool.unwrap_or("a tool").to_owned()
        };
        if let Some(cause) = &actions.stop {
            let reason = self.session.report().stop_reason.clone().unwrap_or_else(|| cause.describe());
            return self.stop(format!("{TAG} Stopped: {}.", cause.describe()), &reason);
        }
        let directive = actions.escalated.as_deref() == Some("directive")
            || actions.events.iter().any(|e| e.level == "directive");
        // What the guards say at this step; nudges said as the reply came ride along.
        let heard = Heard { remark: !actions.inject.is_empty(), directive, ask: actions.ask_human };
        let mut texts = std::mem::take(&mut self.stretch.nudges);
        texts.extend(actions.inject.iter().filter_map(Message::joined_text).map(|t| format!("{TAG} {t}")));
        match self.stretch.ladder.after_result(call.map(|c| (c.name.as_str(), c.arguments.as_str())), heard) {
            // The human was asked and the guards see a loop again: hand back to the human.
            AfterResult::StillLooping => {
                let why =
                    format!("{TAG} The agent is still looping around `{}` after the user was asked.", tool());
                return self.stop(why, "loop_detected:after_ask");
            }
            AfterResult::Ask => {
                self.stretch.nudges = texts;
                let question = question(&tool());
                return self.ask(question);
            }
            AfterResult::Quiet if texts.is_empty() => return Verdict::allow(),
            AfterResult::Quiet | AfterResult::Remark => {}
        }
        if call.is_none() && !self.calls.is_empty() && self.session.state().open.is_some() {
            // Said as the reply came: it goes with the reply's last result.
            self.stretch.nudges = texts;
            return Verdict::allow();
        }
        Verdict::with(Action::Nudge, texts.join("\n"), "")
    }

    fn stopped(&self) -> Option<Verdict> {
        self.stretch.stopped.clone()
    }

    fn stop(&mut self, why: String, reason: &str) -> Verdict {
        let message = format!(
            "{why} Stop using tools now. Reply to the user with your final answer: what you tried, \
             what you found, and what the user must decide or do next."
        );
        let verdict = Verdict::with(Action::Stop, message, reason);
        self.stretch.stopped = Some(verdict.clone());
        verdict
    }

    /// The human is asked; their answer, whatever it is, restarts the ladder (a loop seen again
    /// after it stops the stretch).
    fn ask(&mut self, question: String) -> Verdict {
        self.stretch.ladder.asked = true;
        self.session.restart_guards();
        Verdict::with(Action::Ask, question, "ask_human")
    }

    /// Usage and cost so far (the whole session).
    pub fn usage(&self) -> (Usage, f64) {
        let counters = &self.session.state().counters;
        (counters.usage, counters.cost)
    }
}
