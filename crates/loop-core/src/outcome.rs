//! What a run ends with: [`Outcome`], and why it stopped ([`StopCause`], [`LimitReason`]).

use serde::{Deserialize, Serialize};

use crate::provider::Usage;
use crate::state::RunState;

/// A budget or cap (F2, F4, F6), named as in S0's `limits_reached` status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LimitReason {
    /// The configured max-turns budget.
    MaxTurns,
    /// The cumulative input + output token budget.
    TokenBudget,
    /// The tool-call budget.
    ToolCallBudget,
    /// The cost limit.
    CostLimit,
    /// The iteration ceiling (50 by default) and its handler said stop.
    MaxIterations,
    /// The hard wall-clock limit.
    Timeout,
    /// The soft wall-clock limit; the run ended after its summary turn.
    SoftTimeLimit,
}

impl LimitReason {
    /// The terminal state this limit leads to.
    pub fn terminal_state(self) -> RunState {
        match self {
            LimitReason::MaxTurns | LimitReason::MaxIterations => RunState::MaxSteps,
            LimitReason::TokenBudget | LimitReason::ToolCallBudget | LimitReason::CostLimit => {
                RunState::BudgetExceeded
            }
            LimitReason::Timeout | LimitReason::SoftTimeLimit => RunState::TimedOut,
        }
    }

    /// Human wording for fallback replies.
    pub fn describe(self) -> &'static str {
        match self {
            LimitReason::MaxTurns => "the maximum number of turns was reached",
            LimitReason::TokenBudget => "the token budget was used up",
            LimitReason::ToolCallBudget => "the tool-call budget was used up",
            LimitReason::CostLimit => "the cost limit was reached",
            LimitReason::MaxIterations => "the iteration limit was reached",
            LimitReason::Timeout => "the time limit was reached",
            LimitReason::SoftTimeLimit => "the time limit is close",
        }
    }
}

/// Why the loop stopped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "cause", rename_all = "snake_case")]
pub enum StopCause {
    /// The model finished by itself.
    Finished,
    /// A budget or cap.
    Limit {
        /// Which.
        reason: LimitReason,
    },
    /// The model returned neither text nor tool calls (F3).
    EmptyReply,
    /// A loop detector stopped the run.
    LoopDetected {
        /// The detector.
        detector: String,
        /// What it saw.
        detail: String,
        /// The repeated call, when one call is to blame.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        evidence: Option<LoopEvidence>,
    },
    /// A guard stopped the run for another reason.
    Guard {
        /// The guard.
        guard: String,
        /// Why.
        detail: String,
    },
    /// The model asked a human (or was made to); the run waits for the answer.
    HandedToHuman {
        /// The question.
        question: String,
    },
    /// A resumed run found a side-effecting tool call that started before the crash and never
    /// finished: re-running it could repeat the effect, so a human must decide (F34).
    ResumeUnsafe {
        /// The call.
        call_id: String,
        /// Its tool.
        tool: String,
    },
    /// A cancel request was observed.
    Cancelled,
    /// The provider failed for good (after any retries).
    ProviderFailed {
        /// The error, rendered.
        message: String,
    },
}

/// The call a loop detector blames: tool, arguments and how often it was called (F18).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LoopEvidence {
    /// The tool.
    pub tool: String,
    /// Its arguments, canonical JSON.
    pub arguments: String,
    /// How many times it was called with them.
    pub count: u32,
}

/// How the user's reply is produced after a stop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplyMode {
    /// The model's own last text.
    ModelText,
    /// One more model call with tool choice `none` and the fallback instruction (F10).
    FallbackCall,
    /// A reply built from the collected context, without a model call.
    Deterministic,
    /// No reply at all (cancellation writes no apology, F7).
    Silent,
}

impl StopCause {
    /// The terminal state this cause leads to.
    pub fn terminal_state(&self) -> RunState {
        match self {
            StopCause::Finished | StopCause::EmptyReply => RunState::Completed,
            StopCause::Limit { reason } => reason.terminal_state(),
            StopCause::LoopDetected { .. } | StopCause::Guard { .. } => RunState::Error,
            StopCause::ProviderFailed { .. } => RunState::Error,
            StopCause::HandedToHuman { .. } | StopCause::ResumeUnsafe { .. } => RunState::WaitingOnHuman,
            StopCause::Cancelled => RunState::Cancelled,
        }
    }

