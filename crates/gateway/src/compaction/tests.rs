use super::*;

/// An OpenAI request: a system prompt, the task, then `steps` tool calls whose results are
/// `result_bytes` long.
fn body(steps: usize, result_bytes: usize) -> String {
    let mut messages = vec![
        json!({"role": "system", "content": "You search."}),
        json!({"role": "user", "content": "Find it"}),
    ];
    for i in 0..steps {
        let id = format!("call_{i}");
        messages.push(json!({"role": "assistant", "content": null, "tool_calls": [{"id": id, "type": "function", "function": {"name": "search", "arguments": format!("{{\"q\":\"{i}\"}}")}}]}));
        messages.push(json!({"role": "tool", "tool_call_id": id, "content": "x".repeat(result_bytes)}));
    }
    json!({"model": "m", "messages": messages}).to_string()
}

fn settings() -> CompactionSettings {
    // 10,000 tokens: compaction past 28,000 bytes, 12,000 bytes kept verbatim.
    CompactionSettings { context_window: 10_000, ..CompactionSettings::default() }
}

fn plan_for(raw: &str, summary: Option<&Summary>) -> Plan {
    let mut request = Request::parse(Api::OpenAi, raw.as_bytes()).unwrap();
    plan(&settings(), &mut request, summary, raw.len()).unwrap()
}

#[test]
fn a_request_under_the_threshold_is_kept() {
    assert_eq!(plan_for(&body(10, 1_000), None), Plan::Keep);
}

#[test]
fn a_long_request_is_cut_at_an_assistant_turn_keeping_the_recent_share() {
    let raw = body(40, 1_000);
    let Plan::Summarise { from, upto } = plan_for(&raw, None) else { panic!("compacts") };
    assert_eq!(from, 1, "everything after the system prompt may go");
    let mut request = Request::parse(Api::OpenAi, raw.as_bytes()).unwrap();
    assert_eq!(request.message(upto).unwrap()[0].role, Role::Assistant, "no tool result loses its call");
    let kept: usize = (upto..request.len()).map(|i| request.raw_len(i)).sum();
    assert!(kept <= 12_000 && kept > 8_000, "about the verbatim share is kept: {kept}");

    // The next requests reuse the summary while the compacted request fits ...
    let summary = Summary { upto, text: "searched 30 times".into() };
    assert_eq!(plan_for(&body(42, 1_000), Some(&summary)), Plan::Reuse { upto });
    // ... and extend it over the next stretch once it no longer does.
    let Plan::Summarise { from, upto: next } = plan_for(&body(70, 1_000), Some(&summary)) else {
        panic!("extends the summary")
    };
    assert_eq!(from, upto, "only what the summary does not cover yet");
    assert!(next > upto);
}

#[test]
fn a_summary_that_no_longer_fits_the_history_is_not_used() {
    let stale = Summary { upto: 500, text: "from a longer history".into() };
    assert_eq!(plan_for(&body(10, 1_000), Some(&stale)), Plan::Keep);
}

#[test]
fn the_summary_replaces_the_stretch_it_covers_and_the_transcript_is_bounded() {
    let mut value: Value = serde_json::from_str(&body(3, 10)).unwrap();
    apply(&mut value, 1, 4, "found nothing yet");
    let messages = value["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 8 - 3 + 1);
    assert_eq!(messages[0]["role"], "system");
    assert!(messages[1]["content"].as_str().unwrap().starts_with(TAG));
    assert_eq!(messages[2]["role"], "assistant");

    let long: Vec<Message> = (0..100).map(|i| Message::user(format!("{i} {}", "y".repeat(5_000)))).collect();
    let text = transcript(&long, 20_000);
    assert!(text.len() <= 20_000 + 100, "{}", text.len());
    assert!(text.starts_with("(earlier messages omitted)") && text.ends_with("[…]"));
    let body = summary_request(Api::Anthropic, &settings(), "claude", Some("before"), &long[..2]);
    assert_eq!((body["model"].as_str(), body["max_tokens"].as_u64()), (Some("claude"), Some(1_024)));
    assert!(
        body["messages"][0]["content"].as_str().unwrap().contains("Summary of what came before:\nbefore")
    );
    assert!(body.get("tools").is_none());
}
