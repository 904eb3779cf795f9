//! A complete answer holding only a text, in each API's format: the deterministic final answer
//! (F11) the gateway gives when it concluded a conversation and the upstream answered with tool
//! calls anyway (some servers ignore `tool_choice: none`), or could not answer at all.

use serde_json::{Value, json};

use super::Api;

/// A complete, text-only answer of `model` saying `text` (finished normally, no tokens counted).
///
/// ```
/// use looprail_gateway::Api;
/// use looprail_gateway::wire::final_text::text_reply;
///
/// let answer = text_reply(Api::Anthropic, "claude-sonnet-4-5", "I stopped here.");
/// assert_eq!((answer["stop_reason"].as_str(), answer["content"][0]["text"].as_str()), (Some("end_turn"), Some("I stopped here.")));
/// let message = Api::OpenAi.reply_message(&text_reply(Api::OpenAi, "gpt-4o", "Done.")).unwrap();
/// assert_eq!((message.joined_text().as_deref(), message.tool_calls().count()), (Some("Done."), 0));
/// ```
pub fn text_reply(api: Api, model: &str, text: &str) -> Value {
    text_reply_with_usage(api, model, text, (0, 0))
}

/// [`text_reply`] carrying the tokens an upstream spent on the answer it replaces (`input`,
/// `output`), so the conversation's budget counts what was really spent.
pub fn text_reply_with_usage(api: Api, model: &str, text: &str, (input, output): (u64, u64)) -> Value {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let id = format!("looprail-{now}");
    match api {
        Api::OpenAi => json!({"id": format!("chatcmpl-{id}"), "object": "chat.completion", "created": now,
            "model": model, "choices": [{"index": 0, "finish_reason": "stop",
                "message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": input, "completion_tokens": output, "total_tokens": input + output}}),
        Api::Anthropic => json!({"id": format!("msg_{id}"), "type": "message", "role": "assistant",
            "model": model, "content": [{"type": "text", "text": text}], "stop_reason": "end_turn",
            "stop_sequence": null, "usage": {"input_tokens": input, "output_tokens": output}}),
        Api::Responses => json!({"id": format!("resp_{id}"), "object": "response", "created_at": now,
            "status": "completed", "model": model, "output": [{"type": "message", "id": format!("msg_{id}"),
                "status": "completed", "role": "assistant",
                "content": [{"type": "output_text", "text": text, "annotations": []}]}],
            "parallel_tool_calls": true, "tool_choice": "none", "tools": [],
            "usage": {"input_tokens": input, "output_tokens": output, "total_tokens": input + output}}),
    }
}
