//! Issue 35 through the gateway: an upstream whose reply falls into repeating one block, on
//! each API, streamed and not. A streamed reply is cut within a few copies: the client gets
//! what arrived and a well-formed end (as each API ends a reply cut by its output limit), long
//! before the upstream would have finished; a complete one is cut to its first copy. The next
//! request of the conversation carries the ladder's nudge.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::time::{Duration, Instant};

use looprail_gateway::{Api, GatewayConfig};
use looprail_providers::fake::{FakeServer, Reply};
use serde_json::{Value, json};

use common::chant::{block, chant_json, chant_stream};

fn path(api: Api) -> &'static str {
    match api {
        Api::OpenAi => "/v1/chat/completions",
        Api::Anthropic => "/v1/messages",
        Api::Responses => "/v1/responses",
    }
}

/// The client's first request, and the next one with the reply it received.
fn request(api: Api, stream: bool, reply: Option<&str>) -> Value {
    let mut history = vec![json!({"role": "user", "content": "Quote the report."})];
    if let Some(reply) = reply {
        history.push(json!({"role": "assistant", "content": reply}));
        history.push(json!({"role": "user", "content": "And now?"}));
    }
    match api {
        Api::Responses => json!({"model": "m", "stream": stream, "input": history}),
        _ => json!({"model": "m", "max_tokens": 100, "stream": stream, "messages": history}),
    }
}

/// What the client read of a streamed reply: its text, and how the stream ended.
fn read_stream(api: Api, body: &str) -> (String, String) {
    let mut text = String::new();
    let mut end = String::new();
    for data in body.lines().filter_map(|l| l.strip_prefix("data: ")) {
        if data == "[DONE]" {
            end.push_str("[DONE]");
            continue;
        }
        let event: Value = serde_json::from_str(data).unwrap();
        match api {
            Api::OpenAi => {
                text.push_str(
                    event.pointer("/choices/0/delta/content").and_then(Value::as_str).unwrap_or_default(),
                );
                if let Some(reason) = event.pointer("/choices/0/finish_reason").and_then(Value::as_str) {
                    end.push_str(reason);
                }
            }
            Api::Anthropic => {
                text.push_str(event.pointer("/delta/text").and_then(Value::as_str).unwrap_or_default());
                if let Some(reason) = event.pointer("/delta/stop_reason").and_then(Value::as_str) {
                    end.push_str(reason);
                }
                if event["type"] == "message_stop" {
                    end.push_str("+stop");
                }
            }
            Api::Responses => {
                if event["type"] == "response.output_text.delta" {
                    text.push_str(event["delta"].as_str().unwrap_or_default());
                }
                if event["type"] == "response.incomplete" {
                    end.push_str(
                        event
                            .pointer("/response/incomplete_details/reason")
                            .and_then(Value::as_str)
                            .unwrap_or("?"),
                    );
                }
            }
        }
    }
    (text, end)
}

