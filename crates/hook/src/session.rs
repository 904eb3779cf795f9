//! One session's guard state and the answer to each hook event: a state machine with no I/O
//! (the caller loads the state, calls [`Hook::handle`], answers, and stores the state again).
//!
//! The guards are the ones a looprail run uses (`looprail_loop_core::guards::defaults`, then
//! the guardrails' default stack), fed each tool call with the output the agent reports after
//! it ran. Their state is saved by name between events, as the gateway saves it between
//! requests. The ladder's rungs become what a hook can do:
//!
//! | the ladder says | the hook answers |
//! |---|---|
//! | nudge, directive | its message, read by the model with the tool's result |
//! | directive | and the next identical call is denied, the model told why |
//! | ask_human | the next call waits for the user's approval (the agent's permission prompt) |
//! | a stop, or the loop goes on after the user was asked | the agent stops, the user told why |

use std::collections::BTreeMap;
use std::time::Duration;

use looprail_guardrails::host_ladder::{AfterResult, BeforeCall, Heard, HostLadder, question};
pub use looprail_guardrails::host_ladder::{Denial, TAG};
use looprail_guardrails::replay::ErrorPatterns;
use looprail_guardrails::{GuardrailsConfig, restored_stack, saved_states};
use looprail_loop_core::config::LoopConfig;
use looprail_loop_core::event::Event;
use looprail_loop_core::guard::{Counters, Decision, Guard, TurnView};
use looprail_loop_core::message::{Message, ToolCall, ToolResult};
use looprail_loop_core::provider::{ModelResponse, StopReason};
use looprail_loop_core::tool::ToolChoice;
use serde::{Deserialize, Serialize};

use crate::event::{Answer, EventKind, ToolOutput, ToolUse};

/// What is kept of a session between hook events.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SessionState {
    /// Turns and tool calls so far (one turn per call: hooks see calls, not replies).
    pub counters: Counters,
    /// Each guard's saved state, by name.
    pub guards: BTreeMap<String, serde_json::Value>,
    /// When the session was first seen (ms since the epoch), for time limits.
    pub started_ms: i64,
    /// The ladder's later rungs: the call to deny if it comes again, whether the user was
    /// asked in this stretch (saved as the fields `deny` and `asked`).
    #[serde(flatten)]
    pub ladder: HostLadder,
    /// The user is to be asked before the next call runs, with this question.
    #[serde(default)]
    pub ask: Option<String>,
    /// The stretch was stopped, for this reason: every further call is stopped too, until the
    /// user's next prompt.
    #[serde(default)]
    pub stopped: Option<String>,
    /// The open items of the agent's todo list, as its todo tool last wrote it.
    #[serde(default)]
    pub todos: Vec<String>,
    /// Times this stretch the agent was asked to go on with open items.
    #[serde(default)]
    pub todo_nudges: u32,
}

/// The guard stack and the settings it runs with.
pub struct Hook {
    config: LoopConfig,
    guardrails: GuardrailsConfig,
    errors: ErrorPatterns,
}

impl std::fmt::Debug for Hook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hook").finish_non_exhaustive()
    }
}

/// What the guards said about one call.
#[derive(Debug, Default)]
struct Said {
    texts: Vec<String>,
    directive: bool,
    ask: bool,
    stop: Option<String>,
}

impl Hook {
    /// A hook with these settings (the coding-agent profile's limits suit an agent's session).
    pub fn new(config: LoopConfig, guardrails: GuardrailsConfig) -> Self {
        Self { config, guardrails, errors: ErrorPatterns::default() }
    }

    /// Answers `event` of a session whose state is `state`; `now_ms` is ms since the epoch.
    pub fn handle(&self, state: &mut SessionState, event: &EventKind, now_ms: i64) -> Answer {
        if state.started_ms == 0 {
            state.started_ms = now_ms;
        }
        match event {
            EventKind::UserPrompt => {
                self.new_stretch(state, now_ms);
                Answer::Allow
            }
            EventKind::BeforeTool(call) => self.before(state, call),
            EventKind::AfterTool(call, output) => self.after(state, call, output, now_ms),
            EventKind::Stop => self.at_stop(state),
            EventKind::SessionStart | EventKind::SessionEnd | EventKind::Other(_) => Answer::Allow,
        }
    }

