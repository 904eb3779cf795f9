//! One conversation's guard state and the decision for each request: a state machine with no
//! I/O (the server loads the state, calls [`Gate::observe`], forwards or concludes, calls
//! [`Gate::replied`], and stores the state again).
//!
//! The guards are the ones a looprail run uses (`looprail_loop_core::guards::defaults`, then
//! the guardrails' default stack), fed the new part of the client's history: each assistant
//! turn's tool calls with the tool results the client sent back, and each new user message as a
//! new user turn. Their state is saved by name between requests.

use std::collections::BTreeMap;
use std::time::Duration;

use looprail_guardrails::replay::results_for;
use looprail_guardrails::{GuardrailsConfig, restored_stack, saved_states};
use looprail_loop_core::config::LoopConfig;
use looprail_loop_core::guard::{Counters, Decision, Guard, TurnView};
use looprail_loop_core::message::{Message, Role, ToolCall};
use looprail_loop_core::provider::{ModelResponse, StopReason};
use looprail_loop_core::tool::ToolChoice;
use serde::{Deserialize, Serialize};

use crate::wire::TAG;

/// What is kept between requests.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ConversationState {
    /// The conversation's id.
    pub id: String,
    /// Turns, tool calls, tokens so far.
    pub counters: Counters,
    /// Each guard's saved state, by name.
    pub guards: BTreeMap<String, serde_json::Value>,
    /// How many messages of the client's history were already observed (the server counts
    /// wire messages).
    pub seen: usize,
    /// When the conversation started (ms since the epoch), for time limits.
    pub started_ms: i64,
    /// Replies the gateway replaced with a forced final answer.
    pub concluded: u32,
    /// Instructions the ladder added.
    pub interventions: u32,
    /// How many messages of the client's history (replies included) were recorded, counted
    /// as `seen` is.
    #[serde(default)]
    pub recorded: usize,
    /// The summary that replaces the conversation's older messages upstream, when compaction
    /// is on and was needed.
    #[serde(default)]
    pub summary: Option<crate::compaction::Summary>,
    /// The last Responses reply's output items that carry an id, for a client that sends them
    /// back as `item_reference`s (the Vercel AI SDK does with `store` on, its default, for
    /// calls and reasoning alike): the guards read the referenced calls from here.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reply_items: Vec<serde_json::Value>,
    /// The last reply was cut for repeating itself (B14): the guards hear of it with the
    /// client's next request.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub degenerate_reply: bool,
    /// Chat requests of this conversation the gateway answered, on any replica.
    #[serde(default)]
    pub requests: u64,
}

impl ConversationState {
    /// Where the new part of a history of `len` messages starts: after the messages already
    /// seen, or, when the history is shorter than that (the client rewrote it: an edit, a
    /// compaction), at its start, with the conversation started over under the same id.
    pub fn resume_at(&mut self, len: usize) -> usize {
        if self.seen > len {
            *self = ConversationState { id: std::mem::take(&mut self.id), ..ConversationState::default() };
        }
        self.seen
    }
}

/// What to do with a request.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// Send it upstream, with these instructions added and this tool forced.
    Forward {
        /// Texts for the model (the ladder's nudge or directive).
        instructions: Vec<String>,
        /// A tool the reply must call (the client's own ask-the-user tool).
        force_tool: Option<String>,
    },
    /// Answer with a final text obtained upstream with the tool choice `none`: the client's loop ends.
    Conclude {
        /// Why (`loop_detected:identical`, a limit, `ask_human`).
        reason: String,
    },
}

/// The instruction that asks for the final answer (F10's pattern).
pub fn final_instruction(reason: &str) -> String {
    format!(
        "Stop using tools now ({reason}). Reply to the user with your final answer: what you \
         tried, what you found, and what the user must decide or do next."
    )
}

/// The guard stack and the settings it runs with.
pub struct Gate {
    config: LoopConfig,
    guardrails: GuardrailsConfig,
}

impl std::fmt::Debug for Gate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gate").finish_non_exhaustive()
    }
}

/// Collects decisions into a verdict.
#[derive(Default)]
struct Outcome {
    instructions: Vec<String>,
    force_tool: Option<String>,
    conclude: Option<String>,
}

impl Gate {
    /// A gate with these settings.
    pub fn new(config: LoopConfig, guardrails: GuardrailsConfig) -> Self {
        Self { config, guardrails }
    }

