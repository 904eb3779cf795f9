//! Every recorded response body in ../shared/wire (live OpenAI chat streams; Anthropic streams
//! from live cassettes and the SDK's fixtures) read by the providers' stream parsers: each ends
//! in a reply, whose text is what the stream's text deltas add up to, whose calls' arguments are
//! the JSON their deltas add up to, and whose usage is the stream's last. The expected values
//! are read from the raw events here, not from the parsers.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use looprail_loop_core::provider::{ModelResponse, StopReason, StreamEvent};
use looprail_providers::sse::{SseParser, Step};
use serde_json::Value;

/// ../shared/wire, or `None` outside CI when it is absent (under CI it must be there).
fn wire_dir() -> Option<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/wire");
    if root.is_dir() {
        return Some(root);
    }
    assert!(std::env::var_os("CI").is_none(), "{} is missing under CI", root.display());
    eprintln!("skipped: {} is absent (it is beside the repository in CI)", root.display());
    None
}

/// The events of an SSE body: (name, data).
fn events(body: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for raw in body.replace("\r\n", "\n").split("\n\n") {
        let (mut name, mut data) = (String::new(), Vec::new());
        for line in raw.lines() {
            if let Some(value) = line.strip_prefix("event:") {
                name = value.trim().to_owned();
            } else if let Some(value) = line.strip_prefix("data:") {
                data.push(value.strip_prefix(' ').unwrap_or(value).to_owned());
            }
        }
        if !data.is_empty() {
            out.push((name, data.join("\n")));
        }
    }
    out
}

/// `body` read to its reply; after each event the parser's text so far is checked against
/// the text deltas it returned.
fn parse(parser: &mut dyn SseParser, body: &str) -> ModelResponse {
    let mut deltas = String::new();
    for (name, data) in events(body) {
        let step = parser.event(&name, &data);
        if let Step::Continue(events) = &step {
            for event in events {
                if let StreamEvent::TextDelta(text) = event {
                    deltas.push_str(text);
                }
            }
            assert_eq!(parser.text_so_far(), Some(deltas.as_str()), "after {name}: {data}");
        }
        if let Step::Done(result) = step {
            return result.unwrap();
        }
    }
    parser.end_of_body().unwrap()
}

fn files(dir: &Path, ends: &[&str]) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| ends.iter().any(|end| p.to_string_lossy().ends_with(end)))
        .collect();
    files.sort();
    files
}

#[test]
fn every_recorded_openai_stream_reads_as_its_deltas_add_up() {
    let Some(root) = wire_dir() else { return };
    let streams = files(&root.join("openai-chat-completions-stream"), &[".sse"]);
    assert!(streams.len() >= 11, "the recorded streams are there");
    for path in streams {
        let body = std::fs::read_to_string(&path).unwrap();
        let chunks: Vec<Value> = events(&body)
            .into_iter()
            .filter(|(_, data)| data != "[DONE]")
            .map(|(_, data)| serde_json::from_str(&data).unwrap())
            .collect();
        // The first choice's deltas (a stream with n > 1 interleaves its choices).
        let deltas: Vec<&Value> = chunks
            .iter()
            .flat_map(|c| c["choices"].as_array().unwrap())
            .filter(|c| c["index"] == 0)
            .collect();
        let text: String = deltas.iter().filter_map(|c| c["delta"]["content"].as_str()).collect();
        let refusal: String = deltas.iter().filter_map(|c| c["delta"]["refusal"].as_str()).collect();
        let arguments: String = deltas
            .iter()
            .flat_map(|c| c["delta"]["tool_calls"].as_array().into_iter().flatten())
            .filter_map(|t| t["function"]["arguments"].as_str())
            .collect();
        let usage = chunks.iter().rev().find_map(|c| c["usage"]["prompt_tokens"].as_u64());

        let reply = parse(&mut looprail_providers::openai::ChunkParser::new("gpt-4o"), &body);
        let name = path.file_name().unwrap().to_string_lossy();
        let expected = if refusal.is_empty() { text } else { refusal };
        assert_eq!(reply.text.unwrap_or_default(), expected, "{name}");
        let parsed: String = reply.tool_calls.iter().map(|c| c.arguments.as_str()).collect();
        assert_eq!(parsed, arguments, "{name}");
        for call in &reply.tool_calls {
            assert!(serde_json::from_str::<Value>(&call.arguments).is_ok(), "{name}: {}", call.arguments);
            assert!(!call.id.is_empty() && !call.name.is_empty(), "{name}");
        }
        assert_eq!(reply.usage.map(|u| u.input_tokens), usage, "{name}");
        assert_eq!(!reply.tool_calls.is_empty(), reply.stop_reason == StopReason::ToolUse, "{name}");
    }
}

