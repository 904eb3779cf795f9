//! One recorded run through the guards and the compaction policy.

use looprail::LooprailConfig;
use std::sync::Arc;

use looprail::compaction::{AutoCompaction, MemoCounter, TokenLedger};
use looprail::core::context::{ContextPolicy, ContextStep, ContextView, LoggedContext, TokenCounter};
use looprail::core::guard::Counters;
use looprail::core::message::{Message, Role};
use looprail::guardrails::DegenerateReplies;
use looprail::guardrails::default_stack;
use looprail::guardrails::replay::{LoopTiming, Timeline, replay_recorded};

use rayon::prelude::*;

use crate::run_report::{RunReport, Tokens};
use crate::shape::RunShape;

/// Runs with at least this many messages have them counted in parallel.
const PARALLEL_COUNT_FROM: usize = 1_024;

/// Replays `messages` and measures their context size with and without compaction (`logged_peak`,
/// the log's own figure, is reported beside them). `timeline`, the log's record of its replies,
/// spends their cost and time as the run did.
pub fn run(
    name: &str,
    mut messages: Vec<Message>,
    logged_peak: Option<u64>,
    timeline: &Timeline,
    config: &LooprailConfig,
    counter: &Arc<MemoCounter>,
) -> RunReport {
    config.audit.error_patterns.classify(&mut messages);
    // The stack a live run has: the loop's budgets and caps, then the loop guardrails.
    let mut guards = looprail::core::guards::defaults(&config.loop_);
    guards.extend(default_stack(&config.guardrails));
    // A long run's messages are counted on every core (a single large log is otherwise one
    // thread's work); short ones in place, as the files around them keep the cores busy.
    let per_message: Vec<u64> = if messages.len() >= PARALLEL_COUNT_FROM {
        messages.par_iter().with_min_len(64).map(|m| counter.count_message(m)).collect()
    } else {
        messages.iter().map(|m| counter.count_message(m)).collect()
    };
    // Each reply is read by the degenerate-reply watch a live run has (B14); with it off, the
    // watch finds nothing.
    let replies = DegenerateReplies::new(config.guardrails.degenerate_reply.clone());
    let replayed = replay_recorded(&messages, &mut guards, &config.loop_, &per_message, &replies, timeline);
    // Tokens a stop would have saved: the part of the conversation after the stop point.
    let saved_tokens = replayed.stopped_at.map_or(0, |at| {
        let cut = messages
            .iter()
            .enumerate()
            .filter(|(_, m)| m.role == Role::Assistant)
            .map(|(i, m)| (i, m.tool_calls().count()))
            .scan(0u64, |seen, (i, n)| {
                *seen += n as u64;
                Some((i, *seen))
            })
            .find(|(_, seen)| *seen > at)
            .map_or(messages.len(), |(i, _)| i + 1);
        per_message[cut.min(messages.len())..].iter().sum()
    });
    let shape = RunShape::of(&messages);
    let loop_timing = LoopTiming::of(&messages, &replayed);
    let tokens = Tokens { logged_peak, ..tokens(messages, &per_message, config, counter) };
    RunReport::new(name, replayed, loop_timing, tokens, shape, saved_tokens)
}

/// The conversation's peak size, and its peak with auto-compaction deciding before every model
/// call (with no summary model offline, the deterministic truncation stands in for summaries).
/// `per_message` holds each message's count. The messages move into the simulated context
/// (copying them cost as much as reading the log).
fn tokens(
    messages: Vec<Message>,
    per_message: &[u64],
    config: &LooprailConfig,
    counter: &Arc<MemoCounter>,
) -> Tokens {
    // The recorded context: it grows, but where the agent compacted its history (a history
    // summary in the log) it starts again from the system messages and the summary.
    let mut recorded = LoggedContext::default();
    let mut compactions_in_log = 0;
    for (message, tokens) in messages.iter().zip(per_message) {
        recorded.push(message, *tokens);
        compactions_in_log += u64::from(message.is_history_summary());
    }
    let peak = recorded.peak();
    // A conversation whose recorded size stays within the compaction limit never crosses it:
    // compaction would change nothing, and is not simulated.
    if peak <= config.compaction.limit() {
        return Tokens { peak, peak_with_compaction: peak, compactions_in_log, logged_peak: None };
    }
    let shared: Arc<dyn TokenCounter> = counter.clone();
    let mut policy = AutoCompaction::new(config.compaction.clone()).with_counter(shared);
    let mut working: Vec<Message> = Vec::with_capacity(messages.len());
    let mut ledger = TokenLedger::default();
    let mut compacted_peak = 0;
    let mut counters = Counters::default();
    for message in messages {
        if message.is_history_summary() {
            // The recorded agent compacted here: what it sent from now on starts again.
            working.retain(|m| m.role == Role::System);
        }
        if message.role == Role::Assistant {
            counters.turns += 1;
            let view = ContextView::new(&counters, &config.loop_);
            if let ContextStep::Summarize { .. } = policy.prepare(&mut working, &view) {
                policy.apply_summary(&mut working, Err("offline audit".to_owned()), &view);
            }
            compacted_peak = compacted_peak.max(ledger.sync(&working, counter.as_ref()));
        }
        working.push(message);
    }
    compacted_peak = compacted_peak.max(ledger.sync(&working, counter.as_ref()));
    Tokens { peak, peak_with_compaction: compacted_peak, compactions_in_log, logged_peak: None }
}
