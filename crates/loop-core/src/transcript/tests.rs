//! The transcript readers' tests.

use super::*;

#[test]
fn malformed_messages_are_typed_errors_with_their_index() {
    let log = serde_json::json!([{"role": "user", "content": "hi"}, {"content": "no role"}]);
    let err = from_openai_messages(log.as_array().unwrap()).unwrap_err();
    assert_eq!(err.index, 1);
    let log = serde_json::json!([{"role": "assistant", "tool_calls": [{"function": {"name": "x"}}]}]);
    assert!(from_openai_messages(log.as_array().unwrap()).unwrap_err().reason.contains("`id`"));
    let log = serde_json::json!([{"role": "wizard", "content": "x"}]);
    assert!(from_openai_messages(log.as_array().unwrap()).is_err());
}

#[test]
fn array_content_and_object_arguments_are_read() {
    let log = serde_json::json!([
        {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
        {"role": "assistant", "tool_calls": [{"id": "1", "function": {"name": "f", "arguments": {"x": 1}}}]},
    ]);
    let messages = from_openai_messages(log.as_array().unwrap()).unwrap();
    assert_eq!(messages[0].joined_text().as_deref(), Some("ab"));
    assert_eq!(messages[1].tool_calls().next().unwrap().arguments, r#"{"x":1}"#);
}

#[test]
fn a_custom_tools_call_is_a_call_with_its_input_as_arguments() {
    // GPT-5's custom tools in Chat Completions: free text in, no JSON arguments.
    let log = r#"{"messages": [
        {"role": "user", "content": "patch it"},
        {"role": "assistant", "content": null, "tool_calls": [
            {"id": "call_1", "type": "custom", "custom": {"name": "apply_patch", "input": "*** Begin Patch"}},
            {"id": "call_2", "type": "function", "function": {"name": "ls", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "Done"}
    ]}"#;
    let (_, messages) = read_log(log).unwrap();
    let calls: Vec<(&str, &str, &str)> =
        messages[1].tool_calls().map(|c| (c.id.as_str(), c.name.as_str(), c.arguments.as_str())).collect();
    assert_eq!(calls, [("call_1", "apply_patch", "*** Begin Patch"), ("call_2", "ls", "{}")]);
    let neither = serde_json::json!({"id": "c", "type": "mystery"});
    assert_eq!(openai_tool_call(&neither).unwrap_err(), "tool call without `function`");
}

#[test]
fn a_legacy_function_call_is_a_call_answered_by_its_function_message() {
    // Chat logs from before `tool_calls`: one `function_call` per reply, answered by a
    // `function` message naming the function; `null` (as older replies wrote it) is none.
    let log = r#"{"messages": [
        {"role": "user", "content": "Read a.txt"},
        {"role": "assistant", "content": null, "function_call": {"name": "cat", "arguments": "{\"p\": \"a.txt\"}"}},
        {"role": "function", "name": "cat", "content": "hello"},
        {"role": "assistant", "content": "It says hello.", "function_call": null}
    ]}"#;
    let (_, messages) = read_log(log).unwrap();
    let calls: Vec<&ToolCall> = messages.iter().flat_map(Message::tool_calls).collect();
    assert_eq!(calls.len(), 1);
    assert_eq!((calls[0].name.as_str(), calls[0].arguments.as_str()), ("cat", r#"{"p": "a.txt"}"#));
    let result = messages[2].tool_results().next().unwrap();
    assert_eq!((result.call_id.as_str(), result.content.as_str()), (calls[0].id.as_str(), "hello"));
    assert_eq!(messages[3].joined_text().as_deref(), Some("It says hello."));
}

#[test]
fn anthropic_logs_keep_tool_ids_and_error_flags() {
    let doc = serde_json::json!({"system": "Be brief.", "messages": [
        {"role": "user", "content": "weather?"},
        {"role": "assistant", "content": [{"type": "text", "text": "Checking."}, {"type": "tool_use", "id": "t1", "name": "weather", "input": {"city": "Porto"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": [{"type": "text", "text": "boom"}], "is_error": true}]}
    ]});
    let (format, messages) = read_log(&doc.to_string()).unwrap();
    assert_eq!(format, LogFormat::AnthropicMessages);
    assert_eq!(messages[0].role, Role::System);
    assert_eq!(messages[2].tool_calls().next().unwrap().arguments, r#"{"city":"Porto"}"#);
    let result = messages[3].tool_results().next().unwrap();
    assert!(result.is_error && result.content == "boom" && result.call_id == "t1");
}

#[test]
fn jsonl_and_bare_arrays_are_read() {
    let jsonl =
        "{\"role\": \"user\", \"content\": \"hi\"}\n{\"role\": \"assistant\", \"content\": \"hello\"}\n";
    assert_eq!(read_log(jsonl).unwrap().1.len(), 2);
    assert_eq!(read_log("[{\"role\": \"user\", \"content\": \"hi\"}]").unwrap().1.len(), 1);
    assert!(read_log("{\"nope\": 1}").is_err());
    let not_a_list = read_log("{\"messages\": {\"role\": \"user\"}}").unwrap_err();
    assert!(not_a_list.reason.contains("`messages` array"), "{}", not_a_list.reason);
    assert!(read_log("not json\n{also not}").is_err());
}
