//! The wire formats the gateway speaks, each as plain functions over the request and
//! response JSON: read a request's conversation into looprail messages, change what the
//! gateway changes (an added instruction, a forced tool, the tool choice `none`), and turn a complete
//! upstream response into the client's format, streamed or not.

use looprail_loop_core::message::Message;
use serde_json::Value;

pub mod anthropic;
pub(crate) mod anthropic_message;
pub mod cut;
pub mod final_text;
pub mod openai;
pub(crate) mod openai_message;
pub mod responses;

/// The tag that starts every text the gateway adds to a conversation, so a copy that comes
/// back is recognised and never taken for the user's own words.
pub const TAG: &str = "[looprail]";

/// Which API a request came in on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Api {
    /// OpenAI Chat Completions (`POST /v1/chat/completions`).
    OpenAi,
    /// Anthropic Messages (`POST /v1/messages`).
    Anthropic,
    /// OpenAI Responses (`POST /v1/responses`), on the OpenAI upstream.
    Responses,
}

impl Api {
    /// The conversation of a request, as looprail messages (system prompt first).
    pub fn messages(self, body: &Value) -> Result<Vec<Message>, String> {
        match self {
            Api::OpenAi => openai::messages(body),
            Api::Anthropic => anthropic::messages(body),
            Api::Responses => responses::messages(body),
        }
    }

    /// One wire message (`messages[i]`) as looprail messages: one, or on Anthropic a user
    /// turn's tool results each as a tool message and then its text.
    pub fn message(self, i: usize, message: &Value) -> Result<Vec<Message>, String> {
        match self {
            Api::OpenAi => openai::message(i, message).map(|m| vec![m]),
            Api::Responses => responses::message(i, message),
            Api::Anthropic => {
                let mut out = Vec::with_capacity(1);
                anthropic::message(i, message, &mut out)?;
                Ok(out)
            }
        }
    }

    /// The name the API goes by in fingerprints and logs.
    pub fn name(self) -> &'static str {
        match self {
            Api::OpenAi => "openai",
            Api::Anthropic => "anthropic",
            Api::Responses => "responses",
        }
    }

    /// Adds `text` (tagged) for the model to read before its next step.
    pub fn add_instruction(self, body: &mut Value, text: &str) {
        let text = format!("{TAG} {text}");
        match self {
            Api::OpenAi => openai::add_instruction(body, &text),
            Api::Anthropic => anthropic::add_instruction(body, &text),
            Api::Responses => responses::add_instruction(body, &text),
        }
    }

    /// Makes the next reply call tool `name`. Not on an Anthropic request that enables
    /// extended thinking: the API refuses a forced tool with thinking on, so there the
    /// instruction that comes with it does the asking alone.
    pub fn force_tool(self, body: &mut Value, name: &str) {
        if self == Api::Anthropic && thinking_enabled(body) {
            return;
        }
        body["tool_choice"] = match self {
            Api::OpenAi => serde_json::json!({ "type": "function", "function": { "name": name } }),
            Api::Anthropic => serde_json::json!({ "type": "tool", "name": name }),
            Api::Responses => serde_json::json!({ "type": "function", "name": name }),
        };
    }

    /// Makes the reply text only, sent whole, not streamed. The tools stay declared, with the
    /// tool choice `none`: Anthropic refuses a history holding `tool_use` or `tool_result`
    /// blocks without them, and the prompt's cached prefix holds them.
    pub fn text_only(self, body: &mut Value) {
        let Some(object) = body.as_object_mut() else { return };
        for key in ["stream", "stream_options", "parallel_tool_calls"] {
            object.remove(key);
        }
        if object.get("tools").and_then(Value::as_array).is_some_and(|tools| !tools.is_empty()) {
            let none = match self {
                Api::Anthropic => serde_json::json!({ "type": "none" }),
                Api::OpenAi | Api::Responses => serde_json::json!("none"),
            };
            object.insert("tool_choice".to_owned(), none);
        } else {
            // A tool choice without tools is refused by every API.
            object.remove("tools");
            object.remove("tool_choice");
        }
    }

    /// The assistant message of a complete response, as a looprail message.
    pub fn reply_message(self, response: &Value) -> Option<Message> {
        match self {
            Api::OpenAi => openai::reply_message(response),
            Api::Anthropic => anthropic::reply_message(response),
            Api::Responses => responses::reply_message(response),
        }
    }

    /// `(input, output)` tokens a complete response reports.
    pub fn usage(self, response: &Value) -> (u64, u64) {
        let (input, output) = match self {
            Api::OpenAi => ("prompt_tokens", "completion_tokens"),
            Api::Anthropic | Api::Responses => ("input_tokens", "output_tokens"),
        };
        let usage = response.get("usage");
        let read = |key: &str| usage.and_then(|u| u.get(key)).and_then(Value::as_u64).unwrap_or(0);
        (read(input), read(output))
    }

    /// A complete response as the client's event stream.
    pub fn to_stream(self, response: &Value, include_usage: bool) -> String {
        match self {
            Api::OpenAi => openai::to_stream(response, include_usage),
            Api::Anthropic => anthropic::to_stream(response),
            Api::Responses => responses::to_stream(response),
        }
    }

    /// An error body in the API's own format.
    pub fn error(self, kind: &str, message: &str) -> Value {
        match self {
            Api::OpenAi | Api::Responses => {
                serde_json::json!({ "error": { "message": message, "type": kind, "code": null } })
            }
            Api::Anthropic => {
                serde_json::json!({ "type": "error", "error": { "type": kind, "message": message } })
            }
        }
    }

    /// The event that ends a relayed stream that broke, in the API's own format.
    pub fn stream_error(self, message: &str) -> String {
        match self {
            Api::OpenAi => format!("data: {}\n\n", self.error("api_error", message)),
            Api::Anthropic => format!("event: error\ndata: {}\n\n", self.error("api_error", message)),
            Api::Responses => {
                let body = serde_json::json!({ "type": "error", "code": "api_error", "message": message, "param": null });
                format!("event: error\ndata: {body}\n\n")
            }
        }
    }
}

