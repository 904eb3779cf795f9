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
    apply(Api::OpenAi, &mut value, 1, 4, "found nothing yet");
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

/// A Responses request: a developer message, the task, then `steps` replies of a reasoning
/// item and two calls, each answered by two outputs of `result_bytes`.
fn responses_body(steps: usize, result_bytes: usize) -> String {
    let mut input = vec![
        json!({"type": "message", "role": "developer", "content": "You search."}),
        json!({"role": "user", "content": "Find it"}),
    ];
    for i in 0..steps {
        input.push(
            json!({"type": "reasoning", "id": format!("rs_{i}"), "summary": [], "encrypted_content": "e"}),
        );
        for c in 0..2 {
            input.push(json!({"type": "function_call", "id": format!("fc_{i}_{c}"), "call_id": format!("call_{i}_{c}"),
                "name": "search", "arguments": format!("{{\"q\":\"{i}\"}}")}));
        }
        for c in 0..2 {
            input.push(json!({"type": "function_call_output", "call_id": format!("call_{i}_{c}"), "output": "x".repeat(result_bytes)}));
        }
    }
    json!({"model": "m", "instructions": "Be brief.", "input": input}).to_string()
}

#[test]
fn a_responses_conversation_is_cut_before_a_replys_first_item_and_summarised_as_an_input_item() {
    let raw = responses_body(40, 500);
    let mut request = Request::parse(Api::Responses, raw.as_bytes()).unwrap();
    assert_eq!(leading_system(&mut request).unwrap(), 1, "the developer message leads");
    let Plan::Summarise { from, upto } = plan(&settings(), &mut request, None, raw.len()).unwrap() else {
        panic!("compacts")
    };
    assert_eq!(from, 1);
    let mut value: Value = serde_json::from_str(&raw).unwrap();
    let items = value["input"].as_array().unwrap();
    assert_eq!(items[upto]["type"], "reasoning", "the reasoning item stays with its calls");
    // No item of a reply is a place to cut; the first of each is.
    let starts: Vec<bool> = (2..7).map(|i| request.starts_reply(i).unwrap()).collect();
    assert_eq!(starts, [true, false, false, false, false]);

    apply(Api::Responses, &mut value, 1, upto, "searched a lot");
    let items = value["input"].as_array().unwrap();
    assert_eq!(items[0]["role"], "developer");
    assert_eq!((items[1]["type"].as_str(), items[1]["role"].as_str()), (Some("message"), Some("user")));
    assert!(items[1]["content"][0]["text"].as_str().unwrap().starts_with(TAG));
    // Every output answers a call still in the request.
    let calls: Vec<&Value> =
        items.iter().filter(|i| i["type"] == "function_call").map(|i| &i["call_id"]).collect();
    for output in items.iter().filter(|i| i["type"] == "function_call_output") {
        assert!(calls.contains(&&output["call_id"]), "{output}");
    }
    let body = summary_request(Api::Responses, &settings(), "gpt-x", None, &[Message::user("hi")]);
    assert_eq!((body["store"].as_bool(), body["input"][0]["role"].as_str()), (Some(false), Some("user")));
    assert!(body.get("messages").is_none() && body.get("max_tokens").is_none());
}

#[test]
fn responses_items_are_the_models_or_the_clients_by_type_and_role() {
    use crate::wire::responses::{ItemKind, is_model_item};
    let model = |item: &str| is_model_item(&serde_json::from_str::<ItemKind<'_>>(item).unwrap());
    for item in [
        r#"{"type": "message", "role": "assistant", "content": []}"#,
        r#"{"role": "assistant", "content": "hi"}"#,
        r#"{"type": "reasoning", "summary": []}"#,
        r#"{"type": "function_call", "call_id": "c"}"#,
        r#"{"type": "local_shell_call", "call_id": "c"}"#,
        r#"{"type": "web_search_call", "id": "ws"}"#,
        r#"{"type": "item_reference", "id": "msg_1"}"#,
    ] {
        assert!(model(item), "{item}");
    }
    for item in [
        r#"{"role": "user", "content": "hi"}"#,
        r#"{"type": "message", "role": "developer", "content": "x"}"#,
        r#"{"type": "function_call_output", "call_id": "c", "output": "ok"}"#,
        r#"{"type": "computer_call_output", "call_id": "c"}"#,
        r#"{"type": "mcp_approval_response", "approve": true}"#,
        r#"{"content": "no type, no role"}"#,
    ] {
        assert!(!model(item), "{item}");
    }
}
