//! LangChain and LangGraph message lists, in the three shapes they are saved in: a message's
//! own fields with its `type` (`human`, `ai`, `system`, `tool`: a LangGraph state's
//! `messages`, `model_dump()`), `messages_to_dict` (`{"type", "data": {…}}`) and LangChain's
//! serialisation (`dumpd`: `{"lc": 1, "type": "constructor", "id": [.., "AIMessage"],
//! "kwargs": {…}}`). A list stands alone or under `messages`.
//!
//! An AI message's calls are its `tool_calls` (`name`, `args`, `id`), with its
//! `invalid_tool_calls` (arguments the model wrote that were no JSON: still calls it made);
//! older ones keep OpenAI's calls in `additional_kwargs.tool_calls`, or a `function_call`
//! answered by a `function` message; a content list's `tool_use` blocks are Anthropic's. A tool
//! message answers `tool_call_id`, an error when its `status` is `error`. LangGraph's
//! `remove` messages are bookkeeping.

use looprail::core::message::{Message, ToolCall, ToolResult};
use serde_json::{Map, Value};

use super::{arguments_or_empty, assistant_turn, message_list, text_of};

/// The message list of `doc`, when it is LangChain's.
pub fn messages(doc: &Value) -> Option<&[Value]> {
    let list = message_list(doc)?;
    let first = list.first()?;
    let (kind, _) = shape(first)?;
    KINDS.contains(&kind.as_str()).then_some(list)
}

/// The message types LangChain writes (chunks are read as their message).
const KINDS: &[&str] = &["human", "ai", "system", "tool", "function", "chat", "remove"];

/// A message's type and fields, whichever of the three shapes it has.
fn shape(message: &Value) -> Option<(String, &Map<String, Value>)> {
    let object = message.as_object()?;
    if object.get("role").is_some() {
        return None; // a chat API message
    }
    if object.get("lc").is_some() {
        let class = object.get("id")?.as_array()?.last()?.as_str()?;
        let kind = match class.trim_end_matches("Chunk") {
            "HumanMessage" => "human",
            "AIMessage" => "ai",
            "SystemMessage" => "system",
            "ToolMessage" => "tool",
            "FunctionMessage" => "function",
            "ChatMessage" => "chat",
            "RemoveMessage" => "remove",
            _ => return None,
        };
        return Some((kind.to_owned(), object.get("kwargs")?.as_object()?));
    }
    let kind = object.get("type")?.as_str()?;
    let kind = match kind.trim_end_matches("MessageChunk") {
        "Human" => "human",
        "AI" => "ai",
        "System" => "system",
        "Tool" => "tool",
        "Function" => "function",
        "Chat" => "chat",
        other => other,
    };
    match object.get("data").and_then(Value::as_object) {
        Some(data) => Some((kind.to_owned(), data)),
        None if object.contains_key("content") => Some((kind.to_owned(), object)),
        None => None,
    }
}

/// The conversation.
pub fn read(list: &[Value]) -> Result<Vec<Message>, String> {
    let mut out = Vec::with_capacity(list.len());
    // The id given to a legacy `function_call`, answered by the next `function` message.
    let mut pending_function: Option<String> = None;
    for (index, message) in list.iter().enumerate() {
        let (kind, fields) =
            shape(message).ok_or_else(|| format!("message {index}: not a LangChain message"))?;
        let field = |key: &str| fields.get(key).and_then(Value::as_str).unwrap_or_default();
        let text = content_text(fields.get("content"));
        out.push(match kind.as_str() {
            "human" => Message::user(text),
            "system" => Message::system(text),
            "chat" => match field("role") {
                "assistant" | "ai" => Message::assistant(text),
                "system" | "developer" => Message::system(text),
                _ => Message::user(text),
            },
            "ai" => {
                let mut calls = calls(fields);
                if let Some(function) = fields.get("additional_kwargs").and_then(|k| k.get("function_call")) {
                    let id = format!("function-{index}");
                    let name = function.get("name").and_then(Value::as_str).unwrap_or("function");
                    let arguments = arguments_or_empty(function.get("arguments"));
                    calls.push(ToolCall::new(&id, name, arguments));
                    pending_function = Some(id);
                }
                assistant_turn(text, calls)
            }
            "tool" => {
                let result = if field("status") == "error" { ToolResult::error } else { ToolResult::ok };
                Message::tool_result(result(field("tool_call_id"), text))
            }
            "function" => {
                let id = pending_function.take().unwrap_or_else(|| format!("function-{index}"));
                Message::tool_result(ToolResult::ok(id, text))
            }
            "remove" => continue,
            other => return Err(format!("message {index}: unknown LangChain message type {other:?}")),
        });
    }
    Ok(out)
}

/// The text of a content: a string, or a list's text blocks (and bare strings).
fn content_text(content: Option<&Value>) -> String {
    match content {
        Some(Value::Array(blocks)) => blocks
            .iter()
            .filter_map(|b| b.as_str().or_else(|| b.get("text").and_then(Value::as_str)))
            .collect::<Vec<_>>()
            .join("\n"),
        other => text_of(other),
    }
}