    /// How the reply is produced. A failing provider or an expired hard time limit gets a
    /// deterministic reply, since another model call would fail or overrun.
    pub fn reply_mode(&self) -> ReplyMode {
        match self {
            StopCause::Finished | StopCause::HandedToHuman { .. } => ReplyMode::ModelText,
            StopCause::Limit { reason: LimitReason::Timeout } => ReplyMode::Deterministic,
            StopCause::Limit { reason: LimitReason::SoftTimeLimit } => ReplyMode::ModelText,
            StopCause::Limit { .. }
            | StopCause::EmptyReply
            | StopCause::LoopDetected { .. }
            | StopCause::Guard { .. } => ReplyMode::FallbackCall,
            StopCause::ProviderFailed { .. } | StopCause::ResumeUnsafe { .. } => ReplyMode::Deterministic,
            StopCause::Cancelled => ReplyMode::Silent,
        }
    }

    /// One line for logs and fallback replies.
    pub fn describe(&self) -> String {
        match self {
            StopCause::Finished => "the task is finished".to_owned(),
            StopCause::Limit { reason } => reason.describe().to_owned(),
            StopCause::EmptyReply => "the model returned an empty reply".to_owned(),
            StopCause::LoopDetected { detail, .. } => {
                format!("a repeating loop was detected ({detail})")
            }
            StopCause::Guard { guard, detail } => {
                format!("guard {guard} stopped the run ({detail})")
            }
            StopCause::HandedToHuman { .. } => "a human's answer is needed".to_owned(),
            StopCause::Cancelled => "the run was cancelled".to_owned(),
            StopCause::ResumeUnsafe { tool, call_id } => format!(
                "the side-effecting tool `{tool}` (call {call_id}) may have run before the interruption; \
                 a human must check before it is run again"
            ),
            StopCause::ProviderFailed { message } => {
                format!("the model provider failed ({message})")
            }
        }
    }
}

/// How the final text was made, when the model did not simply finish.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FallbackKind {
    /// One forced text-only model call (F10).
    ModelCall,
    /// Built from the collected context because no model call was possible or it failed.
    Deterministic,
}

/// The result of a run (or of one user turn of a conversation).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Outcome {
    /// The state the run ended in.
    pub state: RunState,
    /// Why it stopped.
    pub stop: StopCause,
    /// The reply for the user. Empty only for cancelled runs.
    pub final_text: String,
    /// Set when the reply is a fallback.
    pub fallback: Option<FallbackKind>,
    /// Total token usage, fallback calls included.
    pub usage: Usage,
    /// Total cost from the price table, fallback calls included.
    pub cost: f64,
    /// Model turns of the loop (continuations included, fallback and summary calls not).
    pub turns: u32,
    /// Tool calls the model requested.
    pub tool_calls: u32,
    /// Set when an output check rejected the final text (F13); the text is the original.
    #[serde(default)]
    pub moderated: Option<Moderation>,
    /// The structured form of the final text, when a formatter is set (F13).
    #[serde(default)]
    pub structured: Option<StructuredOutput>,
    /// Citations for the chunks the answer refers to (F13, F30).
    #[serde(default)]
    pub citations: Vec<Citation>,
}

impl Outcome {
    /// A completed outcome with this text and nothing else (for tests and examples).
    pub fn finished(text: impl Into<String>) -> Self {
        Self {
            state: RunState::Completed,
            stop: StopCause::Finished,
            final_text: text.into(),
            fallback: None,
            usage: Usage::default(),
            cost: 0.0,
            turns: 0,
            tool_calls: 0,
            moderated: None,
            structured: None,
            citations: Vec::new(),
        }
    }
}

/// A citation annotation: which shown chunk a span of the answer refers to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Citation {
    /// The label the chunk was shown under (`[n]`).
    pub ref_id: u32,
    /// The vector store the chunk came from.
    pub vector_store_id: String,
    /// The file within it.
    pub file_id: String,
    /// The chunk's index within the file.
    pub chunk_index: u32,
    /// A URL or title for the chunk, when the retrieval tool gave one.
    pub source: Option<String>,
    /// Byte offset where the citation marker starts in the answer.
    pub start: usize,
    /// Byte offset where it ends.
    pub end: usize,
}

/// Why an output was held back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Moderation {
    /// The rule that rejected it.
    pub rule: String,
    /// Its reason.
    pub reason: String,
}

/// The structured form of the final text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum StructuredOutput {
    /// The text parsed.
    Parsed {
        /// The value.
        value: serde_json::Value,
    },
    /// The text did not fit; the plain text is still in the outcome.
    Invalid {
        /// Why.
        error: String,
    },
}

impl StructuredOutput {
    /// The parsed value, if any.
    pub fn value(&self) -> Option<&serde_json::Value> {
        match self {
            StructuredOutput::Parsed { value } => Some(value),
            StructuredOutput::Invalid { .. } => None,
        }
    }
}