    /// A prompt from the user: a new stretch, with its own limits and a fresh ladder.
    fn new_stretch(&self, state: &mut SessionState, now_ms: i64) {
        let elapsed = elapsed_ms(state, now_ms);
        if state.counters.user_turns == 0 {
            state.counters.user_turns = 1;
            state.counters.mark_stretch_time(elapsed);
        } else {
            state.counters.start_user_turn(Some(elapsed));
            let mut stack = self.stack(state);
            stack.iter_mut().for_each(|g| g.on_user_turn());
            state.guards = saved_states(&stack);
        }
        state.ladder = HostLadder::default();
        state.ask = None;
        state.stopped = None;
        state.todo_nudges = 0;
    }

    /// The agent ends its turn: with open todo items, it is asked to go on (F14), at most
    /// `todo_nudge_cap` times per stretch; never after the stretch was stopped.
    fn at_stop(&self, state: &mut SessionState) -> Answer {
        let cap = self.config.guardrails.todo_nudge_cap;
        if state.todos.is_empty() || state.todo_nudges >= cap || state.stopped.is_some() {
            return Answer::Allow;
        }
        state.todo_nudges += 1;
        Answer::Tell(crate::todos::nudge(&state.todos))
    }

    fn before(&self, state: &mut SessionState, call: &ToolUse) -> Answer {
        if let Some(reason) = &state.stopped {
            return Answer::Stop(reason.clone());
        }
        if let Some(question) = state.ask.take() {
            return self.ask(state, question);
        }
        match state.ladder.before_call(&call.tool, &call.arguments) {
            BeforeCall::Run => Answer::Allow,
            BeforeCall::Deny(reason) => Answer::Deny(reason),
            BeforeCall::Ask => self.ask(state, question(&call.tool)),
            BeforeCall::Stop => {
                let reason = format!(
                    "{TAG} The agent kept repeating `{}` after it was told to stop; stopped.",
                    call.tool
                );
                self.stop(state, reason)
            }
        }
    }

    fn after(&self, state: &mut SessionState, call: &ToolUse, output: &ToolOutput, now_ms: i64) -> Answer {
        if let Some(reason) = &state.stopped {
            return Answer::Stop(reason.clone());
        }
        if !output.failed
            && let Some(open) = crate::todos::open_items(call)
        {
            state.todos = open;
        }
        let said = self.feed(state, call, output, now_ms);
        if let Some(reason) = said.stop {
            return self.stop(state, reason);
        }
        let heard = Heard { remark: !said.texts.is_empty(), directive: said.directive, ask: said.ask };
        match state.ladder.after_result(Some((&call.tool, &call.arguments)), heard) {
            AfterResult::StillLooping => {
                let reason = format!(
                    "{TAG} The agent is still looping around `{}` after the user was asked; stopped.",
                    call.tool
                );
                self.stop(state, reason)
            }
            AfterResult::Ask => {
                state.ask = Some(question(&call.tool));
                Answer::Tell(format!(
                    "{TAG} You appear to be stuck in a loop around `{}`. Your next tool call needs the \
                     user's approval: say what you tried, what happened, and what you need from them.",
                    call.tool
                ))
            }
            AfterResult::Quiet => Answer::Allow,
            AfterResult::Remark => Answer::Tell(said.texts.join("\n")),
        }
    }

    /// The user's permission prompt: their answer, whatever it is, restarts the guards as a
    /// human's answer does in a run (the ladder from its first rung); a loop the guards see again
    /// after it stops the stretch.
    fn ask(&self, state: &mut SessionState, question: String) -> Answer {
        state.ladder.asked = true;
        let mut stack = self.stack(state);
        stack.iter_mut().for_each(|g| g.on_user_turn());
        state.guards = saved_states(&stack);
        Answer::Ask(question)
    }