/// `merged`: how many of the stream's first events arrive together, in its first piece.
async fn case(api: Api, stream: bool, merged: usize) {
    let upstream = FakeServer::responding(move |body| {
        if body.to_string().contains("[looprail]") {
            let answer = match api {
                Api::OpenAi => json!({"id": "c2", "object": "chat.completion", "created": 1, "model": "m",
                    "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "Section two."}}]}),
                Api::Anthropic => json!({"id": "msg_2", "type": "message", "role": "assistant", "model": "c", "content": [{"type": "text", "text": "Section two."}],
                    "stop_reason": "end_turn", "stop_sequence": null, "usage": {"input_tokens": 10, "output_tokens": 5}}),
                Api::Responses => json!({"id": "resp_2", "object": "response", "created_at": 1, "status": "completed", "model": "m",
                    "output": [{"type": "message", "id": "msg_2", "status": "completed", "role": "assistant", "content": [{"type": "output_text", "text": "Section two.", "annotations": []}]}],
                    "parallel_tool_calls": true, "tool_choice": "auto", "tools": []}),
            };
            return Reply::json(200, &answer.to_string());
        }
        if body["stream"].as_bool() == Some(true) {
            let mut chunks = chant_stream(api);
            let first: String = chunks.drain(..merged).collect();
            chunks.insert(0, first);
            Reply::Sse { chunks, pause: Duration::from_millis(2), break_at_end: false }
        } else {
            Reply::json(200, &chant_json(api).to_string())
        }
    })
    .await;
    let mut settings = GatewayConfig::default();
    settings.upstream.openai = upstream.url.clone();
    settings.upstream.anthropic = upstream.url.clone();
    settings.upstream.openai_key = None;
    settings.upstream.anthropic_key = None;
    let gw = common::serve(settings, "degenerate").await;
    let client = reqwest::Client::new();
    let started = Instant::now();
    let response =
        common::post_json(&client, &format!("{gw}{}", path(api)), &request(api, stream, None)).await;
    assert_eq!(response.status(), 200);
    let body = response.text().await.unwrap();
    let copy = block();
    let received = if stream {
        let (text, end) = read_stream(api, &body);
        // 2,000 copies 2 ms apart would take 4 s: cut within a few copies.
        assert!(started.elapsed() < Duration::from_secs(2), "{api:?}: cut early ({:?})", started.elapsed());
        let copies = text.len() / copy.len();
        if merged == 1 {
            assert!((5..=14).contains(&copies), "{api:?}: {copies} copies reached the client");
        } else {
            // A first piece that chants by itself, 6 KB the network may split anywhere: the
            // client gets whole events (every data line above is JSON), those the gateway had
            // when it found the tenth copy, at most the piece's, then the end.
            let lead = match api {
                Api::OpenAi => 1,
                Api::Anthropic => 2,
                Api::Responses => 3,
            };
            assert!((10..=merged - lead).contains(&copies), "{api:?}: {copies} copies reached the client");
        }
        let expected = match api {
            Api::OpenAi => "length[DONE]",
            Api::Anthropic => "max_tokens+stop",
            Api::Responses => "max_output_tokens",
        };
        assert_eq!(end, expected, "{api:?}: a well-formed end\n{}", &body[body.len().saturating_sub(800)..]);
        text
    } else {
        let answer: Value = serde_json::from_str(&body).unwrap();
        let text = match api {
            Api::OpenAi => {
                assert_eq!(answer["choices"][0]["finish_reason"], "length");
                answer["choices"][0]["message"]["content"].as_str().unwrap().to_owned()
            }
            Api::Anthropic => {
                assert_eq!(answer["stop_reason"], "max_tokens");
                answer["content"][0]["text"].as_str().unwrap().to_owned()
            }
            Api::Responses => {
                assert_eq!(answer["status"], "incomplete");
                answer["output"][0]["content"][0]["text"].as_str().unwrap().to_owned()
            }
        };
        assert_eq!(text.len(), copy.len(), "{api:?}: one copy kept");
        text
    };
    // The next request of the conversation carries the nudge.
    let response =
        common::post_json(&client, &format!("{gw}{}", path(api)), &request(api, false, Some(&received)))
            .await;
    assert_eq!(response.status(), 200);
    let seen = upstream.requests();
    let last = seen.last().unwrap().body.to_string();
    assert!(
        last.contains("kept repeating the same text"),
        "{api:?} stream {stream}: the nudge went upstream"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chanting_reply_is_cut_on_every_api_streamed_and_not() {
    for api in [Api::OpenAi, Api::Anthropic, Api::Responses] {
        for stream in [true, false] {
            case(api, stream, 1).await;
        }
        case(api, true, 32).await;
    }
}

/// An upstream on a raw socket streaming the chant paced, as a model generates, until its
/// connection is closed; the copies it managed to send.
async fn paced_chant_upstream() -> (String, tokio::sync::oneshot::Receiver<usize>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let (closed, copies) = tokio::sync::oneshot::channel();
    tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.unwrap();
        let mut request = Vec::new();
        let mut buffer = [0u8; 65536];
        // Headers, then the body its content-length announces.
        loop {
            let n = socket.read(&mut buffer).await.unwrap();
            request.extend_from_slice(&buffer[..n]);
            let text = String::from_utf8_lossy(&request).to_ascii_lowercase();
            if let Some(end) = text.find("\r\n\r\n") {
                let length = text
                    .lines()
                    .find_map(|l| l.strip_prefix("content-length:").map(|v| v.trim().parse().unwrap_or(0)))
                    .unwrap_or(0usize);
                if request.len() >= end + 4 + length {
                    break;
                }
            }
        }
        let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n";
        socket.write_all(head.as_bytes()).await.unwrap();
        let mut sent = 0;
        for event in chant_stream(Api::OpenAi) {
            tokio::time::sleep(Duration::from_millis(2)).await;
            let chunk = format!("{:x}\r\n{event}\r\n", event.len());
            if socket.write_all(chunk.as_bytes()).await.is_err() || socket.flush().await.is_err() {
                break;
            }
            sent += 1;
        }
        let _ = closed.send(sent);
    });
    (url, copies)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_upstream_connection_is_closed_at_the_cut() {
    let (upstream, copies) = paced_chant_upstream().await;
    let mut settings = GatewayConfig::default();
    settings.upstream.openai = upstream;
    settings.upstream.openai_key = None;
    let gw = common::serve(settings, "degenerate-close").await;
    let client = reqwest::Client::new();
    let response =
        common::post_json(&client, &format!("{gw}/v1/chat/completions"), &request(Api::OpenAi, true, None))
            .await;
    let body = response.text().await.unwrap();
    let (text, _) = read_stream(Api::OpenAi, &body);
    let read = text.len() / block().len();
    // The upstream learns of the close on its next writes: a few copies after the cut, not
    // the dozens it would send while the conversation is saved and the client's stream ends.
    let sent = tokio::time::timeout(Duration::from_secs(10), copies).await.unwrap().unwrap();
    assert!(sent <= read + 8, "the upstream sent {sent} events; the client read {read} copies");
}