#[test]
fn every_recorded_anthropic_stream_reads_as_its_deltas_add_up() {
    let Some(root) = wire_dir() else { return };
    let mut streams = files(&root.join("anthropic-messages/extracted"), &[".sse"]);
    streams.extend(files(&root.join("anthropic-messages/sdk-fixtures"), &[".sse", "_response.txt"]));
    assert!(streams.len() >= 12, "the recorded streams are there");
    for path in streams {
        let body = std::fs::read_to_string(&path).unwrap();
        let events: Vec<Value> =
            events(&body).into_iter().map(|(_, data)| serde_json::from_str(&data).unwrap()).collect();
        let deltas = events.iter().filter(|e| e["type"] == "content_block_delta").map(|e| &e["delta"]);
        let text: String = deltas.clone().filter_map(|d| d["text"].as_str()).collect();
        let input: String = deltas.filter_map(|d| d["partial_json"].as_str()).collect();
        let uses = events.iter().filter(|e| e["content_block"]["type"] == "tool_use").count();
        let stop = events.iter().find_map(|e| e["delta"]["stop_reason"].as_str()).unwrap_or_default();
        let output = events.iter().rev().find_map(|e| e["usage"]["output_tokens"].as_u64());

        let reply = parse(&mut looprail_providers::anthropic::EventParser::new("claude"), &body);
        let name = path.file_name().unwrap().to_string_lossy();
        assert_eq!(reply.text.unwrap_or_default(), text, "{name}");
        assert_eq!(reply.tool_calls.len(), uses, "{name}");
        assert_eq!(reply.usage.map(|u| u.output_tokens), output, "{name}");
        if uses == 1 && stop == "tool_use" {
            // A finished call's arguments are the JSON its deltas add up to (as a value: the
            // parser may respell it).
            let expected: Value = serde_json::from_str(if input.is_empty() { "{}" } else { &input }).unwrap();
            let parsed: Value = serde_json::from_str(&reply.tool_calls[0].arguments).unwrap();
            assert_eq!(parsed, expected, "{name}");
        }
        let expected_stop = match stop {
            "tool_use" => StopReason::ToolUse,
            "max_tokens" => StopReason::MaxTokens,
            "refusal" => StopReason::Refusal,
            _ => StopReason::EndTurn,
        };
        assert_eq!(reply.stop_reason, expected_stop, "{name}");
    }
}

/// Every response of the Anthropic SDK's live-recorded cassettes served to the real client: a
/// complete reply reads as its blocks (text joined, one call per `tool_use` block, server
/// tools and code execution left to the provider), a stream as its events, an error as the
/// kind its status and type say.
#[tokio::test]
async fn every_recorded_anthropic_cassette_response_reads_through_the_client() {
    use looprail_loop_core::prelude::*;
    use looprail_loop_core::provider::{CallPurpose, ProviderErrorKind};
    use looprail_providers::fake::{FakeServer, Reply};

    let Some(root) = wire_dir() else { return };
    let cassettes = files(&root.join("anthropic-messages/recorded-live-cassettes"), &[".json"]);
    assert!(cassettes.len() >= 10, "the cassettes are there");
    let mut read = 0;
    for path in cassettes {
        let pairs: Vec<Value> = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        for (i, pair) in pairs.iter().enumerate() {
            let name = format!("{}[{i}]", path.file_name().unwrap().to_string_lossy());
            let response = &pair["response"];
            let status = u16::try_from(response["status_code"].as_u64().unwrap()).unwrap();
            let (reply, stream) = match &response["body"] {
                Value::String(sse) => (Reply::sse_text(sse), true),
                body => (Reply::json(status, &body.to_string()), false),
            };
            let server = FakeServer::start(vec![reply]).await;
            let config = looprail_providers::ClientConfig::custom("claude", &server.url, Some("sk-ant-test"));
            let client = looprail_providers::AnthropicClient::new(config).unwrap();
            let messages = [Message::user("hi")];
            let request = ModelRequest {
                messages: &messages,
                tools: &[],
                tool_choice: ToolChoice::Auto,
                max_output_tokens: None,
                instruction: None,
                purpose: CallPurpose::Turn,
            };
            let result = if stream {
                let mut events = client.stream(&request).await.unwrap();
                let mut done = None;
                while let Some(event) = futures_util::StreamExt::next(&mut events).await {
                    if let looprail_loop_core::provider::StreamEvent::Finished(result) = event {
                        done = Some(result);
                    }
                }
                done.expect("the stream finishes")
            } else {
                client.complete(&request).await
            };
            match status {
                200 if !stream => {
                    let reply = result.unwrap_or_else(|e| panic!("{name}: {e}"));
                    let blocks = response["body"]["content"].as_array().unwrap();
                    let text: String = blocks
                        .iter()
                        .filter(|b| b["type"] == "text")
                        .filter_map(|b| b["text"].as_str())
                        .collect();
                    let uses: Vec<&Value> = blocks.iter().filter(|b| b["type"] == "tool_use").collect();
                    assert_eq!(reply.text.unwrap_or_default(), text, "{name}");
                    assert_eq!(reply.tool_calls.len(), uses.len(), "{name}");
                    for (call, block) in reply.tool_calls.iter().zip(&uses) {
                        assert_eq!(call.id, block["id"].as_str().unwrap(), "{name}");
                        assert_eq!(
                            serde_json::from_str::<Value>(&call.arguments).unwrap(),
                            block["input"],
                            "{name}"
                        );
                    }
                    let input = response["body"]["usage"]["input_tokens"].as_u64();
                    assert_eq!(reply.usage.map(|u| u.input_tokens), input, "{name}");
                }
                200 => assert!(result.is_ok(), "{name}: {result:?}"),
                429 => assert_eq!(result.unwrap_err().kind, ProviderErrorKind::RateLimited, "{name}"),
                _ => assert_eq!(result.unwrap_err().kind, ProviderErrorKind::InvalidRequest, "{name}"),
            }
            read += 1;
        }
    }
    assert!(read >= 25, "every recorded response was served: {read}");
}