    fn stop(&self, state: &mut SessionState, reason: String) -> Answer {
        state.stopped = Some(reason.clone());
        Answer::Stop(reason)
    }

    fn stack(&self, state: &SessionState) -> Vec<Box<dyn Guard>> {
        // A state that does not load whole is not loaded at all: the guard starts afresh.
        restored_stack(&self.config, &self.guardrails, state.guards.clone()).traced()
    }

    /// Feeds one call and its output to the guards, as one turn of the session.
    fn feed(&self, state: &mut SessionState, call: &ToolUse, output: &ToolOutput, now_ms: i64) -> Said {
        if state.counters.user_turns == 0 {
            // A session whose prompt the hook did not see (installed mid-session).
            self.new_stretch(state, now_ms);
        }
        let counters = &mut state.counters;
        counters.turns += 1;
        counters.iterations += 1;
        counters.tool_calls = counters.tool_calls.saturating_add(1);
        let id = call.id.clone().unwrap_or_else(|| format!("hook-{}", counters.tool_calls));
        let calls = vec![ToolCall::new(&id, &call.tool, &call.arguments)];
        let result = if output.failed {
            ToolResult::error(&id, &output.text)
        } else {
            ToolResult::ok(&id, &output.text)
        };
        let mut messages =
            vec![Message::assistant_with_calls(None, calls.clone()), Message::tool_result(result)];
        self.errors.classify(&mut messages);
        let results: Vec<ToolResult> = messages[1].tool_results().cloned().collect();
        let response = ModelResponse {
            text: None,
            tool_calls: calls.clone(),
            stop_reason: StopReason::ToolUse,
            usage: None,
            model: String::new(),
            id: None,
        };
        let elapsed = Duration::from_millis(elapsed_ms(state, now_ms));
        let mut stack = self.stack(state);
        let mut said = Said::default();
        let view =
            TurnView { counters: &state.counters, messages: &messages[..1], config: &self.config, elapsed };
        for guard in &mut stack {
            self.take(guard.after_response(&view, &response), &mut said);
        }
        for guard in &mut stack {
            self.take(guard.before_tools(&view, &calls), &mut said);
        }
        let view = TurnView { messages: &messages, ..view };
        for guard in &mut stack {
            self.take(guard.after_tools(&view, &calls, &results), &mut said);
        }
        // The limits a turn is checked against before the model call that follows.
        for guard in &mut stack {
            self.take(guard.before_turn(&view), &mut said);
        }
        if state.counters.iterations >= self.config.limits.max_iterations && said.stop.is_none() {
            said.stop = Some(format!("{TAG} The iteration cap of this stretch was reached."));
        }
        state.guards = saved_states(&stack);
        said
    }

    fn take(&self, decisions: Vec<Decision>, said: &mut Said) {
        let ask_tool = self.config.guardrails.ask_human_tool.as_deref();
        for decision in decisions {
            match decision {
                Decision::Inject(message) => {
                    if let Some(text) = message.joined_text() {
                        said.texts.push(format!("{TAG} {text}"));
                    }
                }
                Decision::Emit(Event::GuardrailEscalated { level, .. }) if level == "directive" => {
                    said.directive = true;
                }
                Decision::ForceToolChoice(ToolChoice::Named(name)) if Some(name.as_str()) == ask_tool => {
                    said.ask = true;
                }
                Decision::Stop(cause) => {
                    said.stop.get_or_insert_with(|| format!("{TAG} Stopped: {}.", cause.describe()));
                }
                _ => {}
            }
        }
    }
}

fn elapsed_ms(state: &SessionState, now_ms: i64) -> u64 {
    u64::try_from(now_ms - state.started_ms).unwrap_or(0)
}
