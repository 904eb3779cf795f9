//! Each decision path of the gateway's per-request state machine, without I/O: a clean
//! conversation is forwarded untouched, a loop gets the ladder's instruction, then the
//! client's own ask tool forced (or, without one, a final answer), a budget concludes, a new
//! user message starts a new turn, a rewritten history starts over, and the saved state
//! continues exactly where an uninterrupted gate would be.

use looprail_gateway::{ConversationState, Gate, Verdict};
use looprail_loop_core::config::LoopConfig;
use looprail_loop_core::message::{Message, ToolCall, ToolResult};

fn step(history: &mut Vec<Message>, i: usize, query: &str) {
    let id = format!("c{i}");
    let args = serde_json::json!({ "q": query }).to_string();
    history.push(Message::assistant_with_calls(None, vec![ToolCall::new(&id, "search", args)]));
    history.push(Message::tool_result(ToolResult::ok(&id, format!("result for {query}"))));
}

fn start() -> Vec<Message> {
    vec![Message::system("You search."), Message::user("Find the report")]
}

/// Verdicts of a client repeating the same search, one request per step.
fn looping(gate: &Gate, tools: &[String], steps: usize) -> Vec<Verdict> {
    let (mut state, mut history) = (ConversationState::default(), start());
    (0..steps)
        .map(|i| {
            step(&mut history, i, "report");
            gate.observe(&mut state, &history, tools, 0)
        })
        .collect()
}

fn is_clean(verdict: &Verdict) -> bool {
    matches!(verdict, Verdict::Forward { instructions, force_tool: None } if instructions.is_empty())
}

#[test]
fn varied_work_is_forwarded_untouched() {
    let gate = Gate::new(LoopConfig::default(), Default::default());
    let (mut state, mut history) = (ConversationState::default(), start());
    for i in 0..30 {
        step(&mut history, i, &format!("query {i}"));
        let verdict = gate.observe(&mut state, &history, &["search".into()], 0);
        assert!(is_clean(&verdict), "step {i}: {verdict:?}");
    }
    assert_eq!((state.counters.tool_calls, state.seen), (30, history.len()));
}

#[test]
fn a_loop_is_nudged_then_concluded_without_an_ask_tool() {
    let gate = Gate::new(LoopConfig::default(), Default::default());
    let verdicts = looping(&gate, &["search".into()], 20);
    let first_nudge = verdicts.iter().position(|v| !is_clean(v)).expect("the ladder speaks");
    assert!(
        matches!(&verdicts[first_nudge], Verdict::Forward { instructions, .. } if !instructions.is_empty())
    );
    let end = verdicts.iter().position(|v| matches!(v, Verdict::Conclude { .. })).expect("and ends the loop");
    assert!(end > first_nudge);
    let Verdict::Conclude { reason } = &verdicts[end] else { unreachable!() };
    assert!(!reason.is_empty());
}

#[test]
fn with_the_clients_ask_tool_the_ladder_forces_it_instead() {
    let gate = Gate::new(LoopConfig::default(), Default::default());
    let verdicts = looping(&gate, &["search".into(), "ask_human".into()], 20);
    let forced = verdicts
        .iter()
        .position(|v| matches!(v, Verdict::Forward { force_tool: Some(t), .. } if t == "ask_human"))
        .expect("the client's ask tool is forced");
    let without = looping(&gate, &["search".into()], 20);
    assert!(matches!(without[forced], Verdict::Conclude { .. }), "without it, the same step concludes");
}

#[test]
fn a_tool_call_budget_concludes_before_the_next_model_call() {
    let mut config = LoopConfig::default();
    config.budget.tool_call_budget = Some(2);
    let gate = Gate::new(config, Default::default());
    let (mut state, mut history) = (ConversationState::default(), start());
    step(&mut history, 0, "a");
    assert!(is_clean(&gate.observe(&mut state, &history, &[], 0)));
    step(&mut history, 1, "b");
    assert!(matches!(gate.observe(&mut state, &history, &[], 0), Verdict::Conclude { .. }));
}

#[test]
fn a_new_user_message_is_a_new_turn_and_a_rewritten_history_starts_over() {
    let gate = Gate::new(LoopConfig::default(), Default::default());
    let (mut state, mut history) = (ConversationState::default(), start());
    step(&mut history, 0, "a");
    gate.observe(&mut state, &history, &[], 0);
    history.push(Message::assistant_with_calls(Some("Done.".into()), vec![]));
    history.push(Message::user("Now the other report"));
    gate.observe(&mut state, &history, &[], 0);
    assert_eq!((state.counters.user_turns, state.counters.iterations), (2, 0));
    let id = state.id.clone();
    let shorter = start();
    gate.observe(&mut state, &shorter, &[], 0);
    assert_eq!((state.id, state.counters.tool_calls, state.seen), (id, 0, 2));
}

