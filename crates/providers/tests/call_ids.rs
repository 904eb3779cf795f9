//! A request shows the provider distinct tool-call ids, each result paired with its own call,
//! even when the provider reused or left out ids (issue 14).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use looprail_loop_core::message::{Message, ToolCall, ToolResult};
use looprail_loop_core::provider::{CallPurpose, ModelRequest};
use looprail_loop_core::tool::{ToolChoice, ToolDefinition};
use looprail_providers::MaxTokensField;

/// Three calls as the engine stores them: its own ids, the server's `call_0` twice and once
/// nothing.
fn conversation() -> Vec<Message> {
    let call = |id: &str, wire: &str| {
        let mut c = ToolCall::new(id, "read", "{}");
        c.wire_id = Some(wire.to_owned());
        c
    };
    vec![
        Message::user("go"),
        Message::assistant_with_calls(None, vec![call("lr-0", "call_0")]),
        Message::tool_result(ToolResult::ok("lr-0", "first")),
        Message::assistant_with_calls(None, vec![call("lr-1", "call_0"), call("lr-2", "")]),
        Message::tool_result(ToolResult::ok("lr-1", "second")),
        Message::tool_result(ToolResult::ok("lr-2", "third")),
    ]
}

/// The `read` tool the conversation calls.
fn tools() -> &'static [ToolDefinition] {
    static TOOLS: std::sync::OnceLock<Vec<ToolDefinition>> = std::sync::OnceLock::new();
    TOOLS.get_or_init(|| {
        vec![ToolDefinition::new("read", "Reads a file.", serde_json::json!({"type": "object"}))]
    })
}

fn request(messages: &[Message]) -> ModelRequest<'_> {
    ModelRequest {
        messages,
        tools: tools(),
        tool_choice: ToolChoice::Auto,
        max_output_tokens: None,
        instruction: None,
        purpose: CallPurpose::Turn,
    }
}

#[test]
fn openai_sees_unique_ids_and_each_result_pairs_with_its_call() {
    let messages = conversation();
    let body =
        looprail_providers::openai::request_body("m", &request(&messages), MaxTokensField::MaxTokens, false);
    let mut calls = Vec::new();
    let mut results = Vec::new();
    for m in body["messages"].as_array().unwrap() {
        for c in m["tool_calls"].as_array().into_iter().flatten() {
            calls.push(c["id"].as_str().unwrap().to_owned());
        }
        if m["role"] == "tool" {
            results.push((
                m["tool_call_id"].as_str().unwrap().to_owned(),
                m["content"].as_str().unwrap().to_owned(),
            ));
        }
    }
    assert_eq!(
        calls,
        ["call_0", "lr-1", "lr-2"],
        "the first keeps the server's id, clashes and blanks are rewritten"
    );
    assert_eq!(
        results,
        [
            ("call_0".into(), "first".into()),
            ("lr-1".into(), "second".into()),
            ("lr-2".into(), "third".into())
        ]
    );
}

#[test]
fn anthropic_sees_unique_ids_and_each_result_pairs_with_its_call() {
    let messages = conversation();
    let body = looprail_providers::anthropic::request_body("m", &request(&messages), 1024, false);
    let blocks: Vec<&serde_json::Value> =
        body["messages"].as_array().unwrap().iter().flat_map(|m| m["content"].as_array().unwrap()).collect();
    let uses: Vec<&str> =
        blocks.iter().filter(|b| b["type"] == "tool_use").map(|b| b["id"].as_str().unwrap()).collect();
    let results: Vec<&str> = blocks
        .iter()
        .filter(|b| b["type"] == "tool_result")
        .map(|b| b["tool_use_id"].as_str().unwrap())
        .collect();
    assert_eq!(uses, ["call_0", "lr-1", "lr-2"]);
    assert_eq!(results, uses);
}

#[test]
fn an_anthropic_request_declaring_no_tools_carries_calls_and_results_as_text() {
    // The API refuses `tool_use` or `tool_result` blocks in a request without tools: a summary
    // request over a history with calls (compaction) declares none.
    let messages = conversation();
    let mut summary = request(&messages);
    summary.tools = &[];
    summary.tool_choice = ToolChoice::None;
    let body = looprail_providers::anthropic::request_body("m", &summary, 1024, false);
    assert!(body.get("tools").is_none() && body.get("tool_choice").is_none());
    let turns = body["messages"].as_array().unwrap();
    let kinds: Vec<&str> = turns
        .iter()
        .flat_map(|m| m["content"].as_array().unwrap())
        .map(|b| b["type"].as_str().unwrap())
        .collect();
    assert!(kinds.iter().all(|k| *k == "text"), "{kinds:?}");
    assert!(turns.windows(2).all(|w| w[0]["role"] != w[1]["role"]), "turns still alternate");
    let text = body.to_string();
    assert!(text.contains("[called read: {}]") && text.contains("[tool result: third]"), "{text}");
}

#[test]
fn an_anthropic_request_drops_text_blocks_of_whitespace_only() {
    // The API refuses them ("text content blocks must contain non-whitespace text"); a
    // model's blank reply echoed back is the usual source.
    let messages =
        [Message::user("go"), Message::assistant("  \n"), Message::user("  "), Message::user("on")];
    let body = looprail_providers::anthropic::request_body("m", &request(&messages), 1024, false);
    let turns = body["messages"].as_array().unwrap();
    let texts: Vec<&str> = turns
        .iter()
        .flat_map(|m| m["content"].as_array().unwrap())
        .map(|b| b["text"].as_str().unwrap())
        .collect();
    assert_eq!(texts, ["go", "on"]);
    assert_eq!(turns.len(), 1, "what is left of the turns merges into one user turn");
}
