//! For any history and any strategy: every tool result keeps its call, the system prompt stays
//! first, and the result fits the budget whenever fitting is possible (issue 6).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use looprail_compaction::pairs::well_formed;
use looprail_compaction::{
    AutoCompaction, AutoCompactionConfig, KeepEnds, SlidingWindow, TiktokenCounter, TokenLedger,
};
use looprail_loop_core::config::LoopConfig;
use looprail_loop_core::context::{ContextPolicy, ContextStep, ContextView, TokenCounter};
use looprail_loop_core::guard::Counters;
use looprail_loop_core::message::{Message, Role, ToolCall, ToolResult};
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Turn {
    User(usize),
    Text(usize),
    Tools(Vec<usize>),
}

fn turn() -> impl Strategy<Value = Turn> {
    prop_oneof![
        (1usize..60).prop_map(Turn::User),
        (1usize..60).prop_map(Turn::Text),
        prop::collection::vec(1usize..200, 1..4).prop_map(Turn::Tools),
    ]
}

fn history(turns: &[Turn]) -> Vec<Message> {
    let mut messages = vec![Message::system("You are a careful agent.")];
    let mut id = 0;
    for turn in turns {
        match turn {
            Turn::User(n) => messages.push(Message::user("question ".repeat(*n))),
            Turn::Text(n) => messages.push(Message::assistant("answer ".repeat(*n))),
            Turn::Tools(sizes) => {
                let calls: Vec<ToolCall> = sizes
                    .iter()
                    .map(|_| {
                        id += 1;
                        ToolCall::new(format!("c{id}"), "read", "{}")
                    })
                    .collect();
                let results: Vec<Message> = calls
                    .iter()
                    .zip(sizes)
                    .map(|(c, n)| Message::tool_result(ToolResult::ok(&c.id, "data ".repeat(*n))))
                    .collect();
                messages.push(Message::assistant_with_calls(None, calls));
                messages.extend(results);
            }
        }
    }
    messages
}

fn total(messages: &[Message]) -> u64 {
    TokenLedger::default().sync(messages, &TiktokenCounter::default())
}

fn check_shape(before: &[Message], after: &[Message]) -> Result<(), TestCaseError> {
    prop_assert!(well_formed(after), "a tool result lost its call");
    prop_assert_eq!(&after[0], &before[0], "the system prompt stays first");
    prop_assert_eq!(after.iter().filter(|m| m.role == Role::System).count(), 1);
    // The newest message always survives.
    prop_assert_eq!(after.last(), before.last());
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 150, ..ProptestConfig::default() })]

    #[test]
    fn sliding_window_keeps_pairs_and_fits_when_possible(turns in prop::collection::vec(turn(), 1..25), budget in 50u64..3_000) {
        let before = history(&turns);
        let mut after = before.clone();
        SlidingWindow::new(budget).trim(&mut after);
        check_shape(&before, &after)?;
        // It only stops above budget when nothing but the system prompt and the last exchange is left.
        if total(&after) > budget {
            let last_exchange_start = after.iter().rposition(|m| m.role != Role::Tool).unwrap();
            prop_assert_eq!(last_exchange_start, 1, "over budget with more than the last exchange left");
        }
    }

    #[test]
    fn keep_ends_keeps_pairs(turns in prop::collection::vec(turn(), 1..25), keep in 1usize..12, budget in 0u64..2_000) {
        let before = history(&turns);
        let mut after = before.clone();
        let counters = Counters::default();
        let config = LoopConfig::default();
        let view = ContextView::new(&counters, &config);
        KeepEnds::new(keep, budget).unwrap().prepare(&mut after, &view);
        check_shape(&before, &after)?;
    }

    #[test]
    fn auto_compaction_keeps_pairs_with_or_without_a_summary(
        turns in prop::collection::vec(turn(), 1..30),
        window in 1_000u64..4_000,
        summary_ok in any::<bool>(),
    ) {
        let before = history(&turns);
        let mut after = before.clone();
        let counters = Counters { turns: 5, ..Counters::default() };
        let config = LoopConfig::default();
        let view = ContextView::new(&counters, &config);
        let mut policy = AutoCompaction::new(AutoCompactionConfig { context_window: window, ..Default::default() });
        if let ContextStep::Summarize { request, .. } = policy.prepare(&mut after, &view) {
            prop_assert!(well_formed(&request.messages));
            let summary = if summary_ok { Ok("A short summary.".to_owned()) } else { Err("timed out".to_owned()) };
            policy.apply_summary(&mut after, summary, &view);
            prop_assert!(total(&after) < total(&before));
        }
        check_shape(&before, &after)?;
    }
}

#[test]
fn the_counter_counts_framing_tool_calls_and_images() {
    let counter = TiktokenCounter::default();
    let call = Message::assistant_with_calls(None, vec![ToolCall::new("1", "read", r#"{"path": "a"}"#)]);
    let expected = 3 + 3 + counter.count_text("read") + counter.count_text(r#"{"path": "a"}"#);
    assert_eq!(counter.count_message(&call), expected);
    let image = Message {
        role: Role::User,
        content: vec![looprail_loop_core::message::ContentPart::Image {
            media_type: "image/png".into(),
            source: "https://x/y.png".into(),
        }],
        internal: None,
    };
    assert_eq!(counter.count_message(&image), 3 + 765);
    let o200k = TiktokenCounter::new(looprail_compaction::Encoding::O200kBase);
    assert!(o200k.count_text("Thé quick brown fox") > 0);
}