    /// The conversation's guard stack, its saved states moved into it (the caller saves them
    /// back).
    pub(crate) fn stack(&self, state: &mut ConversationState) -> Vec<Box<dyn Guard>> {
        // A state that does not load whole is not loaded at all: the guard starts afresh.
        restored_stack(&self.config, &self.guardrails, std::mem::take(&mut state.guards)).traced()
    }

    fn take(&self, decisions: Vec<Decision>, tools: &[String], outcome: &mut Outcome) {
        let ask = self.config.guardrails.ask_human_tool.as_deref();
        for decision in decisions {
            match decision {
                Decision::Inject(message) => {
                    if let Some(text) = message.joined_text() {
                        outcome.instructions.push(text);
                    }
                }
                Decision::ForceToolChoice(ToolChoice::Named(name)) => {
                    if tools.contains(&name) {
                        outcome.force_tool = Some(name);
                    } else if Some(name.as_str()) == ask {
                        // The client has no way to ask its user: end its loop with a final
                        // answer that says what the user must decide.
                        outcome.conclude.get_or_insert_with(|| "ask_human".to_owned());
                    }
                }
                Decision::Stop(cause) => {
                    outcome.conclude.get_or_insert_with(|| cause.describe());
                }
                Decision::Emit(event) => event.trace(),
                _ => {}
            }
        }
    }

    /// Observes the client's whole history `messages` (of which the state has seen the first
    /// `state.seen`; a shorter history starts the conversation over) and decides what to do with
    /// this request. `tools` are the tools the request declares; `now` is ms since the epoch.
    pub fn observe(
        &self,
        state: &mut ConversationState,
        messages: &[Message],
        tools: &[String],
        now: i64,
    ) -> Verdict {
        let from = state.resume_at(messages.len());
        self.observe_new(state, &messages[from..], messages.len(), tools, now)
    }

    /// Observes only what is new: `new` follows the `state.seen` messages already observed, and
    /// the history now counts `len` (in whatever unit the caller counts, the server counting
    /// wire messages). See [`Gate::observe`].
    pub fn observe_new(
        &self,
        state: &mut ConversationState,
        new: &[Message],
        len: usize,
        tools: &[String],
        now: i64,
    ) -> Verdict {
        let mut stack = self.stack(state);
        let verdict = self.observe_live(state, &mut stack, new, len, tools, now);
        state.guards = saved_states(&stack);
        verdict
    }

    /// [`Gate::observe_new`] on the conversation's live guard stack (its `state.guards` taken
    /// out of the state, or kept from its last request): the stack's states are not written
    /// back into `state` (see [`saved_states`]).
    pub(crate) fn observe_live(
        &self,
        state: &mut ConversationState,
        stack: &mut [Box<dyn Guard>],
        new: &[Message],
        len: usize,
        tools: &[String],
        now: i64,
    ) -> Verdict {
        if state.started_ms == 0 {
            state.started_ms = now;
        }
        state.requests += 1;
        let mut outcome = Outcome::default();
        let elapsed_ms = u64::try_from(now - state.started_ms).unwrap_or(0);
        let elapsed = Duration::from_millis(elapsed_ms);
        // The first user message sets `user_turns` to 1: a later one starts a new turn, and a
        // new stretch (its time counted from this request, not from the last one).
        let mut seen_user = state.counters.user_turns > 0;
        for (i, message) in new.iter().enumerate() {
            match message.role {
                Role::User if !tagged(message) => {
                    if seen_user {
                        state.counters.start_user_turn(Some(elapsed_ms));
                        stack.iter_mut().for_each(|g| g.on_user_turn());
                    } else {
                        state.counters.user_turns = state.counters.user_turns.max(1);
                        state.counters.mark_stretch_time(elapsed_ms);
                    }
                    seen_user = true;
                }
                Role::Assistant => {
                    state.counters.turns += 1;
                    state.counters.iterations += 1;
                    let calls: Vec<ToolCall> = message.tool_calls().cloned().collect();
                    if std::mem::take(&mut state.degenerate_reply) {
                        // The reply the gateway cut for repeating itself: the ladder climbs.
                        let response = shown(message, Vec::new(), StopReason::Degenerate);
                        let view = TurnView {
                            counters: &state.counters,
                            messages: &new[..=i],
                            config: &self.config,
                            elapsed,
                        };
                        for guard in stack.iter_mut() {
                            self.take(guard.after_response(&view, &response), tools, &mut outcome);
                        }
                    }
                    if calls.is_empty() {
                        continue;
                    }
                    state.counters.tool_calls = state
                        .counters
                        .tool_calls
                        .saturating_add(u32::try_from(calls.len()).unwrap_or(u32::MAX));
                    let response = shown(message, calls.clone(), StopReason::ToolUse);
                    // The guards see what is new (none of them reads earlier messages).
                    let view = TurnView {
                        counters: &state.counters,
                        messages: &new[..=i],
                        config: &self.config,
                        elapsed,
                    };
                    for guard in stack.iter_mut() {
                        self.take(guard.after_response(&view, &response), tools, &mut outcome);
                    }
                    for guard in stack.iter_mut() {
                        self.take(guard.before_tools(&view, &calls), tools, &mut outcome);
                    }
                    let answered = new[i + 1..].iter().take_while(|m| m.role == Role::Tool).count();
                    if answered == 0 {
                        continue; // its results are not in yet
                    }
                    let results = results_for(new, i + 1, &calls);
                    let view = TurnView { messages: &new[..=i + answered], ..view };
                    for guard in stack.iter_mut() {
                        self.take(guard.after_tools(&view, &calls, &results), tools, &mut outcome);
                    }
                }
                _ => {}
            }
        }
        // Before the model call this request asks for: budgets, time limits, the iteration cap.
        let view = TurnView { counters: &state.counters, messages: new, config: &self.config, elapsed };
        for guard in stack.iter_mut() {
            self.take(guard.before_turn(&view), tools, &mut outcome);
        }
        if state.counters.iterations >= self.config.limits.max_iterations {
            outcome.conclude.get_or_insert_with(|| "the iteration cap was reached".to_owned());
        }
        state.seen = len;
        match outcome.conclude {
            Some(reason) => {
                state.concluded += 1;
                Verdict::Conclude { reason }
            }
            None => {
                state.interventions += u32::try_from(outcome.instructions.len()).unwrap_or(0);
                Verdict::Forward { instructions: outcome.instructions, force_tool: outcome.force_tool }
            }
        }
    }

