//! A reply that falls into repeating one block (issue 35), as each API delivers it: streamed
//! one copy a delta, or whole.

use looprail_gateway::Api;
use serde_json::{Value, json};

/// Copies of the block in the whole reply.
pub const COPIES: usize = 2000;

/// 120 characters with no period of their own.
pub fn block() -> String {
    (0..120u64).map(|i| (b'a' + (i.wrapping_mul(0x9e37_79b9) >> 7) as u8 % 26) as char).collect()
}

fn event(name: &str, data: Value) -> String {
    format!("event: {name}\ndata: {data}\n\n")
}

/// The chanting reply as the API streams it, one copy of the block a delta.
pub fn chant_stream(api: Api) -> Vec<String> {
    let copy = block();
    let mut out = Vec::new();
    match api {
        Api::OpenAi => {
            let chunk = |delta: Value, finish: Value| {
                format!(
                    "data: {}\n\n",
                    json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "m",
                    "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
                )
            };
            out.push(chunk(json!({"role": "assistant", "content": ""}), Value::Null));
            out.extend((0..COPIES).map(|_| chunk(json!({"content": copy}), Value::Null)));
            out.push(chunk(json!({}), json!("stop")));
            out.push("data: [DONE]\n\n".into());
        }
        Api::Anthropic => {
            out.push(event("message_start", json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant",
                "model": "c", "content": [], "stop_reason": null, "stop_sequence": null, "usage": {"input_tokens": 10, "output_tokens": 1}}})));
            out.push(event("content_block_start", json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}})));
            out.extend((0..COPIES).map(|_| {
                event("content_block_delta", json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": copy}}))
            }));
            out.push(event("content_block_stop", json!({"type": "content_block_stop", "index": 0})));
            out.push(event("message_delta", json!({"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": null}, "usage": {"output_tokens": 5}})));
            out.push(event("message_stop", json!({"type": "message_stop"})));
        }
        Api::Responses => {
            let response = json!({"id": "resp_1", "object": "response", "created_at": 1, "status": "in_progress", "model": "m", "output": [],
                "parallel_tool_calls": true, "tool_choice": "auto", "tools": []});
            let item = json!({"type": "message", "id": "msg_1", "status": "in_progress", "role": "assistant", "content": []});
            out.push(event(
                "response.created",
                json!({"type": "response.created", "sequence_number": 0, "response": response}),
            ));
            out.push(event("response.output_item.added", json!({"type": "response.output_item.added", "sequence_number": 1, "output_index": 0, "item": item})));
            out.push(event("response.content_part.added", json!({"type": "response.content_part.added", "sequence_number": 2, "item_id": "msg_1",
                "output_index": 0, "content_index": 0, "part": {"type": "output_text", "text": "", "annotations": []}})));
            out.extend((0..COPIES).map(|k| {
                event("response.output_text.delta", json!({"type": "response.output_text.delta", "sequence_number": 3 + k,
                    "item_id": "msg_1", "output_index": 0, "content_index": 0, "delta": copy, "logprobs": []}))
            }));
        }
    }
    out
}

/// The whole chanting reply, as a complete JSON answer.
pub fn chant_json(api: Api) -> Value {
    let text = block().repeat(COPIES);
    match api {
        Api::OpenAi => json!({"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "m",
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}]}),
        Api::Anthropic => {
            json!({"id": "msg_1", "type": "message", "role": "assistant", "model": "c", "content": [{"type": "text", "text": text}],
            "stop_reason": "end_turn", "stop_sequence": null, "usage": {"input_tokens": 10, "output_tokens": 5}})
        }
        Api::Responses => {
            json!({"id": "resp_1", "object": "response", "created_at": 1, "status": "completed", "model": "m",
            "output": [{"type": "message", "id": "msg_1", "status": "completed", "role": "assistant",
                "content": [{"type": "output_text", "text": text, "annotations": []}]}], "parallel_tool_calls": true, "tool_choice": "auto", "tools": []})
        }
    }
}

/// An upstream whose every reply is the chant, streamed one copy a delta 2 ms apart.
pub async fn chanting_upstream(api: Api) -> looprail_providers::fake::FakeServer {
    use looprail_providers::fake::{FakeServer, Reply};
    FakeServer::responding(move |_| Reply::Sse {
        chunks: chant_stream(api),
        pause: std::time::Duration::from_millis(2),
        break_at_end: false,
    })
    .await
}

/// How each API ends a reply cut at its output limit, as an SDK reports it.
pub fn cut_end(api: Api) -> &'static str {
    match api {
        Api::OpenAi => "length",
        Api::Anthropic => "max_tokens",
        Api::Responses => "max_output_tokens",
    }
}

/// Asserts what a client read of a chanting reply the gateway cut (`{"text", "end"}`): a few
/// copies of the block, the start of the chant, ended as a reply cut at its output limit.
pub fn assert_cut(api: Api, read: &Value) {
    let text = read["text"].as_str().unwrap_or_default();
    let copies = text.len() / block().len();
    assert!((5..=14).contains(&copies), "{api:?}: {copies} copies reached the client: {read}");
    assert!(block().repeat(copies + 1).starts_with(text), "{api:?}: the chant's start, unchanged");
    assert_eq!(read["end"], cut_end(api), "{api:?}: {read}");
}
