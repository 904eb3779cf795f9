//! [`RunBuilder`]: a [`Run`] from a configuration, a prompt or history, tools, guards and a
//! context policy, checked before anything runs.

use std::collections::VecDeque;

use crate::config::{ConfigError, LoopConfig};
use crate::context::{ContextPolicy, KeepAll};
use crate::engine::io::Effect;
use crate::engine::run::{EngineError, Phase, Run, RunCore, headroom, next_call_number, system_hash_of};
use crate::guard::{Counters, Guard};
use crate::guards;
use crate::message::{Message, Role};
use crate::state::RunState;
use crate::store::CheckpointKind;
use crate::tool::ToolDefinition;

/// The `ask_human` tool definition the engine declares when it is switched on.
pub fn ask_human_definition(name: &str) -> ToolDefinition {
    ToolDefinition::new(
        name,
        "Ask the human for direction when you are stuck, need a decision, or need information \
         only they have. The run pauses until they answer.",
        serde_json::json!({
            "type": "object",
            "properties": {"question": {"type": "string", "description": "What you need to know"}},
            "required": ["question"]
        }),
    )
}

/// Builds a [`Run`].
pub struct RunBuilder {
    config: LoopConfig,
    system: Option<String>,
    history: Vec<Message>,
    user: Option<String>,
    tools: Vec<ToolDefinition>,
    guards: Vec<Box<dyn Guard>>,
    default_guards: bool,
    policy: Option<Box<dyn ContextPolicy>>,
    depth: u32,
    max_iterations: Option<u32>,
}

impl RunBuilder {
    /// Sets the system prompt (placed first).
    #[must_use]
    pub fn system(mut self, text: impl Into<String>) -> Self {
        self.system = Some(text.into());
        self
    }

    /// Starts from an earlier conversation.
    #[must_use]
    pub fn history(mut self, messages: Vec<Message>) -> Self {
        self.history = messages;
        self
    }

    /// The user's message that starts the run.
    #[must_use]
    pub fn user(mut self, text: impl Into<String>) -> Self {
        self.user = Some(text.into());
        self
    }

    /// The tools the model may call.
    #[must_use]
    pub fn tools(mut self, tools: Vec<ToolDefinition>) -> Self {
        self.tools = tools;
        self
    }

    /// Adds a guard after the defaults (time limits, budgets, todo nudge).
    #[must_use]
    pub fn guard(mut self, guard: impl Guard + 'static) -> Self {
        self.guards.push(Box::new(guard));
        self
    }

    /// Adds a boxed guard.
    #[must_use]
    pub fn boxed_guard(mut self, guard: Box<dyn Guard>) -> Self {
        self.guards.push(guard);
        self
    }

    /// Leaves out the default guards (for tests of a single guard).
    #[must_use]
    pub fn without_default_guards(mut self) -> Self {
        self.default_guards = false;
        self
    }

    /// Sets the context policy (default: [`KeepAll`]).
    #[must_use]
    pub fn policy(mut self, policy: impl ContextPolicy + 'static) -> Self {
        self.policy = Some(Box::new(policy));
        self
    }

    /// The delegation depth of this run (0 for a top-level run, F37).
    #[must_use]
    pub fn depth(mut self, depth: u32) -> Self {
        self.depth = depth;
        self
    }

    /// Overrides the iteration cap for this run only (S4's per-call `max_iterations`).
    #[must_use]
    pub fn max_iterations(mut self, cap: u32) -> Self {
        self.max_iterations = Some(cap);
        self
    }

    /// Validates and builds the run.
    pub fn build(self) -> Result<Run, EngineError> {
        self.config.validate()?;
        let max_depth = self.config.limits.max_delegation_depth;
        if self.depth > max_depth {
            return Err(EngineError::DelegationTooDeep { depth: self.depth, max: max_depth });
        }
        if self.max_iterations == Some(0) {
            return Err(ConfigError::new("max_iterations", "the per-run override must be at least 1").into());
        }
        // A run grows right after it is built or restored: leave headroom so its first turns
        // do not copy the whole history to a bigger allocation.
        let mut messages = Vec::with_capacity(headroom(self.history.len()));
        if let Some(system) = self.system
            && !self.history.iter().any(|m| m.role == Role::System)
        {
            messages.push(Message::system(system));
        }
        messages.extend(self.history);
        if let Some(user) = self.user {
            messages.push(Message::user(user));
        }
        if !messages.iter().any(|m| m.role != Role::System) {
            return Err(EngineError::NoInput);
        }
        let mut tools = self.tools;
        if let Some(name) = &self.config.guardrails.ask_human_tool
            && !tools.iter().any(|t| &t.name == name)
        {
            tools.push(ask_human_definition(name));
        }
        let mut all_guards: Vec<Box<dyn Guard>> =
            if self.default_guards { guards::defaults(&self.config) } else { Vec::new() };
        all_guards.extend(self.guards);
        let mut names = std::collections::BTreeSet::new();
        for guard in &all_guards {
            if !names.insert(guard.name().to_owned()) {
                return Err(EngineError::DuplicateGuard(guard.name().to_owned()));
            }
        }
        let iteration_cap = self.max_iterations.unwrap_or(self.config.limits.max_iterations);
        let core = RunCore {
            calls_assigned: next_call_number(&messages),
            system_prompt_hash: system_hash_of(&messages),
            config: self.config,
            state: RunState::Running,
            phase: Phase::Ready,
            counters: Counters { user_turns: 1, ..Counters::default() },
            tools,
            depth: self.depth,
            iteration_cap,
            elapsed_ms: 0,
            pending_choice: None,
            partial_text: String::new(),
            pending_stop: None,
            near_budget_emitted: false,
            overflow_retried: false,
        };
        let mut run = Run {
            core,
            messages,
            guards: all_guards,
            policy: self.policy.unwrap_or_else(|| Box::new(KeepAll::default())),
            effects: VecDeque::new(),
        };
        run.effects.push_back(Effect::Checkpoint(CheckpointKind::Input));
        Ok(run)
    }
}

impl Run {
    /// Starts building a run with this configuration.
    pub fn builder(config: LoopConfig) -> RunBuilder {
        RunBuilder {
            config,
            system: None,
            history: Vec::new(),
            user: None,
            tools: Vec::new(),
            guards: Vec::new(),
            default_guards: true,
            policy: None,
            depth: 0,
            max_iterations: None,
        }
    }
}
