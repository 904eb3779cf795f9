//! Auto-compaction at 70% of the context window (F27) and the recovery ladder (F28).

use serde::{Deserialize, Serialize};

use looprail_loop_core::context::{ContextPolicy, ContextStep, ContextView, SummaryRequest, TokenCounter};
use looprail_loop_core::event::Event;
use looprail_loop_core::guard::{Decision, GuardStateError};
use looprail_loop_core::message::Message;
use looprail_loop_core::outcome::StopCause;
use looprail_loop_core::tool::ToolChoice;

use std::sync::Arc;

use crate::counter::TiktokenCounter;
use crate::ledger::TokenLedger;
use crate::pairs::{body_start, tail_start};
use crate::summary::{SUMMARY_INSTRUCTION, replace_history_pinned, summary_message, summary_message_with};

/// Settings of [`AutoCompaction`], with S2's numbers as defaults.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AutoCompactionConfig {
    /// The model's context window in tokens.
    pub context_window: u64,
    /// Fraction of the window that triggers a recovery action.
    pub threshold: f64,
    /// Messages kept verbatim by R1 compaction.
    pub keep_verbatim: usize,
    /// Messages kept verbatim by R2 deep prune.
    pub deep_keep_verbatim: usize,
    /// Iterations within which a new crossing climbs to the next stage.
    pub ladder_window: u32,
    /// Recovery actions allowed per user turn; 0 switches the recovery ladder off (a switch,
    /// like `error_streak: 0`, unlike a budget, where 0 is refused).
    pub max_recoveries: u32,
    /// Output cap of the summary call.
    pub summary_max_tokens: u32,
}

impl Default for AutoCompactionConfig {
    fn default() -> Self {
        Self {
            context_window: 128_000,
            threshold: 0.7,
            keep_verbatim: 10,
            deep_keep_verbatim: 4,
            ladder_window: 20,
            max_recoveries: 4,
            summary_max_tokens: 1_024,
        }
    }
}

impl AutoCompactionConfig {
    /// Checks every range, naming the key.
    pub fn validate(&self) -> Result<(), looprail_loop_core::config::ConfigError> {
        use looprail_loop_core::config::ConfigError;
        if self.context_window < 1_000 {
            return Err(ConfigError::new("context_window", "must be at least 1000 tokens"));
        }
        if !(self.threshold > 0.0 && self.threshold < 1.0) {
            return Err(ConfigError::new("threshold", "must be between 0 and 1"));
        }
        if self.keep_verbatim == 0
            || self.deep_keep_verbatim == 0
            || self.deep_keep_verbatim > self.keep_verbatim
        {
            return Err(ConfigError::new(
                "deep_keep_verbatim",
                "must be at least 1 and at most `keep_verbatim`",
            ));
        }
        Ok(())
    }

    /// The context size above which a recovery action runs (`threshold` of the window): a
    /// conversation that never grows past it is never compacted.
    pub fn limit(&self) -> u64 {
        (self.context_window as f64 * self.threshold) as u64
    }
}

/// Old history smaller than this is not worth a summary call.
pub const MIN_SUMMARISED_TOKENS: u64 = 100;

/// A recovery stage.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stage {
    /// R1: summarise all but the last `keep_verbatim` messages.
    Compaction,
    /// R2: summarise all but the last `deep_keep_verbatim` messages.
    DeepPrune,
    /// R3: ask the human.
    AskHuman,
}

/// A summary in flight: what it will replace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Pending {
    stage: Stage,
    body: usize,
    split: usize,
    before_tokens: u64,
    before_messages: u64,
}

/// The ladder's counters (saved with the run, reset each user turn).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecoveryState {
    /// Recovery actions this user turn.
    pub recoveries: u32,
    /// Iteration of the last R1.
    pub last_compaction: Option<u32>,
    /// Iteration of the last R2.
    pub last_prune: Option<u32>,
    pending: Option<Pending>,
}

/// Compacts when the conversation crosses the threshold, climbing a ladder when compaction is
/// not enough:
///
/// - **R1** summarises everything but the last 10 messages with a (cheap) model, the latest
///   successful result of each tool pinned into the summary as text;
/// - **R2** (still over within 20 iterations of R1) keeps only the last 4, marked "deep pruned";
/// - **R3** (still over within 20 iterations of R2) forces an `ask_human` call.
///
/// At most 4 actions per user turn; the counters reset with each new user turn and are saved
/// with the run. A summary that fails, times out or comes back longer than what it replaces is
/// replaced by a deterministic truncation (same cut, a note instead of the summary, the pinned
/// results kept). System messages and the run journal always survive; a tool call is never
/// separated from its results. Events: `agent.compaction.run` (R1), `agent.recovery.fired`
/// (R2, R3), with tokens and messages before and after.
#[derive(Clone)]
pub struct AutoCompaction {
    config: AutoCompactionConfig,
    counter: Arc<dyn TokenCounter>,
    ledger: TokenLedger,
    state: RecoveryState,
}