#[test]
fn a_saved_and_restored_state_decides_as_an_uninterrupted_one() {
    let gate = Gate::new(LoopConfig::default(), Default::default());
    let straight = looping(&gate, &["search".into()], 12);
    let (mut state, mut history) = (ConversationState::default(), start());
    let mut resumed = Vec::new();
    for i in 0..12 {
        step(&mut history, i, "report");
        // Through JSON each time, as the store keeps it.
        state = serde_json::from_value(serde_json::to_value(&state).unwrap()).unwrap();
        resumed.push(gate.observe(&mut state, &history, &["search".into()], 0));
    }
    assert_eq!(resumed, straight);
}

/// A gate with the coding-agent profile (the gateway's default) and this soft time limit.
fn agent_gate(soft_secs: u64) -> Gate {
    let mut config = looprail_loop_core::profile::Profile::CodingAgent.config();
    config.budget.soft_time_limit_secs = soft_secs;
    config.budget.hard_time_limit_secs = 0;
    Gate::new(config, Default::default())
}

/// Answers the last step, then a new user message: the next stretch's first request.
fn new_request(history: &mut Vec<Message>, text: &str) {
    history.push(Message::assistant_with_calls(Some("Done.".into()), vec![]));
    history.push(Message::user(text));
}

#[test]
fn time_waiting_for_the_user_is_not_the_next_stretchs() {
    // Issue 34: a one-minute stretch limit, a conversation idle for an hour between requests.
    let gate = agent_gate(60);
    let (mut state, mut history) = (ConversationState::default(), start());
    let minute = 60_000;
    for i in 0..5 {
        step(&mut history, i, &format!("q{i}"));
        assert!(is_clean(&gate.observe(&mut state, &history, &[], i as i64 * 10_000)), "a 40 s stretch");
    }
    new_request(&mut history, "And the other report?");
    let back = 60 * minute; // an hour later
    for i in 5..10 {
        step(&mut history, i, &format!("q{i}"));
        let now = back + (i as i64 - 5) * 10_000;
        assert!(is_clean(&gate.observe(&mut state, &history, &[], now)), "step {i}: not summarised");
    }
    // This stretch goes on past its minute: summarised.
    step(&mut history, 10, "q10");
    let verdict = gate.observe(&mut state, &history, &[], back + minute + 1_000);
    assert!(matches!(&verdict, Verdict::Conclude { reason } if reason.contains("time limit")), "{verdict:?}");
}

#[test]
fn the_budgets_count_each_stretch_and_the_total_counts_everything() {
    // 40 calls a stretch, 100 in all: stretches of 39 pass until the total is spent.
    let mut config = looprail_loop_core::profile::Profile::CodingAgent.config();
    config.budget.tool_call_budget = Some(40);
    config.budget.total.tool_call_budget = Some(100);
    let gate = Gate::new(config, Default::default());
    let (mut state, mut history) = (ConversationState::default(), start());
    let mut calls = 0;
    let concluded = 'stretches: loop {
        for _ in 0..39 {
            step(&mut history, calls, &format!("q{calls}"));
            calls += 1;
            let verdict = gate.observe(&mut state, &history, &[], 0);
            if !is_clean(&verdict) {
                break 'stretches verdict;
            }
        }
        new_request(&mut history, &format!("request after {calls} calls"));
    };
    assert_eq!(calls, 100, "concluded by the total, not by a stretch");
    assert!(matches!(&concluded, Verdict::Conclude { reason } if reason.contains("tool")), "{concluded:?}");
    // Over the run (the task profile's scope), the same 40 would have ended the first stretch.
    let mut config = looprail_loop_core::config::LoopConfig::default();
    config.budget.tool_call_budget = Some(40);
    let gate = Gate::new(config, Default::default());
    let (mut state, mut history) = (ConversationState::default(), start());
    for i in 0..39 {
        step(&mut history, i, &format!("q{i}"));
        assert!(is_clean(&gate.observe(&mut state, &history, &[], 0)));
    }
    new_request(&mut history, "next");
    step(&mut history, 39, "q39");
    assert!(matches!(gate.observe(&mut state, &history, &[], 0), Verdict::Conclude { .. }));
}

#[test]
fn a_looping_stretch_is_still_concluded_by_the_ladder_at_its_usual_call() {
    // The coding-agent profile lifts the caps, not the loop guard: after a long healthy
    // stretch, a loop in the next one is concluded as soon as in a fresh conversation.
    let gate = agent_gate(8 * 3600);
    let fresh = looping(&gate, &["search".into()], 20);
    let fresh_end = fresh.iter().position(|v| matches!(v, Verdict::Conclude { .. })).expect("concluded");
    let (mut state, mut history) = (ConversationState::default(), start());
    for i in 0..120 {
        step(&mut history, i, &format!("distinct query {i}"));
        assert!(is_clean(&gate.observe(&mut state, &history, &["search".into()], 0)));
    }
    new_request(&mut history, "Find the report again");
    let ended = (0..20).position(|i| {
        step(&mut history, 200 + i, "report");
        matches!(gate.observe(&mut state, &history, &["search".into()], 0), Verdict::Conclude { .. })
    });
    assert_eq!(ended, Some(fresh_end), "the same call as in a fresh conversation");
    assert!(fresh_end < 10, "within the ladder's usual bound: {fresh_end}");
}
