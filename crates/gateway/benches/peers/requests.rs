//! The requests every system is sent: agents' conversations (a system prompt, the task, a
//! declared tool, then tool calls with their results), each of [`STEPS`] requests whose history
//! grows by one distinct call and its result, up to [`IN_FLIGHT`] conversations taken in turn (so
//! a conversation's next request comes long after its last was answered, as an agent's does).
//! Each cell (a load, an API, streamed or not) sends conversations of its own and runs them
//! whole, so a tenth of its requests start a conversation, as in an agent's run of ten steps.
//! The client sends no conversation name, as agents do (the gateway recognises each by its
//! content); `LOOPRAIL_PEERS_NAMED=1` names them (`x-looprail-run`), as an agent framework may.
//!
//! The profile-guided build is trained on another workload ([`training`], set by
//! `LOOPRAIL_PEERS_TRAINING=1`): unnamed conversations (the gateway recognises them by their
//! content), a coding agent's three tools (read, run, edit) with its own prompt and outputs. The
//! benchmark never sends those, so the binary it measures was not tuned on the requests it is
//! measured with.

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
const TRAINING_SYSTEM: &str =
    "You maintain a Python service. Read files, run the tests and edit code until they pass.";

/// Whether this process sends the training workload instead of the benchmark's.
pub fn training() -> bool {
    std::env::var("LOOPRAIL_PEERS_TRAINING").is_ok_and(|v| v == "1")
}

/// The training workload's tool call `step`: its tool, arguments and output.
fn training_call(tag: &str, step: usize) -> (&'static str, Value, String) {
    match step % 3 {
        0 => (
            "read_file",
            json!({"path": format!("service/handlers_{step}.py")}),
            format!("def handle_{step}(request):\n    return respond(request, status={})\n", 200 + step),
        ),
        1 => (
            "run_command",
            json!({"command": format!("pytest -q tests/test_{tag}_{step}.py")}),
            format!(
                "{} passed, 1 failed in 0.{step}s\nFAILED tests/test_{tag}_{step}.py::test_status",
                step + 3
            ),
        ),
        _ => (
            "edit_file",
            json!({"path": format!("service/handlers_{step}.py"), "old": "status=200", "new": format!("status={}", 201 + step)}),
            "edited 1 line".to_owned(),
        ),
    }
}

fn output(step: usize) -> String {
    (0..6)
        .map(|line| format!("src/module_{step}_{line}.rs: fn handler_{line}() -> Result<(), Error>\n"))
        .collect()
}

/// The JSON body of conversation `tag`'s request with `calls` calls in its history, for `api`,
/// streamed or not.
pub fn body(api: Api, stream: bool, tag: &str, calls: usize) -> String {
    if training() {
        return training_body(api, stream, tag, calls);
    }
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

/// The training workload's body ([`training`]): the same APIs and stream settings, another agent.
fn training_body(api: Api, stream: bool, tag: &str, calls: usize) -> String {
    let task = format!("Ticket {tag}: the status endpoint returns 200 where the tests expect 201; fix it.");
    let tool = |name: &str| {
        json!({"name": name, "description": format!("{name} in the service's checkout"),
        "schema": {"type": "object", "properties": {"path": {"type": "string"}, "command": {"type": "string"}}}})
    };
    let tools: Vec<Value> = ["read_file", "run_command", "edit_file"].iter().map(|n| tool(n)).collect();
    let body = match api {
        Api::OpenAi => {
            let mut messages = vec![
                json!({"role": "system", "content": TRAINING_SYSTEM}),
                json!({"role": "user", "content": task}),
            ];
            for step in 0..calls {
                let (name, args, out) = training_call(tag, step);
                let id = format!("call_{tag}_{step}");
                messages.push(
                    json!({"role": "assistant", "content": null, "tool_calls": [{"id": id, "type": "function",
                    "function": {"name": name, "arguments": args.to_string()}}]}),
                );
                messages.push(json!({"role": "tool", "tool_call_id": id, "content": out}));
            }
            let tools: Vec<Value> = tools
                .iter()
                .map(|t| {
                    json!({"type": "function", "function": {"name": t["name"],
                "description": t["description"], "parameters": t["schema"]}})
                })
                .collect();
            let mut body = json!({"model": api.model(), "messages": messages, "tools": tools});
            if stream {
                body["stream"] = json!(true);
            }
            body
        }
        Api::Anthropic => {
            let mut messages = vec![json!({"role": "user", "content": task})];
            for step in 0..calls {
                let (name, args, out) = training_call(tag, step);
                let id = format!("toolu_{tag}_{step}");
                messages.push(json!({"role": "assistant", "content": [{"type": "tool_use", "id": id, "name": name, "input": args}]}));
                messages.push(json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": id, "content": out}]}));
            }
            let tools: Vec<Value> = tools
                .iter()
                .map(|t| {
                    json!({"name": t["name"], "description": t["description"],
                "input_schema": t["schema"]})
                })
                .collect();
            json!({"model": api.model(), "max_tokens": 1024, "system": TRAINING_SYSTEM, "messages": messages, "stream": stream, "tools": tools})
        }
    };
    body.to_string()
}