impl std::fmt::Debug for AutoCompaction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AutoCompaction").field("config", &self.config).field("state", &self.state).finish()
    }
}

impl AutoCompaction {
    /// A policy with these settings.
    pub fn new(config: AutoCompactionConfig) -> Self {
        Self {
            config,
            counter: Arc::new(TiktokenCounter::default()),
            ledger: TokenLedger::default(),
            state: RecoveryState::default(),
        }
    }

    /// Counts with `counter` instead of the default cl100k tiktoken counter (a
    /// [`MemoCounter`](crate::MemoCounter) shared with other passes over the same messages,
    /// say).
    #[must_use]
    pub fn with_counter(mut self, counter: Arc<dyn TokenCounter>) -> Self {
        self.counter = counter;
        self
    }

    /// For a model with a context window of `tokens`, with the other defaults.
    pub fn for_window(tokens: u64) -> Self {
        Self::new(AutoCompactionConfig { context_window: tokens, ..AutoCompactionConfig::default() })
    }

    /// The ladder's counters.
    pub fn state(&self) -> &RecoveryState {
        &self.state
    }

    /// The token total at the last check.
    pub fn tokens(&self) -> u64 {
        self.ledger.total()
    }

    fn within(last: Option<u32>, now: u32, window: u32) -> bool {
        last.is_some_and(|at| now.saturating_sub(at) <= window)
    }

    fn next_stage(&self, iteration: u32) -> Stage {
        let window = self.config.ladder_window;
        if Self::within(self.state.last_prune, iteration, window) {
            Stage::AskHuman
        } else if Self::within(self.state.last_compaction, iteration, window) {
            Stage::DeepPrune
        } else {
            Stage::Compaction
        }
    }

    /// Runs the next recovery action now.
    fn recover(&mut self, messages: &[Message], view: &ContextView<'_>, total: u64) -> ContextStep {
        if self.state.recoveries >= self.config.max_recoveries {
            return ContextStep::ready();
        }
        let iteration = view.counters.turns;
        let body = body_start(messages);
        // A stage with too little old history to summarise cannot help: climb to the next one.
        let mut stage = self.next_stage(iteration);
        let mut split = body;
        while stage != Stage::AskHuman {
            let keep = if stage == Stage::Compaction {
                self.config.keep_verbatim
            } else {
                self.config.deep_keep_verbatim
            };
            split = tail_start(messages, keep);
            if split > body && self.ledger.sum(body..split) >= MIN_SUMMARISED_TOKENS {
                break;
            }
            stage = if stage == Stage::Compaction { Stage::DeepPrune } else { Stage::AskHuman };
        }
        self.state.recoveries += 1;
        if stage == Stage::AskHuman {
            let event = Decision::Emit(Event::RecoveryFired {
                stage: "ask_human".into(),
                before_tokens: total,
                after_tokens: total,
                before_messages: messages.len() as u64,
                after_messages: messages.len() as u64,
            });
            let Some(tool) = view.config.guardrails.ask_human_tool.clone() else {
                return ContextStep::Ready(vec![
                    event,
                    Decision::Stop(StopCause::Guard {
                        guard: "compaction".into(),
                        detail: "the context keeps overflowing and there is no ask_human tool".into(),
                    }),
                ]);
            };
            let note = format!(
                "I've made progress but I'm losing context faster than I can recover it. Call `{tool}` \
                 now: summarise where things stand and ask whether to keep going, change direction, or stop."
            );
            return ContextStep::Ready(vec![
                event,
                Decision::Inject(Message::internal_user("context_ask_human", note)),
                Decision::ForceToolChoice(ToolChoice::Named(tool)),
            ]);
        }
        match stage {
            Stage::Compaction => self.state.last_compaction = Some(iteration),
            _ => self.state.last_prune = Some(iteration),
        }
        self.state.pending = Some(Pending {
            stage,
            body,
            split,
            before_tokens: total,
            before_messages: messages.len() as u64,
        });
        ContextStep::Summarize {
            request: SummaryRequest {
                messages: messages[..split].to_vec(),
                instruction: SUMMARY_INSTRUCTION.to_owned(),
                max_output_tokens: Some(self.config.summary_max_tokens),
            },
            decisions: Vec::new(),
        }
    }
}

