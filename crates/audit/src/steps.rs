//! A recorded run as the steps a host reports to an in-process guard (looprail's Python and
//! Node `Guard`, or `looprail_embed::AgentGuard`): each user message, each model reply with
//! its time and usage, each tool result. A guard fed these steps sees what the audit's replay
//! sees, so it reports the same events: the conformance suites of the bindings are built on
//! them.
//!
//! ```
//! use looprail::core::message::{Message, ToolCall, ToolResult};
//! use looprail::guardrails::replay::Timeline;
//! use looprail_audit::steps::{HostStep, steps};
//!
//! let messages = vec![
//!     Message::user("fix the build"),
//!     Message::assistant_with_calls(None, vec![ToolCall::new("c1", "bash", r#"{"cmd":"make"}"#)]),
//!     Message::tool_result(ToolResult::error("c1", "make: *** No rule")),
//! ];
//! let steps = steps(&messages, &[5, 20, 8], &Timeline::default());
//! assert!(matches!(steps[0], HostStep::User));
//! let HostStep::Model { usage, .. } = &steps[1] else { panic!() };
//! assert_eq!((usage.input_tokens, usage.output_tokens), (5, 20), "the prompt so far, and the reply");
//! assert!(matches!(&steps[2], HostStep::Result { failed: true, .. }));
//! ```

use looprail::core::context::LoggedContext;
use looprail::core::message::{Message, Role};
use looprail::core::provider::Usage;
use looprail::guardrails::replay::{Timeline, results_for};
use serde::{Deserialize, Serialize};

/// A tool call of a reply.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepCall {
    /// Its id.
    pub id: String,
    /// The tool.
    pub name: String,
    /// Its arguments as JSON text.
    pub arguments: String,
}

/// One step of a run, as a host reports it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "step", rename_all = "snake_case")]
pub enum HostStep {
    /// A message from the user.
    User,
    /// A model reply: before it, the host asks the guard before the model call; then reports
    /// the reply.
    Model {
        /// The run's time when its request went out, in ms from the run's start.
        at_ms: u64,
        /// Its text.
        text: Option<String>,
        /// Its calls.
        calls: Vec<StepCall>,
        /// The tokens it spent: the log's record, else the audit's estimate (its whole prompt
        /// in, its own message out).
        usage: Usage,
        /// The model that answered, when the log says.
        model: String,
    },
    /// A tool call's result, its error flag set by the error patterns.
    Result {
        /// The call's id.
        id: String,
        /// What the tool gave back.
        output: String,
        /// The call failed.
        failed: bool,
    },
}

/// The steps of `messages` (their error flags already set), with `tokens[i]` the count of
/// `messages[i]` and `timeline` the log's record of its replies. A reply whose results the log
/// does not record is followed by none.
pub fn steps(messages: &[Message], tokens: &[u64], timeline: &Timeline) -> Vec<HostStep> {
    let mut steps = Vec::with_capacity(messages.len());
    let mut context = LoggedContext::default();
    let mut reply = 0usize;
    for (i, message) in messages.iter().enumerate() {
        let prompt = context.tokens();
        context.push(message, tokens.get(i).copied().unwrap_or(0));
        match message.role {
            Role::User if !message.is_internal() => steps.push(HostStep::User),
            Role::Assistant => {
                let estimated = Usage {
                    input_tokens: prompt,
                    output_tokens: tokens.get(i).copied().unwrap_or(0),
                    ..Usage::default()
                };
                let calls: Vec<_> = message.tool_calls().cloned().collect();
                steps.push(HostStep::Model {
                    at_ms: u64::try_from(timeline.elapsed(reply).as_millis()).unwrap_or(u64::MAX),
                    text: message.joined_text(),
                    calls: calls
                        .iter()
                        .map(|c| StepCall {
                            id: c.id.clone(),
                            name: c.name.clone(),
                            arguments: c.arguments.clone(),
                        })
                        .collect(),
                    usage: *timeline.usage(reply, &estimated),
                    model: timeline.reply(reply).and_then(|r| r.model.clone()).unwrap_or_default(),
                });
                reply += 1;
                let answered = messages[i + 1..].iter().take_while(|m| m.role == Role::Tool).count();
                if answered > 0 && !calls.is_empty() {
                    for result in results_for(messages, i + 1, &calls) {
                        steps.push(HostStep::Result {
                            output: result.content.clone(),
                            failed: result.is_error,
                            id: result.call_id,
                        });
                    }
                }
            }
            _ => {}
        }
    }
    steps
}
