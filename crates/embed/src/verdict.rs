//! What a host reports (a model reply, a tool call) and what the guard answers.

use looprail::core::provider::Usage;
use serde::{Deserialize, Serialize};

/// A tool call the model asked for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Call {
    /// The call's id, as the model or the framework gave it (any text: it is only compared).
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// Its arguments as JSON text (key order and spacing do not matter).
    pub arguments: String,
}

/// One model reply.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Reply {
    /// Its text, if any.
    #[serde(default)]
    pub text: Option<String>,
    /// The tool calls it asks for, in order.
    #[serde(default)]
    pub calls: Vec<Call>,
    /// The tokens the provider reported; a reply without usage counts none toward the token
    /// budget and costs nothing.
    #[serde(default)]
    pub usage: Option<Usage>,
    /// The model that answered, for its price (`prices` in the config).
    #[serde(default)]
    pub model: String,
}

/// What the host does next.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    /// Go on as the agent would.
    Allow,
    /// Go on, and give the model [`Verdict::message`]: with the tool's result, or as a message
    /// before the next model call.
    Nudge,
    /// Do not run the call: the model reads [`Verdict::message`] as its result.
    Deny,
    /// Ask the human [`Verdict::message`] before the call runs; with no human at hand, treat it
    /// as [`Action::Stop`].
    Ask,
    /// Stop the agent's tool use: one last model call with no tools and
    /// [`Verdict::message`] as its instruction gives the user a final answer.
    Stop,
}

impl Action {
    /// The action's name: `allow`, `nudge`, `deny`, `ask` or `stop`.
    pub fn name(self) -> &'static str {
        match self {
            Action::Allow => "allow",
            Action::Nudge => "nudge",
            Action::Deny => "deny",
            Action::Ask => "ask",
            Action::Stop => "stop",
        }
    }
}

/// The guard's answer to one call of the host.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Verdict {
    /// What to do.
    pub action: Action,
    /// The text that goes with it: the nudge, the denial, the question, or the final-answer
    /// instruction (empty for [`Action::Allow`]).
    pub message: String,
    /// Why, in a word or two (`loop_detected:loop_guard`, `limit:token_budget`, `ask_human`),
    /// for [`Action::Stop`] and [`Action::Ask`]; empty otherwise.
    pub reason: String,
}

impl Verdict {
    /// Nothing to do.
    pub fn allow() -> Self {
        Self { action: Action::Allow, message: String::new(), reason: String::new() }
    }

    pub(crate) fn with(action: Action, message: String, reason: &str) -> Self {
        Self { action, message, reason: reason.to_owned() }
    }

    /// True unless the host should stop.
    pub fn goes_on(&self) -> bool {
        self.action != Action::Stop
    }
}
