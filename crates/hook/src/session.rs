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

use looprail_guardrails::replay::ErrorPatterns;
use looprail_guardrails::signature::CallSignature;
use looprail_guardrails::{GuardrailsConfig, restored_stack, saved_states};
use looprail_loop_core::config::LoopConfig;
use looprail_loop_core::event::Event;
use looprail_loop_core::guard::{Counters, Decision, Guard, TurnView};
use looprail_loop_core::message::{Message, ToolCall, ToolResult};
use looprail_loop_core::provider::{ModelResponse, StopReason};
use looprail_loop_core::tool::ToolChoice;
use serde::{Deserialize, Serialize};

use crate::event::{Answer, EventKind, ToolOutput, ToolUse};

/// Where every message looprail gives starts, so the model and the user know its source.
pub const TAG: &str = "[looprail]";

/// A call the ladder's directive named: the next identical one is denied.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Denial {
    /// The call's signature (tool and canonical arguments).
    pub call: u64,
    /// What the model reads when it is denied.
    pub reason: String,
    /// How many times the call came again since.
    #[serde(default)]
    pub repeats: u32,
}

/// What is kept of a session between hook events.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SessionState {
    /// Turns and tool calls so far (one turn per call: hooks see calls, not replies).
    pub counters: Counters,
    /// Each guard's saved state, by name.
    pub guards: BTreeMap<String, serde_json::Value>,
    /// When the session was first seen (ms since the epoch), for time limits.
    pub started_ms: i64,
    /// The call to deny if it comes again.
    #[serde(default)]
    pub deny: Option<Denial>,
    /// The user is to be asked before the next call runs, with this question.
    #[serde(default)]
    pub ask: Option<String>,
    /// The user was asked in this stretch.
    #[serde(default)]
    pub asked: bool,
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
        state.deny = None;
        state.ask = None;
        state.asked = false;
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
        let signature = CallSignature::of(&call.tool, &call.arguments).call;
        let Some(denial) = state.deny.as_mut().filter(|d| d.call == signature) else {
            return Answer::Allow;
        };
        // The ladder goes on as the call repeats: denied once, then the user asked, then the
        // agent stopped. (A denied call never runs, so the guards learn nothing new from it.)
        denial.repeats += 1;
        let reason = denial.reason.clone();
        match denial.repeats {
            1 => Answer::Deny(reason),
            2 if !state.asked => self.ask(state, question(&call.tool)),
            _ => {
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
        // The user was asked and the guards see a loop again: hand back to the user.
        if state.asked && (said.ask || said.directive || !said.texts.is_empty()) {
            let reason = format!(
                "{TAG} The agent is still looping around `{}` after the user was asked; stopped.",
                call.tool
            );
            return self.stop(state, reason);
        }
        if said.ask {
            state.ask = Some(question(&call.tool));
            return Answer::Tell(format!(
                "{TAG} You appear to be stuck in a loop around `{}`. Your next tool call needs the \
                 user's approval: say what you tried, what happened, and what you need from them.",
                call.tool
            ));
        }
        if said.texts.is_empty() {
            // A different call that drew no remark: the agent moved on from the denied one.
            let signature = CallSignature::of(&call.tool, &call.arguments).call;
            if state.deny.as_ref().is_some_and(|d| d.call != signature) {
                state.deny = None;
            }
            return Answer::Allow;
        }
        if said.directive {
            let signature = CallSignature::of(&call.tool, &call.arguments).call;
            let reason = format!(
                "{TAG} Denied: this exact `{}` call was already made and did not move the task \
                 forward. Do something different, or say plainly what is blocking you.",
                call.tool
            );
            state.deny = Some(Denial { call: signature, reason, repeats: 0 });
        }
        Answer::Tell(said.texts.join("\n"))
    }

    /// The user's permission prompt: their answer, whatever it is, restarts the guards as a
    /// human's answer does in a run (the ladder from its first rung); a loop the guards see again
    /// after it stops the stretch.
    fn ask(&self, state: &mut SessionState, question: String) -> Answer {
        state.asked = true;
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

/// What the user is asked when the agent seems stuck.
fn question(tool: &str) -> String {
    format!(
        "{TAG} The agent appears to be stuck in a loop around `{tool}` (the same calls, nothing \
         new learned). Let it go on?"
    )
}

fn elapsed_ms(state: &SessionState, now_ms: i64) -> u64 {
    u64::try_from(now_ms - state.started_ms).unwrap_or(0)
}
