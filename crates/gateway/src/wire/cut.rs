//! A reply cut for repeating itself (B14), in each API's wire format: a complete reply's JSON
//! rewritten to the text kept, and the events that end a relayed stream cut short. Both say
//! the reply was cut the way each API says its output limit cut it (`finish_reason: length`,
//! `stop_reason: max_tokens`, a Responses reply `incomplete` for `max_output_tokens`), so an SDK
//! reads a complete, well-formed reply.

use serde_json::{Value, json};

use super::Api;

/// What a relayed stream showed of itself so far: what the events that end it refer to.
#[derive(Debug, Default, Clone)]
pub struct StreamSoFar {
    /// The reply's id (a chunk's `id`, `message_start`'s message id).
    pub id: Option<String>,
    /// The model named.
    pub model: Option<String>,
    /// A chunk's `created`.
    pub created: Option<Value>,
    /// Anthropic: the content block started and not stopped.
    pub open_block: Option<u64>,
    /// Responses: the response `response.created` carried.
    pub response: Option<Value>,
    /// Responses: the output item open (added, not done), its output index and content index.
    pub item: Option<(Value, u64, u64)>,
    /// Responses: the last sequence number seen.
    pub sequence: Option<u64>,
    /// The text the client received.
    pub text: String,
}

impl StreamSoFar {
    /// Reads one event of the stream (JSON is parsed only for the events that matter here).
    pub fn observe(&mut self, api: Api, name: &str, data: &str) {
        let wanted = match api {
            Api::OpenAi => self.id.is_none(),
            Api::Anthropic => matches!(name, "message_start" | "content_block_start" | "content_block_stop"),
            Api::Responses => matches!(
                name,
                "response.created"
                    | "response.output_item.added"
                    | "response.content_part.added"
                    | "response.output_item.done"
            ),
        };
        if !wanted && api != Api::Responses {
            return;
        }
        if !wanted {
            // Every Responses event counts its sequence.
            if let Some(at) = data.find("\"sequence_number\":") {
                let digits: String =
                    data[at + 18..].trim_start().chars().take_while(char::is_ascii_digit).collect();
                self.sequence = digits.parse().ok().or(self.sequence);
            }
            return;
        }
        let Ok(event) = serde_json::from_str::<Value>(data) else { return };
        let text = |v: &Value| v.as_str().map(str::to_owned);
        match (api, name) {
            (Api::OpenAi, _) => {
                self.id = text(&event["id"]);
                self.model = text(&event["model"]);
                self.created = event.get("created").cloned();
            }
            (Api::Anthropic, "message_start") => {
                self.id = text(&event["message"]["id"]);
                self.model = text(&event["message"]["model"]);
            }
            (Api::Anthropic, "content_block_start") => self.open_block = event["index"].as_u64(),
            (Api::Anthropic, _) => self.open_block = None,
            (Api::Responses, "response.created") => self.response = event.get("response").cloned(),
            (Api::Responses, "response.output_item.added") => {
                let index = event["output_index"].as_u64().unwrap_or(0);
                self.item = Some((event["item"].clone(), index, 0));
            }
            (Api::Responses, "response.content_part.added") => {
                if let Some(item) = &mut self.item {
                    item.2 = event["content_index"].as_u64().unwrap_or(0);
                }
            }
            (Api::Responses, _) => self.item = None,
        }
        if api == Api::Responses {
            self.sequence = event["sequence_number"].as_u64().or(self.sequence);
        }
    }