/// Whether an Anthropic request turns extended thinking on (`thinking.type` other than
/// `disabled`).
fn thinking_enabled(body: &Value) -> bool {
    body.pointer("/thinking/type").and_then(Value::as_str).is_some_and(|kind| kind != "disabled")
}

/// The text of a message content that is a string or a list of text parts.
pub(crate) fn text_of(content: &Value) -> String {
    match content {
        Value::String(text) => text.clone(),
        Value::Array(parts) => parts.iter().filter_map(|p| p["text"].as_str()).collect::<Vec<_>>().join("\n"),
        _ => String::new(),
    }
}

/// [`text_of`] for a content read without a tree (`None`: absent or `null`).
pub(crate) fn text_of_field(content: Option<looprail_providers::fields::Field<'_>>) -> String {
    use looprail_providers::fields::Field;
    match content {
        Some(Field::Text(text)) => text.into_owned(),
        Some(Field::Json(value)) => text_of(&value),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use looprail_loop_core::message::Role;
    use serde_json::json;

    #[test]
    fn a_text_only_request_keeps_its_tools_with_the_choice_none_or_declares_none_at_all() {
        let mut anthropic = json!({"model": "c", "stream": true, "tools": [{"name": "read"}],
            "tool_choice": {"type": "any"}, "messages": []});
        Api::Anthropic.text_only(&mut anthropic);
        assert_eq!(anthropic["tool_choice"], json!({"type": "none"}));
        assert!(anthropic["tools"].is_array() && anthropic.get("stream").is_none());
        for api in [Api::OpenAi, Api::Responses] {
            let mut body = json!({"tools": [{"type": "function", "name": "ls"}], "parallel_tool_calls": true,
                "stream": true, "stream_options": {"include_usage": true}});
            api.text_only(&mut body);
            assert_eq!(body, json!({"tools": [{"type": "function", "name": "ls"}], "tool_choice": "none"}));
        }
        // No tools (or an empty list): no tool choice either, which every API would refuse.
        let mut bare = json!({"tools": [], "tool_choice": "auto", "messages": []});
        Api::OpenAi.text_only(&mut bare);
        assert_eq!(bare, json!({"messages": []}));
    }

    #[test]
    fn an_anthropic_system_message_among_the_messages_is_context() {
        // Claude Code 2.1 sends its environment as a system message after the first user turn.
        let body = json!({"system": [{"type": "text", "text": "You are Claude Code."}], "messages": [
            {"role": "user", "content": "Fix the build"},
            {"role": "system", "content": [{"type": "text", "text": "# Environment", "cache_control": {"type": "ephemeral"}}]},
            {"role": "system", "content": "Platform: linux"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "make"}}]},
        ]});
        let read = Api::Anthropic.messages(&body).unwrap();
        let roles: Vec<Role> = read.iter().map(|m| m.role).collect();
        assert_eq!(roles, [Role::System, Role::User, Role::System, Role::System, Role::Assistant]);
        assert_eq!(read[2].joined_text().as_deref(), Some("# Environment"));
        assert!(
            Api::Anthropic.messages(&json!({"messages": [{"role": "wizard", "content": "hi"}]})).is_err()
        );
    }

    #[test]
    fn text_beside_tool_results_and_reminders_alone_are_context_not_a_new_request() {
        // Claude Code sends its reminders (and hooks their feedback) in the user turn that
        // carries tool results: the agent's stretch goes on.
        let body = json!({"messages": [
            {"role": "user", "content": "Fix the build"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "make"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"},
                {"type": "text", "text": "<system-reminder>The todo list is empty.</system-reminder>"}]},
            {"role": "user", "content": [{"type": "text", "text": "<system-reminder>a</system-reminder>\n<system-reminder>b</system-reminder>"}]},
            {"role": "user", "content": [{"type": "text", "text": "<system-reminder>a</system-reminder> Now also fix the docs"}]},
        ]});
        let roles: Vec<Role> = Api::Anthropic.messages(&body).unwrap().iter().map(|m| m.role).collect();
        assert_eq!(roles, [Role::User, Role::Assistant, Role::Tool, Role::System, Role::System, Role::User]);
    }

    #[test]
    fn an_anthropic_reply_streams_every_block_in_its_place_thinking_included() {
        // A final answer fetched whole with thinking on starts with signed thinking blocks; a
        // client rebuilds the message by block index, so none may be skipped.
        let reply = json!({"id": "msg_1", "type": "message", "role": "assistant", "model": "c",
            "content": [{"type": "thinking", "thinking": "Look again.", "signature": "sig_1"},
                {"type": "redacted_thinking", "data": "EmwK"},
                {"type": "text", "text": "Nothing found."}],
            "stop_reason": "end_turn", "stop_sequence": null, "usage": {"input_tokens": 5, "output_tokens": 3}});
        let stream = Api::Anthropic.to_stream(&reply, false);
        let events: Vec<Value> = stream
            .lines()
            .filter_map(|l| l.strip_prefix("data: "))
            .map(|d| serde_json::from_str(d).unwrap())
            .collect();
        let started: Vec<(u64, Value)> = events
            .iter()
            .filter(|e| e["type"] == "content_block_start")
            .map(|e| (e["index"].as_u64().unwrap(), e["content_block"]["type"].clone()))
            .collect();
        assert_eq!(started, [(0, json!("thinking")), (1, json!("redacted_thinking")), (2, json!("text"))]);
        let deltas: Vec<&Value> =
            events.iter().filter(|e| e["type"] == "content_block_delta").map(|e| &e["delta"]).collect();
        assert_eq!(deltas[0], &json!({"type": "thinking_delta", "thinking": "Look again."}));
        assert_eq!(deltas[1], &json!({"type": "signature_delta", "signature": "sig_1"}));
        assert_eq!(deltas[2], &json!({"type": "text_delta", "text": "Nothing found."}));
        let whole = events.iter().find(|e| e["index"] == 1 && e["type"] == "content_block_start").unwrap();
        assert_eq!(whole["content_block"]["data"], "EmwK", "a redacted block comes whole");
    }

    #[test]
    fn a_tool_is_not_forced_on_an_anthropic_request_that_thinks() {
        let mut thinking = json!({"thinking": {"type": "enabled", "budget_tokens": 2048}});
        Api::Anthropic.force_tool(&mut thinking, "ask_human");
        assert!(thinking.get("tool_choice").is_none(), "Anthropic refuses a forced tool with thinking on");
        let mut plain = json!({"thinking": {"type": "disabled"}});
        Api::Anthropic.force_tool(&mut plain, "ask_human");
        assert_eq!(plain["tool_choice"], json!({"type": "tool", "name": "ask_human"}));
        let mut openai = json!({});
        Api::OpenAi.force_tool(&mut openai, "ask_human");
        assert_eq!(openai["tool_choice"]["function"]["name"], "ask_human");
    }

    #[test]
    fn a_reply_and_its_tokens_are_read_from_each_apis_answer() {
        let openai = json!({"id": "c1", "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
            "role": "assistant", "content": "Looking.", "tool_calls": [{"id": "call_1", "type": "function",
            "function": {"name": "search", "arguments": "{\"q\":\"x\"}"}}]}}],
            "usage": {"prompt_tokens": 12, "completion_tokens": 7}});
        let anthropic = json!({"id": "m1", "type": "message", "role": "assistant", "content": [
            {"type": "text", "text": "Looking."},
            {"type": "tool_use", "id": "call_1", "name": "search", "input": {"q": "x"}}],
            "usage": {"input_tokens": 12, "output_tokens": 7}});
        // A compatible server that leaves out the role: its content is the assistant's all the same.
        let mut roleless = anthropic.clone();
        roleless.as_object_mut().unwrap().remove("role");
        for (api, answer) in
            [(Api::OpenAi, &openai), (Api::Anthropic, &anthropic), (Api::Anthropic, &roleless)]
        {
            let reply = api.reply_message(answer).unwrap();
            assert_eq!(reply.role, Role::Assistant);
            assert_eq!(reply.joined_text().as_deref(), Some("Looking."));
            let calls: Vec<(&str, &str)> =
                reply.tool_calls().map(|c| (c.id.as_str(), c.name.as_str())).collect();
            assert_eq!(calls, [("call_1", "search")]);
            assert_eq!(api.usage(answer), (12, 7));
        }
        // No usage, or no reply in it: nothing counted, nothing read.
        assert_eq!(Api::OpenAi.usage(&json!({"usage": null})), (0, 0));
        assert!(Api::OpenAi.reply_message(&json!({"choices": []})).is_none());
        assert!(Api::Anthropic.reply_message(&json!({"role": "assistant", "content": 3})).is_none());
    }
}
