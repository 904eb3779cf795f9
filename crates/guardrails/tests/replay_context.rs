//! Token budgets replayed over a log whose history was summarised: a turn's prompt is the
//! context it was sent, not every message the log holds.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use looprail_guardrails::replay::replay_counted;
use looprail_loop_core::config::LoopConfig;
use looprail_loop_core::message::{HISTORY_SUMMARY, Message, ToolCall, ToolResult};

/// A system prompt, then `turns` rounds of a call and its result; with `summary_at`, a history
/// summary replaces the log before that round.
fn log(turns: usize, summary_at: Option<usize>) -> Vec<Message> {
    let mut messages = vec![Message::system("You fix bugs."), Message::user("Fix the build.")];
    for turn in 0..turns {
        if summary_at == Some(turn) {
            messages.push(Message::internal_user(HISTORY_SUMMARY, "So far: the build fails in x.rs."));
        }
        let id = format!("c{turn}");
        let call = ToolCall::new(&id, "read", format!("{{\"path\":\"f{turn}.rs\"}}"));
        messages.push(Message::assistant_with_calls(None, vec![call]));
        messages.push(Message::tool_result(ToolResult::ok(&id, "fn main() {}")));
    }
    messages.push(Message::assistant("Fixed."));
    messages
}

/// The stop reason with a token budget of `budget`, each message counting 100 and the system
/// prompt 1,000.
fn stop_with_budget(messages: &[Message], budget: u64) -> Option<String> {
    let mut config = LoopConfig::default();
    config.budget.token_budget = Some(budget);
    let mut guards = looprail_loop_core::guards::defaults(&config);
    let tokens: Vec<u64> =
        messages.iter().enumerate().map(|(i, _)| if i == 0 { 1_000 } else { 100 }).collect();
    replay_counted(messages, &mut guards, &config, &tokens).stop_reason
}

/// Input and output tokens spent before the log's last turn (where a budget is checked last),
/// the way a live run counts them.
fn spent(messages: &[Message]) -> u64 {
    let mut context = 0;
    let mut total = 0;
    let mut before_last = 0;
    for (i, message) in messages.iter().enumerate() {
        let tokens = if i == 0 { 1_000 } else { 100 };
        if message.is_history_summary() {
            context = 1_000; // the system prompt stays
        }
        if message.role == looprail_loop_core::message::Role::Assistant {
            before_last = total;
            total += context + tokens;
        }
        context += tokens;
    }
    before_last
}

#[test]
fn a_summary_resets_the_prompt_to_the_system_messages_and_itself() {
    let plain = log(12, None);
    let summarised = log(12, Some(8));
    let (plain_spent, summarised_spent) = (spent(&plain), spent(&summarised));
    assert!(summarised_spent < plain_spent, "{summarised_spent} vs {plain_spent}");
    // A budget between the two: the summarised log fits, the plain one does not.
    let budget = summarised_spent + 1;
    assert_eq!(stop_with_budget(&summarised, budget), None);
    assert_eq!(stop_with_budget(&plain, budget).as_deref(), Some("limit:token_budget"));
    // At exactly what the summarised log spends, it stops too: the count is exact, not loose.
    assert_eq!(stop_with_budget(&summarised, summarised_spent).as_deref(), Some("limit:token_budget"));
}

#[test]
fn a_summary_is_no_user_turn() {
    let mut config = LoopConfig::default();
    config.budget.max_turns = Some(13);
    let mut guards = looprail_loop_core::guards::defaults(&config);
    let messages = log(12, Some(4));
    let tokens = vec![1; messages.len()];
    // Thirteen assistant turns in all: a cap of 13 is reached only after the last one.
    assert_eq!(replay_counted(&messages, &mut guards, &config, &tokens).stop_reason, None);
}
