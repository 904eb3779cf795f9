//! The requests every system is sent: agents' conversations (a system prompt, the task, a
//! declared tool, then tool calls with their results), each of [`STEPS`] requests whose history
//! grows by one distinct call and its result, up to [`IN_FLIGHT`] conversations taken in turn (so
//! a conversation's next request comes long after its last was answered, as an agent's does).
//! Each cell (a load, an API, streamed or not) sends conversations of its own and runs them
//! whole, so a tenth of its requests start a conversation, as in an agent's run of ten steps.
//! The client names its conversation (`x-looprail-run`), as an agent framework may; the gateway
//! reads and writes its state on every request all the same.

use serde_json::{Value, json};

/// The API a request speaks.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Api {
    /// OpenAI Chat Completions.
    OpenAi,
    /// Anthropic Messages.
    Anthropic,
}

impl Api {
    /// The row's name.
    pub fn name(self) -> &'static str {
        match self {
            Api::OpenAi => "openai",
            Api::Anthropic => "anthropic",
        }
    }

    /// The route below the base URL.
    pub fn path(self) -> &'static str {
        match self {
            Api::OpenAi => "/v1/chat/completions",
            Api::Anthropic => "/v1/messages",
        }
    }

    /// The model name: a real one, so LiteLLM takes its usual path (its price table knows
    /// it); its config routes each to the fake upstream.
    pub fn model(self) -> &'static str {
        match self {
            Api::OpenAi => "gpt-4o-mini",
            Api::Anthropic => "claude-3-5-haiku-20241022",
        }
    }
}

/// Requests per conversation.
pub const STEPS: u64 = 10;

/// The most conversations a cell takes in turn.
pub const IN_FLIGHT: u64 = 100;

/// How many conversations a cell of `requests` requests takes in turn: as many as run their
/// [`STEPS`] requests whole within it, at most [`IN_FLIGHT`], at least one. (Until session 33
/// every cell took 100 and its count went on from the cell before, so a one-client cell of 400
/// requests started a conversation with a quarter to a half of them.)
pub fn in_flight(requests: u64) -> u64 {
    (requests / STEPS).clamp(1, IN_FLIGHT)
}

/// A cell's request `n` with `in_flight` conversations taken in turn: its conversation's number
/// and how many calls its history holds.
pub fn nth(n: u64, in_flight: u64) -> (u64, usize) {
    let in_flight = in_flight.max(1);
    let (round, slot) = (n / in_flight, n % in_flight);
    let conversation = (round / STEPS) * in_flight + slot;
    (conversation, 1 + (round % STEPS) as usize)
}

const SYSTEM: &str = "You are a coding agent. Use the tools to inspect the repository, then answer briefly.";

fn output(step: usize) -> String {
    (0..6)
        .map(|line| format!("src/module_{step}_{line}.rs: fn handler_{line}() -> Result<(), Error>\n"))
        .collect()
}

/// The JSON body of conversation `tag`'s request with `calls` calls in its history, for `api`,
/// streamed or not.
pub fn body(api: Api, stream: bool, tag: &str, calls: usize) -> String {
    let task = format!("Task {tag}: find where the application reads its configuration.");
    let queries: Vec<String> = (0..calls).map(|i| format!("config loading, place {i}")).collect();
    let body: Value = match api {
        Api::OpenAi => {
            let mut messages =
                vec![json!({"role": "system", "content": SYSTEM}), json!({"role": "user", "content": task})];
            for (step, query) in queries.iter().enumerate() {
                let id = format!("call_{tag}_{step}");
                messages.push(
                    json!({"role": "assistant", "content": null, "tool_calls": [{"id": id, "type": "function",
                    "function": {"name": "search", "arguments": json!({"query": query}).to_string()}}]}),
                );
                messages.push(json!({"role": "tool", "tool_call_id": id, "content": output(step)}));
            }
            let mut body = json!({"model": api.model(), "messages": messages, "tools": [{"type": "function",
                "function": {"name": "search", "description": "Search the repository",
                    "parameters": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}}}]});
            if stream {
                body["stream"] = json!(true);
                body["stream_options"] = json!({"include_usage": true});
            }
            body
        }
        Api::Anthropic => {
            let mut messages = vec![json!({"role": "user", "content": task})];
            for (step, query) in queries.iter().enumerate() {
                let id = format!("toolu_{tag}_{step}");
                messages.push(json!({"role": "assistant", "content": [{"type": "tool_use", "id": id, "name": "search", "input": {"query": query}}]}));
                messages.push(json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": id, "content": output(step)}]}));
            }
            json!({"model": api.model(), "max_tokens": 512, "system": SYSTEM, "messages": messages, "stream": stream,
                "tools": [{"name": "search", "description": "Search the repository",
                    "input_schema": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}}]})
        }
    };
    body.to_string()
}
