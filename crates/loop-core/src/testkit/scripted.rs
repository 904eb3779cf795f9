//! A provider that answers from a script.

use std::collections::VecDeque;
use std::sync::Mutex;

use async_trait::async_trait;

use crate::message::ToolCall;
use crate::provider::{
    CallPurpose, ModelRequest, ModelResponse, Provider, ProviderError, ProviderErrorKind, StopReason, Usage,
};
use crate::testkit::rng::SplitMix64;
use crate::tool::ToolChoice;

/// One scripted answer.
#[derive(Debug, Clone, PartialEq)]
pub enum ScriptStep {
    /// Answer with this response.
    Reply(ModelResponse),
    /// Fail with this error.
    Fail(ProviderError),
}

/// What the provider saw on one call.
#[derive(Debug, Clone, PartialEq)]
pub struct CallRecord {
    /// Why the engine called.
    pub purpose: CallPurpose,
    /// The tool choice sent.
    pub tool_choice: ToolChoice,
    /// Messages in the request.
    pub message_count: usize,
    /// The per-call instruction, if any.
    pub instruction: Option<String>,
}

/// Answers loop turns from a script, in order, and fallback or summary calls from a separate
/// answer (default: a short text). When the script runs out, calls fail with a permanent error.
/// A call that forces a named tool is answered like a compliant model would: with a call to
/// that tool (arguments `{"question": ...}`), without consuming a script step.
///
/// ```
/// use looprail_loop_core::testkit::ScriptedProvider;
///
/// let provider = ScriptedProvider::new("scripted")
///     .call_tool("search", r#"{"q": "flights"}"#)
///     .reply_text("Found two flights.");
/// assert_eq!(provider.remaining(), 2);
/// ```
#[derive(Debug)]
pub struct ScriptedProvider {
    model: String,
    usage: Option<Usage>,
    steps: Mutex<VecDeque<ScriptStep>>,
    fallback: Mutex<ScriptStep>,
    log: Mutex<Vec<CallRecord>>,
    next_id: Mutex<u64>,
    tool_choice: bool,
}

impl ScriptedProvider {
    /// An empty script for `model`; every reply reports 100 input and 20 output tokens.
    pub fn new(model: impl Into<String>) -> Self {
        let model = model.into();
        let fallback = ScriptStep::Reply(ModelResponse::text(
            model.clone(),
            "I could not complete the task within its limits. Here is what I found so far.",
        ));
        Self {
            model,
            usage: Some(Usage { input_tokens: 100, output_tokens: 20, ..Usage::default() }),
            steps: Mutex::new(VecDeque::new()),
            fallback: Mutex::new(fallback),
            log: Mutex::new(Vec::new()),
            next_id: Mutex::new(0),
            tool_choice: true,
        }
    }

    /// Sets the usage every scripted reply reports.
    #[must_use]
    pub fn usage_per_call(mut self, input_tokens: u64, output_tokens: u64) -> Self {
        self.usage = Some(Usage { input_tokens, output_tokens, ..Usage::default() });
        self
    }

    /// Replies report no usage at all, as some OpenAI-compatible servers do.
    #[must_use]
    pub fn without_usage(mut self) -> Self {
        self.usage = None;
        self
    }

    /// Declares that this provider ignores tool choice.
    #[must_use]
    pub fn without_tool_choice(mut self) -> Self {
        self.tool_choice = false;
        self
    }

    fn fresh_id(&self) -> String {
        let mut next = self.next_id.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        *next += 1;
        format!("call_{next}")
    }

    /// Appends a step.
    #[must_use]
    pub fn then(self, step: ScriptStep) -> Self {
        self.steps.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push_back(step);
        self
    }

    /// Appends a final text answer.
    #[must_use]
    pub fn reply_text(self, text: &str) -> Self {
        let response = ModelResponse::text(self.model.clone(), text);
        self.then(ScriptStep::Reply(response))
    }

    /// Appends one tool call (ids are generated).
    #[must_use]
    pub fn call_tool(self, name: &str, arguments: &str) -> Self {
        self.call_tools(&[(name, arguments)])
    }

    /// Appends a batch of parallel tool calls.
    #[must_use]
    pub fn call_tools(self, calls: &[(&str, &str)]) -> Self {
        let calls = calls.iter().map(|(name, args)| ToolCall::new(self.fresh_id(), *name, *args)).collect();
        let response = ModelResponse::tool_calls(self.model.clone(), calls);
        self.then(ScriptStep::Reply(response))
    }