impl ContextPolicy for AutoCompaction {
    /// Counted with the policy's tokenizer: a turn's prompt through the ledger (only messages
    /// added since the last count cost anything), a summary's input directly.
    fn estimate_usage(
        &mut self,
        sent: &[Message],
        reply: &looprail_loop_core::provider::ModelResponse,
    ) -> looprail_loop_core::provider::Usage {
        let input = if self.state.pending.is_some() {
            sent.iter().map(|m| self.counter.count_message(m)).sum()
        } else {
            self.ledger.sync(sent, self.counter.as_ref())
        };
        let output = reply.text.as_deref().map_or(0, |t| self.counter.count_text(t))
            + reply
                .tool_calls
                .iter()
                .map(|c| self.counter.count_text(&c.name) + self.counter.count_text(&c.arguments))
                .sum::<u64>();
        looprail_loop_core::provider::Usage::estimate(input, output)
    }

    fn prepare(&mut self, messages: &mut Vec<Message>, view: &ContextView<'_>) -> ContextStep {
        let total = self.ledger.sync(messages, self.counter.as_ref());
        if total <= self.config.limit() {
            return ContextStep::ready();
        }
        self.recover(messages, view, total)
    }

    fn apply_summary(
        &mut self,
        messages: &mut Vec<Message>,
        summary: Result<String, String>,
        view: &ContextView<'_>,
    ) -> Vec<Decision> {
        let Some(pending) = self.state.pending.take() else { return Vec::new() };
        if pending.split > messages.len() || pending.body > pending.split {
            return Vec::new(); // the conversation changed under us; next turn decides again
        }
        let replaced_tokens = self.ledger.sum(pending.body..pending.split);
        let limit = (replaced_tokens).min(self.config.context_window / 4);
        let text = match summary {
            Ok(text) if self.counter.count_text(&text) <= limit => text,
            Ok(_) => "(The summary came back longer than what it replaced, so the earlier messages were \
                      truncated without one.)"
                .to_owned(),
            Err(reason) => {
                format!("(No summary could be written: {reason}. The earlier messages were truncated.)")
            }
        };
        let marker = if pending.stage == Stage::DeepPrune { "Deep pruned" } else { "Summary" };
        let part = &messages[pending.body..pending.split];
        // The replacement must be smaller than what it replaces: drop the pins if they make it
        // larger, and leave the history alone if even the bare note does.
        let mut message = summary_message(&text, part, marker);
        if self.counter.count_message(&message) >= replaced_tokens {
            message = summary_message_with(&text, part, marker, false);
        }
        if self.counter.count_message(&message) >= replaced_tokens {
            return Vec::new();
        }
        replace_history_pinned(messages, pending.body, pending.split, message, view.pinned);
        let after = self.ledger.recount(messages, self.counter.as_ref());
        let event = match pending.stage {
            Stage::Compaction => Event::CompactionRun {
                before_tokens: pending.before_tokens,
                after_tokens: after,
                before_messages: pending.before_messages,
                after_messages: messages.len() as u64,
            },
            _ => Event::RecoveryFired {
                stage: "deep_prune".into(),
                before_tokens: pending.before_tokens,
                after_tokens: after,
                before_messages: pending.before_messages,
                after_messages: messages.len() as u64,
            },
        };
        vec![Decision::Emit(event)]
    }

    fn on_overflow(&mut self, messages: &mut Vec<Message>, view: &ContextView<'_>) -> ContextStep {
        let total = self.ledger.sync(messages, self.counter.as_ref());
        self.recover(messages, view, total)
    }

    fn on_user_turn(&mut self) {
        self.state = RecoveryState::default();
    }

    fn save_state(&self) -> serde_json::Value {
        serde_json::to_value(&self.state).unwrap_or_default()
    }

    fn load_state(&mut self, state: serde_json::Value) -> Result<(), GuardStateError> {
        if state.is_null() {
            return Ok(());
        }
        self.state =
            serde_json::from_value(state).map_err(|e| GuardStateError::from_serde("auto_compaction", e))?;
        Ok(())
    }
}

impl AutoCompaction {
    /// The counter in use.
    pub fn counter(&self) -> &dyn TokenCounter {
        self.counter.as_ref()
    }
}