/// An AI message's calls: `tool_calls` and `invalid_tool_calls`, else OpenAI's in
/// `additional_kwargs`, else the content's `tool_use` blocks.
fn calls(fields: &Map<String, Value>) -> Vec<ToolCall> {
    let list = |key: &str| fields.get(key).and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    let text = |call: &Value, key: &str| call.get(key).and_then(Value::as_str).unwrap_or_default().to_owned();
    let mut calls: Vec<ToolCall> = list("tool_calls")
        .iter()
        .chain(list("invalid_tool_calls"))
        .map(|call| {
            let arguments = arguments_or_empty(call.get("args"));
            ToolCall::new(text(call, "id"), text(call, "name"), arguments)
        })
        .collect();
    if calls.is_empty() {
        let openai =
            fields.get("additional_kwargs").and_then(|k| k.get("tool_calls")).and_then(Value::as_array);
        calls = openai
            .into_iter()
            .flatten()
            .map(|call| {
                let function = call.get("function").unwrap_or(&Value::Null);
                let arguments = arguments_or_empty(function.get("arguments"));
                ToolCall::new(text(call, "id"), text(function, "name"), arguments)
            })
            .collect();
    }
    if calls.is_empty() {
        let blocks = fields.get("content").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
        calls = blocks
            .iter()
            .filter(|b| b.get("type").and_then(Value::as_str) == Some("tool_use"))
            .map(|b| {
                let arguments = arguments_or_empty(b.get("input"));
                ToolCall::new(text(b, "id"), text(b, "name"), arguments)
            })
            .collect();
    }
    calls
}

#[cfg(test)]
mod tests {
    use super::super::roles;
    use super::*;
    use looprail::core::message::Role;
    use serde_json::json;

    #[test]
    fn a_langgraph_state_reads_calls_results_and_errors() {
        let state = json!({"messages": [
            {"type": "system", "content": "You search."},
            {"type": "human", "content": "Find the report", "id": "m1"},
            {"type": "ai", "content": [{"type": "text", "text": "Searching."}], "tool_calls": [
                {"name": "search", "args": {"q": "report"}, "id": "call_1", "type": "tool_call"}],
                "invalid_tool_calls": [{"name": "search", "args": "{q: broken", "id": "call_2", "error": "bad JSON"}]},
            {"type": "tool", "content": "nothing", "tool_call_id": "call_1", "status": "success"},
            {"type": "tool", "content": "Error: bad arguments", "tool_call_id": "call_2", "status": "error"},
            {"type": "remove", "id": "m0", "content": ""},
            {"type": "AIMessageChunk", "content": "Not found.", "tool_calls": []}
        ]});
        let list = messages(&state).unwrap();
        let read = read(list).unwrap();
        use Role::{Assistant, System, Tool, User};
        assert_eq!(roles(&read), [System, User, Assistant, Tool, Tool, Assistant]);
        let calls: Vec<(&str, &str)> =
            read[2].tool_calls().map(|c| (c.id.as_str(), c.arguments.as_str())).collect();
        assert_eq!(calls, [("call_1", r#"{"q":"report"}"#), ("call_2", "{q: broken")]);
        assert_eq!(read[2].joined_text().as_deref(), Some("Searching."));
        let errors: Vec<bool> = read.iter().flat_map(|m| m.tool_results()).map(|r| r.is_error).collect();
        assert_eq!(errors, [false, true]);
    }

    #[test]
    fn messages_to_dict_and_dumpd_read_alike_with_older_openai_calls() {
        let openai_call = json!({"tool_calls": [{"id": "call_9", "type": "function",
            "function": {"name": "ls", "arguments": "{\"dir\": \".\"}"}}]});
        let as_dicts = json!([
            {"type": "human", "data": {"content": "List it", "type": "human"}},
            {"type": "ai", "data": {"content": "", "additional_kwargs": openai_call, "type": "ai"}},
            {"type": "tool", "data": {"content": "a.txt", "tool_call_id": "call_9", "type": "tool"}}
        ]);
        let dumped = json!([
            {"lc": 1, "type": "constructor", "id": ["langchain", "schema", "messages", "HumanMessage"],
                "kwargs": {"content": "List it", "type": "human"}},
            {"lc": 1, "type": "constructor", "id": ["langchain_core", "messages", "AIMessage"],
                "kwargs": {"content": "", "additional_kwargs": openai_call, "type": "ai"}},
            {"lc": 1, "type": "constructor", "id": ["langchain", "schema", "messages", "ToolMessage"],
                "kwargs": {"content": "a.txt", "tool_call_id": "call_9", "type": "tool"}}
        ]);
        let a = read(messages(&as_dicts).unwrap()).unwrap();
        let b = read(messages(&dumped).unwrap()).unwrap();
        assert_eq!(a, b);
        assert_eq!(a[1].tool_calls().next().unwrap().name, "ls");
        assert_eq!(a[2].tool_results().next().unwrap().call_id, "call_9");
    }

    #[test]
    fn a_legacy_function_call_is_answered_by_its_function_message() {
        let list = json!([
            {"type": "human", "content": "Weather?"},
            {"type": "ai", "content": "", "additional_kwargs": {"function_call": {"name": "weather", "arguments": "{}"}}},
            {"type": "function", "name": "weather", "content": "sunny"},
            {"type": "ai", "content": [{"type": "tool_use", "id": "toolu_1", "name": "weather", "input": {"city": "Faro"}}]}
        ]);
        let read = read(messages(&list).unwrap()).unwrap();
        let call = read[1].tool_calls().next().unwrap();
        assert_eq!(read[2].tool_results().next().unwrap().call_id, call.id);
        assert_eq!(read[3].tool_calls().next().unwrap().arguments, r#"{"city":"Faro"}"#);
    }

    #[test]
    fn chat_api_messages_and_other_lists_are_not_langchains() {
        assert!(messages(&json!([{"role": "user", "content": "hi"}])).is_none());
        assert!(messages(&json!([{"type": "message", "role": "user", "content": "hi"}])).is_none());
        assert!(messages(&json!([{"type": "function_call", "call_id": "c"}])).is_none());
        assert!(messages(&json!({"messages": []})).is_none());
    }
}
