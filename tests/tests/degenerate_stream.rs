//! Issue 35 end to end: a model whose streamed reply falls into repeating one 200-character
//! block, behind a local server speaking the Chat Completions wire format that counts the
//! bytes it sent and sees the connection close. With the degenerate-reply watch (the
//! default of `looprail run` and the facade), the stream is cut within ten copies (the HTTP
//! body dropped, so the model stops generating), the reply kept to one copy, never continued,
//! and the model, told what it repeated, answers (a recovery, not a rung of the ladder).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use looprail_guardrails::{DegenerateReplies, GuardrailsConfig, default_stack};
use looprail_loop_core::prelude::*;
use looprail_providers::{ClientConfig, OpenAiClient};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const COPIES: usize = 2000;

/// 200 characters with no period of their own.
fn block() -> String {
    (0..200u64).map(|i| (b'a' + (i.wrapping_mul(0x9e37_79b9) >> 7) as u8 % 26) as char).collect()
}

fn chunk(content: &str) -> String {
    let event = serde_json::json!({"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "m",
        "choices": [{"index": 0, "delta": {"content": content}, "finish_reason": null}]});
    format!("data: {event}\n\n")
}

/// What the server saw of the chanting reply.
#[derive(Default)]
struct Seen {
    sent: AtomicU64,
    closed: Mutex<Option<u64>>,
    requests: AtomicUsize,
    bodies: Mutex<Vec<String>>,
}

/// Serves one connection: a chanting stream for the first request, a short answer after.
async fn serve(mut socket: tokio::net::TcpStream, seen: Arc<Seen>) {
    let mut request = Vec::new();
    let mut buffer = [0u8; 65536];
    // The request: headers, then its content-length of body.
    loop {
        let n = socket.read(&mut buffer).await.unwrap_or(0);
        if n == 0 {
            return;
        }
        request.extend_from_slice(&buffer[..n]);
        let text = String::from_utf8_lossy(&request).to_string();
        if let Some(end) = text.find("\r\n\r\n") {
            let length = text
                .lines()
                .find_map(|l| {
                    l.to_ascii_lowercase()
                        .strip_prefix("content-length:")
                        .map(|v| v.trim().parse::<usize>().unwrap_or(0))
                })
                .unwrap_or(0);
            if request.len() >= end + 4 + length {
                seen.bodies.lock().unwrap().push(text[end + 4..].to_owned());
                break;
            }
        }
    }
    let first = seen.requests.fetch_add(1, Ordering::SeqCst) == 0;
    let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n";
    if socket.write_all(head.as_bytes()).await.is_err() {
        return;
    }
    if !first {
        let answer = format!(
            "{}{}data: [DONE]\n\n",
            chunk("The report is in section two."),
            "data: {\"id\":\"c2\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n"
        );
        let _ = socket.write_all(answer.as_bytes()).await;
        return;
    }
    let event = chunk(&block());
    for copy in 0..COPIES {
        let intro = if copy == 0 { chunk("Let me quote the report. ") } else { String::new() };
        let bytes = format!("{intro}{event}");
        // Paced, as a model generates: what is sent is what the client could read.
        tokio::time::sleep(Duration::from_millis(2)).await;
        if socket.write_all(bytes.as_bytes()).await.is_err() || socket.flush().await.is_err() {
            *seen.closed.lock().unwrap() = Some(seen.sent.load(Ordering::SeqCst));
            return;
        }
        seen.sent.fetch_add(bytes.len() as u64, Ordering::SeqCst);
    }
}

#[tokio::test]
async fn a_chanting_stream_is_cut_within_ten_copies_and_the_run_recovers() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    let seen = Arc::new(Seen::default());
    let server_seen = Arc::clone(&seen);
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            tokio::spawn(serve(socket, Arc::clone(&server_seen)));
        }
    });
    let provider = OpenAiClient::new(ClientConfig::custom("m", &url, Some("sk-test"))).unwrap();
    let config = GuardrailsConfig::default();
    let mut builder = Run::builder(LoopConfig::default()).user("Where is the answer?");
    for guard in default_stack(&config) {
        builder = builder.boxed_guard(guard);
    }
    let mut run = builder.build().unwrap();
    let (sink, events) = looprail_tests::collector();
    let driver = Driver::new(Arc::new(provider), ToolSet::new())
        .streaming(true)
        .with_events(sink)
        .with_reply_watch(Arc::new(DegenerateReplies::new(config.degenerate_reply.clone())));
    let outcome = driver.drive(&mut run).await.unwrap();

    // The model, nudged, answered.
    assert_eq!(outcome.final_text, "The report is in section two.");
    assert_eq!(seen.requests.load(Ordering::SeqCst), 2, "one chanting reply, one answer: no continuation");
    // The chanting stream was cut within ten copies of the block (in bytes sent, SSE framing
    // included), and its connection closed.
    let per_copy = chunk(&block()).len() as u64;
    let intro = chunk("Let me quote the report. ").len() as u64;
    let mut closed = None;
    for _ in 0..200 {
        closed = *seen.closed.lock().unwrap();
        if closed.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let sent = closed.expect("the server saw the connection close");
    // Ten copies read, and at most the one being written when the client let go.
    assert!(sent <= intro + 11 * per_copy, "sent {sent} bytes: {} copies", (sent - intro) / per_copy);
    // The reply was kept to one copy, and the next request carried the nudge.
    let first = run.messages().iter().find(|m| m.role == Role::Assistant).unwrap();
    assert_eq!(first.joined_text().unwrap().len(), "Let me quote the report. ".len() + 200);
    let bodies = seen.bodies.lock().unwrap();
    assert!(bodies[1].contains("kept repeating the same text"), "{}", &bodies[1][..bodies[1].len().min(600)]);
    assert!(bodies[1].contains(&block()[100..]), "the recovery quotes what was repeated");
    let events = events.lock().unwrap();
    let degenerate =
        events.iter().find(|e| e.name() == "agent.reply.degenerate").expect("the event names it");
    assert!(matches!(degenerate, Event::DegenerateReply { period: 200, .. }), "{degenerate:?}");
    // A first degenerate reply is recovered from: no rung of the ladder, the run goes on.
    assert!(events.iter().any(|e| matches!(e, Event::LoopDetected { detector, level, .. } if detector == "degenerate_reply" && level == "recovery")));
    assert!(!events.iter().any(|e| e.name() == "agent.guardrail.escalated"));
    assert!(!events.iter().any(|e| e.name() == "agent.max_tokens.continuation"));
}