    /// A watch for the next reply (B14), when degenerate replies are watched.
    pub fn reply_watch(&self) -> Option<Box<dyn looprail_loop_core::watch::ReplyWatch>> {
        let config = &self.guardrails.degenerate_reply;
        config.enabled.then(|| Box::new(looprail_guardrails::DegenerateWatch::new(config)) as Box<_>)
    }

    /// What an upstream reply of `model` with these tokens spent, priced with the loop
    /// configuration's `prices` (a model without a price costs nothing).
    pub fn spent(&self, model: &str, input_tokens: u64, output_tokens: u64) -> Spent {
        let usage = looprail_loop_core::provider::Usage { input_tokens, output_tokens, ..Default::default() };
        Spent { input_tokens, output_tokens, cost: self.config.prices.cost(model, &usage) }
    }

    /// Counts an upstream reply's tokens and their cost (they are spent whether or not the
    /// client keeps it), for the token budget and the cost limit.
    pub fn replied(&self, state: &mut ConversationState, spent: Spent) {
        state.counters.usage.input_tokens += spent.input_tokens;
        state.counters.usage.output_tokens += spent.output_tokens;
        state.counters.cost += spent.cost;
    }
}

/// What one upstream reply spent.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Spent {
    /// Input tokens.
    pub input_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
    /// Their price.
    pub cost: f64,
}

/// A conversation's guards, live (their states loaded), carried from a request to its save and
/// kept for the conversation's next request. Behind a mutex only so that what holds it may be
/// shared between threads (the guards are `Send`, not `Sync`); it is only used through
/// `&mut`, which takes no lock.
pub(crate) struct Stack(std::sync::Mutex<Vec<Box<dyn Guard>>>);

impl Stack {
    /// Holds `guards`.
    pub(crate) fn new(guards: Vec<Box<dyn Guard>>) -> Self {
        Self(std::sync::Mutex::new(guards))
    }

    /// The guards.
    pub(crate) fn guards(&mut self) -> &mut Vec<Box<dyn Guard>> {
        self.0.get_mut().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// A message the gateway itself added (its copy came back).
fn tagged(message: &Message) -> bool {
    message.joined_text().is_some_and(|t| t.starts_with(TAG))
}

/// A reply of the client's history as the guards are shown it (the wire carries no usage).
fn shown(message: &Message, tool_calls: Vec<ToolCall>, stop_reason: StopReason) -> ModelResponse {
    ModelResponse {
        text: message.joined_text(),
        tool_calls,
        stop_reason,
        usage: None,
        model: String::new(),
        id: None,
    }
}
