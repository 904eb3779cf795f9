//! No log makes a reader, or the replay after it, panic: a panic in one file's worker would end
//! the whole audit. The
//! documents generated here are made of the formats' own keys and shapes, nested, with values
//! of every type where each reader expects one, so they reach deep into every reader.

use std::sync::Arc;

use looprail::compaction::{MemoCounter, TiktokenCounter};
use proptest::prelude::*;
use serde_json::{Map, Value};

use super::read_runs;

/// The keys the readers look for, and a few strings they compare values with.
const KEYS: &[&str] = &[
    "messages",
    "role",
    "content",
    "tool_calls",
    "tool_call_id",
    "function",
    "name",
    "arguments",
    "id",
    "type",
    "text",
    "history",
    "trajectory",
    "action",
    "observation",
    "thought",
    "args",
    "cause",
    "source",
    "kind",
    "llm_message",
    "tool_call",
    "tool_name",
    "forgotten_event_ids",
    "summary",
    "attempts",
    "trajectory_format",
    "traj",
    "task_id",
    "trial",
    "simulations",
    "requestor",
    "error",
    "uuid",
    "parentUuid",
    "logicalParentUuid",
    "isSidechain",
    "sessionId",
    "message",
    "subtype",
    "payload",
    "timestamp",
    "call_id",
    "output",
    "usage",
    "input_tokens",
    "extra",
    "actions",
    "instance_id",
    "is_error",
    "tool_use_id",
    "input",
    "system",
    "lc",
    "kwargs",
    "data",
    "additional_kwargs",
    "invalid_tool_calls",
    "status",
    "parts",
    "toolCallId",
    "toolName",
    "state",
    "toolInvocation",
    "value",
    "attachment",
    "prompt",
    "origin",
    "isMeta",
];
const WORDS: &[&str] = &[
    "user",
    "assistant",
    "tool",
    "system",
    "exit",
    "message",
    "run",
    "ActionEvent",
    "ObservationEvent",
    "MessageEvent",
    "Condensation",
    "compact_boundary",
    "response_item",
    "session_meta",
    "function_call",
    "function_call_output",
    "tool_use",
    "tool_result",
    "text",
    "mini-swe-agent-1",
    "```bash\nls\n```",
    "<returncode>1</returncode>",
    "condensation",
    "finish",
    "human",
    "ai",
    "AIMessage",
    "tool-call",
    "tool-result",
    "step-start",
    "error-text",
    "output-error",
    "queued_command",
    "hook_additional_context",
    "task-notification",
    "a",
    "",
];

fn json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        (-3i64..5).prop_map(Value::from),
        prop::sample::select(WORDS).prop_map(Value::from),
        prop::sample::select(KEYS).prop_map(Value::from),
    ];
    leaf.prop_recursive(5, 64, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((prop::sample::select(KEYS), inner), 0..6).prop_map(
                |fields| Value::Object(
                    fields.into_iter().map(|(k, v)| (k.to_owned(), v)).collect::<Map<_, _>>()
                )
            ),
        ]
    })
}