    /// Appends a reply cut off by the output-token limit.
    #[must_use]
    pub fn truncated(self, text: &str) -> Self {
        let mut response = ModelResponse::text(self.model.clone(), text);
        response.stop_reason = StopReason::MaxTokens;
        self.then(ScriptStep::Reply(response))
    }

    /// Appends an empty reply (no text, no tool calls).
    #[must_use]
    pub fn empty(self) -> Self {
        let response = ModelResponse { text: None, ..ModelResponse::text(self.model.clone(), "") };
        self.then(ScriptStep::Reply(response))
    }

    /// Appends a failure.
    #[must_use]
    pub fn fail(self, kind: ProviderErrorKind, message: &str) -> Self {
        self.then(ScriptStep::Fail(ProviderError::new(kind, message)))
    }

    /// Sets the answer to fallback and summary calls.
    #[must_use]
    pub fn on_fallback(self, step: ScriptStep) -> Self {
        *self.fallback.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = step;
        self
    }

    /// A reproducible random script of `len` steps over `tools`: tool calls with a few
    /// distinct argument values (so repeats happen), parallel batches, truncations, empty
    /// replies, transient failures and final answers.
    pub fn seeded(model: impl Into<String>, seed: u64, len: usize, tools: &[&str]) -> Self {
        let mut rng = SplitMix64::new(seed);
        let mut provider = Self::new(model);
        for _ in 0..len {
            let tool = |rng: &mut SplitMix64| {
                tools.get(rng.below(tools.len() as u64) as usize).copied().unwrap_or("missing")
            };
            let args = |rng: &mut SplitMix64| format!("{{\"q\": {}}}", rng.below(4));
            provider = match rng.below(100) {
                0..55 => {
                    let (name, a) = (tool(&mut rng), args(&mut rng));
                    provider.call_tool(name, &a)
                }
                55..65 => {
                    let (n1, a1, n2, a2) = (tool(&mut rng), args(&mut rng), tool(&mut rng), args(&mut rng));
                    provider.call_tools(&[(n1, &a1), (n2, &a2)])
                }
                65..73 => provider.truncated("partial answer "),
                73..78 => provider.empty(),
                78..83 => provider.fail(ProviderErrorKind::Server, "scripted 500"),
                _ => provider.reply_text("final answer"),
            };
        }
        provider
    }

    /// Steps left in the script.
    pub fn remaining(&self) -> usize {
        self.steps.lock().map(|s| s.len()).unwrap_or(0)
    }

    /// Every call so far.
    pub fn calls(&self) -> Vec<CallRecord> {
        self.log.lock().map(|l| l.clone()).unwrap_or_default()
    }
}

#[async_trait]
impl Provider for ScriptedProvider {
    fn model(&self) -> &str {
        &self.model
    }

    fn supports_tool_choice(&self) -> bool {
        self.tool_choice
    }

    async fn complete(&self, request: &ModelRequest<'_>) -> Result<ModelResponse, ProviderError> {
        if let Ok(mut log) = self.log.lock() {
            log.push(CallRecord {
                purpose: request.purpose,
                tool_choice: request.tool_choice.clone(),
                message_count: request.messages.len(),
                instruction: request.instruction.map(str::to_owned),
            });
        }
        if let (true, ToolChoice::Named(name)) = (self.tool_choice, &request.tool_choice) {
            // A compliant model obeys a forced tool; the script waits for the next free turn.
            let arguments = serde_json::json!({"question": "I seem to be stuck. How should I proceed?"});
            let call = ToolCall::new(self.fresh_id(), name.clone(), arguments.to_string());
            let mut response = ModelResponse::tool_calls(self.model.clone(), vec![call]);
            response.usage = self.usage;
            return Ok(response);
        }
        let step = if request.purpose == CallPurpose::Turn {
            self.steps.lock().ok().and_then(|mut s| s.pop_front())
        } else {
            self.fallback.lock().ok().map(|f| f.clone())
        };
        match step {
            Some(ScriptStep::Reply(mut response)) => {
                if response.usage.is_none() {
                    response.usage = self.usage;
                }
                Ok(response)
            }
            Some(ScriptStep::Fail(error)) => Err(error),
            None => Err(ProviderError::new(ProviderErrorKind::Other, "the script is exhausted")),
        }
    }
}