    /// The events that end the stream now, as the API ends a reply its output limit cut.
    pub fn end(&self, api: Api) -> String {
        match api {
            Api::OpenAi => {
                let chunk = json!({"id": self.id.clone().unwrap_or_else(|| "chatcmpl-looprail".into()),
                    "object": "chat.completion.chunk", "created": self.created.clone().unwrap_or(json!(0)),
                    "model": self.model.clone().unwrap_or_default(),
                    "choices": [{"index": 0, "delta": {}, "finish_reason": "length"}]});
                format!("data: {chunk}\n\ndata: [DONE]\n\n")
            }
            Api::Anthropic => {
                let mut out = String::new();
                if let Some(index) = self.open_block {
                    let stop = json!({"type": "content_block_stop", "index": index});
                    out.push_str(&format!("event: content_block_stop\ndata: {stop}\n\n"));
                }
                let delta = json!({"type": "message_delta", "delta": {"stop_reason": "max_tokens", "stop_sequence": null},
                    "usage": {"output_tokens": 0}});
                out.push_str(&format!("event: message_delta\ndata: {delta}\n\n"));
                out.push_str("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n");
                out
            }
            Api::Responses => self.responses_end(),
        }
    }

    fn responses_end(&self) -> String {
        let mut sequence = self.sequence.map_or(0, |s| s + 1);
        let mut next = || {
            sequence += 1;
            sequence - 1
        };
        let mut out = String::new();
        let mut event = |name: &str, mut body: Value| {
            body["type"] = json!(name);
            body["sequence_number"] = json!(next());
            out.push_str(&format!("event: {name}\ndata: {body}\n\n"));
        };
        let mut output = Vec::new();
        if let Some((item, output_index, content_index)) = &self.item {
            let item_id = item["id"].clone();
            let part = json!({"type": "output_text", "text": self.text, "annotations": []});
            if item["type"] == "message" {
                event(
                    "response.output_text.done",
                    json!({"item_id": item_id, "output_index": output_index,
                    "content_index": content_index, "text": self.text, "logprobs": []}),
                );
                event(
                    "response.content_part.done",
                    json!({"item_id": item_id, "output_index": output_index,
                    "content_index": content_index, "part": part}),
                );
            }
            let mut done = item.clone();
            done["status"] = json!("incomplete");
            if done["type"] == "message" {
                done["content"] = json!([part]);
            }
            event("response.output_item.done", json!({"output_index": output_index, "item": done}));
            output.push(done);
        }
        let mut response =
            self.response.clone().unwrap_or_else(|| json!({"id": "resp_looprail", "object": "response"}));
        response["status"] = json!("incomplete");
        response["incomplete_details"] = json!({"reason": "max_output_tokens"});
        response["output"] = json!(output);
        event("response.incomplete", json!({"response": response}));
        out
    }
}

/// Rewrites a complete reply to keep only `keep` of its text and none of its calls, cut as by
/// the output limit.
pub fn cut_reply(api: Api, answer: &mut Value, keep: &str) {
    match api {
        Api::OpenAi => {
            let choice = &mut answer["choices"][0];
            choice["message"]["content"] = json!(keep);
            if let Some(message) = choice["message"].as_object_mut() {
                message.remove("tool_calls");
                message.remove("function_call");
            }
            choice["finish_reason"] = json!("length");
        }
        Api::Anthropic => {
            let Some(blocks) = answer["content"].as_array_mut() else { return };
            // Thinking stays; the text is one block, where the first text block was.
            let at = blocks.iter().position(|b| b["type"] == "text").unwrap_or(blocks.len());
            blocks.retain(|b| b["type"] != "text" && b["type"] != "tool_use");
            let at = at.min(blocks.len());
            blocks.insert(at, json!({"type": "text", "text": keep}));
            answer["stop_reason"] = json!("max_tokens");
        }
        Api::Responses => {
            let Some(items) = answer["output"].as_array_mut() else { return };
            items.retain(|item| item["type"] != "function_call" && item["type"] != "custom_tool_call");
            let mut kept = false;
            for item in items.iter_mut().filter(|item| item["type"] == "message") {
                item["content"] = if kept {
                    json!([])
                } else {
                    json!([{"type": "output_text", "text": keep, "annotations": []}])
                };
                item["status"] = json!("incomplete");
                kept = true;
            }
            answer["status"] = json!("incomplete");
            answer["incomplete_details"] = json!({"reason": "max_output_tokens"});
        }
    }
}