/// One log of each format with its fields filled from `v`: the shape that gets a reader past
/// its detection, with anything where the values are.
fn shaped(format: usize, v: &[Value]) -> String {
    use serde_json::json;
    let lines = |lines: Vec<Value>| lines.iter().map(Value::to_string).collect::<Vec<_>>().join("\n");
    match format {
        0 => lines(vec![
            json!({"type": "user", "uuid": v[0], "parentUuid": v[1], "sessionId": "s", "message": {"role": "user", "content": v[2]}}),
            json!({"type": "assistant", "uuid": v[3], "parentUuid": v[4], "sessionId": "s", "isSidechain": v[5],
                "message": {"id": v[6], "role": "assistant", "content": v[7], "usage": v[8]}}),
            json!({"type": "system", "subtype": "compact_boundary", "uuid": v[9], "parentUuid": null, "logicalParentUuid": v[10]}),
            json!({"type": "user", "uuid": v[11], "parentUuid": v[0], "isCompactSummary": true, "message": {"role": "user", "content": v[2]}}),
            json!({"type": "attachment", "uuid": v[3], "parentUuid": v[11], "origin": v[4], "attachment": v[5]}),
            json!({"type": "attachment", "attachment": {"type": "queued_command", "prompt": v[6], "origin": v[7], "isMeta": v[8]}}),
            json!({"type": "attachment", "attachment": {"type": "hook_additional_context", "content": v[9]}}),
        ]),
        1 => lines(vec![
            json!({"timestamp": "t", "type": "session_meta", "payload": v[0]}),
            json!({"type": "response_item", "payload": {"type": "function_call", "name": v[1], "arguments": v[2], "call_id": v[3]}}),
            json!({"type": "response_item", "payload": {"type": "function_call_output", "call_id": v[3], "output": v[4]}}),
            json!({"type": "response_item", "payload": {"type": "message", "role": v[5], "content": v[6]}}),
            json!({"type": "event_msg", "payload": {"type": "token_count", "info": v[7]}}),
            json!({"type": "compacted", "payload": v[8]}),
        ]),
        2 => json!({"instance_id": v[0], "history": [
            {"id": 0, "source": "user", "action": "message", "args": v[1]},
            {"id": v[2], "source": "agent", "action": "run", "args": v[3], "tool_call_metadata": v[4]},
            {"id": 2, "observation": v[5], "cause": v[2], "content": v[6]},
            {"id": 3, "action": "condensation", "args": v[7]},
            [v[8], v[9]],
        ]})
        .to_string(),
        3 => json!({"instance_id": "i", "history": [
            {"kind": "SystemPromptEvent", "system_prompt": v[0]},
            {"kind": "MessageEvent", "source": v[1], "llm_message": v[2], "extended_content": v[3]},
            {"kind": "ActionEvent", "id": v[4], "tool_call": v[5], "tool_call_id": v[6], "llm_response_id": v[7], "thought": v[8]},
            {"kind": "ObservationEvent", "tool_call_id": v[6], "observation": v[9]},
            {"kind": "Condensation", "forgotten_event_ids": v[10], "summary": v[11]},
        ]})
        .to_string(),
        4 => json!({"trajectory": [{"action": v[0], "observation": v[1], "thought": v[2]}], "history": v[3],
            "attempts": [{"trajectory": v[4], "history": v[5]}]})
        .to_string(),
        5 => json!({"trajectory_format": "mini-swe-agent-1", "messages": [
            {"role": "user", "content": v[0]},
            {"role": "assistant", "content": v[1], "extra": v[2], "tool_calls": v[3]},
            {"role": v[4], "content": v[5], "tool_call_id": v[6]},
        ]})
        .to_string(),
        6 => json!([{"task_id": v[0], "trial": v[1], "traj": [{"role": "user", "content": v[2]}, v[3]]}]).to_string(),
        10 => json!({"sessionId": "s", "messages": [
            {"id": v[0], "type": "user", "content": v[1]},
            {"id": v[2], "type": "gemini", "content": v[3], "toolCalls": v[4]},
            {"id": v[0], "type": "gemini", "content": v[5], "toolCalls": [{"id": v[6], "name": v[7], "args": v[8], "status": v[9], "result": v[10], "resultDisplay": v[11]}]},
        ]})
        .to_string(),
        11 => json!({"systemInstruction": v[0], "contents": [
            {"role": "user", "parts": [{"text": v[1]}]},
            {"role": "model", "parts": [{"functionCall": {"name": v[2], "args": v[3], "id": v[4]}}, v[5]]},
            {"role": "user", "parts": [{"functionResponse": {"name": v[2], "id": v[6], "response": v[7]}}, v[8]]},
        ]})
        .to_string(),
        9 => lines(vec![
            json!({"type": "thread.started", "thread_id": v[0]}),
            json!({"type": "turn.started"}),
            json!({"type": "item.completed", "item": {"id": v[1], "type": "command_execution", "command": v[2], "aggregated_output": v[3], "exit_code": v[4], "status": v[5]}}),
            json!({"type": "item.completed", "item": {"id": v[6], "type": "mcp_tool_call", "server": v[7], "tool": v[8], "arguments": v[9], "result": v[10], "error": v[11]}}),
        ]),
        7 => json!({"simulations": [{"task_id": v[0], "messages": [
            {"role": "assistant", "content": v[1], "tool_calls": v[2]},
            {"role": "tool", "id": v[3], "error": v[4], "requestor": v[5], "content": v[6]},
        ]}]})
        .to_string(),
        12 => json!({"messages": [
            {"type": "human", "content": v[0]},
            {"type": "ai", "content": v[1], "tool_calls": v[2], "invalid_tool_calls": v[3], "additional_kwargs": v[4]},
            {"type": "tool", "data": {"content": v[5], "tool_call_id": v[6], "status": v[7]}},
            {"lc": 1, "type": "constructor", "id": ["langchain", v[8]], "kwargs": v[9]},
            {"type": "function", "content": v[10], "name": v[11]},
        ]})
        .to_string(),
        13 => json!({"messages": [
            {"role": "user", "parts": v[0]},
            {"role": "assistant", "parts": [{"type": "step-start"}, {"type": v[1], "toolCallId": v[2], "state": v[3], "input": v[4], "output": v[5]}, v[6]]},
            {"role": "assistant", "content": [{"type": "tool-call", "toolCallId": v[7], "toolName": v[8], "input": v[9]}]},
            {"role": "tool", "content": [{"type": "tool-result", "toolCallId": v[7], "output": v[10], "result": v[11]}]},
        ]})
        .to_string(),
        _ => json!({"messages": [
            {"role": "user", "content": v[0]},
            {"role": v[1], "content": v[2], "tool_calls": v[3], "tool_call_id": v[4]},
        ], "system": v[5]})
        .to_string(),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, ..ProptestConfig::default() })]

    /// A document, or JSONL of several, is read or refused: never a panic.
    #[test]
    fn no_document_makes_a_reader_panic(documents in prop::collection::vec(json(), 1..4)) {
        let one = documents[0].to_string();
        let _ = read_runs(&one);
        let lines: Vec<String> = documents.iter().map(Value::to_string).collect();
        let _ = read_runs(&lines.join("\n"));
    }
}

proptest! {
    // Each case replays what it reads, counting tokens: fewer cases.
    #![proptest_config(ProptestConfig { cases: 1000, ..ProptestConfig::default() })]

    /// Every format's shape, with anything in its fields, is read or refused: never a panic.
    #[test]
    fn no_log_of_a_known_shape_makes_its_reader_panic(
        format in 0usize..14,
        values in prop::collection::vec(json(), 12),
    ) {
        // What a reader returns goes through the whole replay too (guards, budgets, the
        // compaction simulation): nothing there panics on it either.
        if let Ok(file) = read_runs(&shaped(format, &values)) {
            let config = looprail::LooprailConfig::default();
            let counter = Arc::new(MemoCounter::new(Arc::new(TiktokenCounter::default())));
            for run in file.runs {
                let _ = super::super::simulate::run("fuzz", run.messages, run.logged_peak, &run.timeline, &config, &counter);
            }
        }
    }
}
