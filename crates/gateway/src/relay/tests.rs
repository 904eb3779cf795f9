//! The relay's reader: streams split anywhere, cut, and passed on in whole events.

use super::*;

#[test]
fn a_stream_split_anywhere_assembles_the_same_reply() {
    let response = serde_json::json!({"id": "chatcmpl-9", "created": 1, "model": "m", "choices": [{"index": 0, "finish_reason": "tool_calls",
        "message": {"role": "assistant", "content": "Looking.", "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "search", "arguments": "{\"q\":\"x\"}"}}]}}],
        "usage": {"prompt_tokens": 12, "completion_tokens": 3}});
    let sse = Api::OpenAi.to_stream(&response, true);
    for cut in [1, 7, 64, sse.len()] {
        let mut reader = Reader::new(Api::OpenAi, "m");
        for piece in sse.as_bytes().chunks(cut) {
            reader.feed(piece);
        }
        let reply = reader.finish().unwrap();
        assert_eq!(reply.text.as_deref(), Some("Looking."));
        assert_eq!(reply.tool_calls[0].id, "call_1");
        assert_eq!(usage_of(&reply), (12, 3));
        assert_eq!(reply.id.as_deref(), Some("chatcmpl-9"));
    }
    let mut cut_short = Reader::new(Api::Anthropic, "m");
    cut_short.feed(b"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"model\":\"m\",\"usage\":{\"input_tokens\":5}}}\n\n");
    assert!(cut_short.finish().is_err(), "a stream that ends early is an error, not a reply");
}

#[test]
fn an_event_that_never_ends_stops_the_reading_not_the_relay() {
    let mut reader = Reader::new(Api::OpenAi, "m");
    reader.feed(b"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"");
    let piece = vec![b'a'; 1 << 20];
    for _ in 0..=(MAX_EVENT_BYTES >> 20) {
        reader.feed(&piece);
    }
    assert!(reader.is_done());
    assert!(reader.finish().unwrap_err().contains("MiB"), "an error, the buffer dropped");
    // Passed on, it is held until the reading gives up, then passes whole.
    let mut reader = Reader::new(Api::OpenAi, "m");
    let start = b"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"";
    let mut passed = reader.pass_on(Bytes::from_static(start)).len();
    for _ in 0..(MAX_EVENT_BYTES >> 20) {
        assert_eq!(passed, 0, "held while it may still end");
        passed = reader.pass_on(Bytes::from(piece.clone())).len();
    }
    assert_eq!(passed, start.len() + MAX_EVENT_BYTES, "all of it, once given up");
    assert!(reader.is_done());
}

/// A watch that finds the reply degenerate at the text `STOP`.
struct StopWord;

impl ReplyWatch for StopWord {
    fn text(&mut self, delta: &str) -> Option<Degenerated> {
        delta.contains("STOP").then_some(Degenerated {
            part: looprail_loop_core::watch::WatchedPart::Text,
            keep: 0,
            period: 4,
            repeats: 2,
        })
    }

    fn arguments(&mut self, _index: usize, _delta: &str) -> Option<Degenerated> {
        None
    }
}

/// The end a stream gets when it is cut at its `at`-th event (each event its own piece).
fn end_when_cut(api: Api, events: &[&str], at: usize) -> String {
    let mut reader = Reader::new(api, "m").with_watch(Box::new(StopWord));
    for event in &events[..=at] {
        assert!(reader.cut().is_none(), "not cut before its stop word");
        reader.feed(event.as_bytes());
    }
    reader.cut().expect("cut at the stop word").0
}

#[test]
fn a_cut_streams_end_names_what_every_event_before_it_and_its_own_showed() {
    // The events are read for the end one event late: a cut reads the ones not read yet.
    let openai = [
        "data: {\"id\":\"chatcmpl-7\",\"created\":42,\"model\":\"gpt-x\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"STOP\"}}]}\n\n",
        "data: {\"id\":\"chatcmpl-7\",\"created\":42,\"model\":\"gpt-x\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a STOP\"}}]}\n\n",
    ];
    for at in [0, 1] {
        let end = end_when_cut(Api::OpenAi, &openai[at..], 0);
        assert!(end.contains("\"id\":\"chatcmpl-7\"") && end.contains("\"model\":\"gpt-x\""), "{end}");
        assert!(end.contains("\"created\":42") && end.contains("\"finish_reason\":\"length\""), "{end}");
    }
    let end = end_when_cut(Api::OpenAi, &[openai[0].replace("STOP", "go").as_str(), openai[1]], 1);
    assert!(end.contains("\"id\":\"chatcmpl-7\"") && end.contains("\"created\":42"), "{end}");
    let anthropic = [
        "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_7\",\"model\":\"c\",\"usage\":{\"input_tokens\":5}}}\n\n",
        "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":3,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
        "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":3,\"delta\":{\"type\":\"text_delta\",\"text\":\"STOP\"}}\n\n",
    ];
    let end = end_when_cut(Api::Anthropic, &anthropic, 2);
    assert!(
        end.starts_with("event: content_block_stop\ndata: {\"index\":3,"),
        "the open block is closed: {end}"
    );
    let responses = [
        "event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":0,\"response\":{\"id\":\"resp_7\",\"object\":\"response\"}}\n\n",
        "event: response.output_item.added\ndata: {\"type\":\"response.output_item.added\",\"sequence_number\":1,\"output_index\":0,\"item\":{\"id\":\"msg_9\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[]}}\n\n",
        "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"sequence_number\":2,\"item_id\":\"msg_9\",\"delta\":\"STOP\"}\n\n",
    ];
    let end = end_when_cut(Api::Responses, &responses, 2);
    assert!(
        end.contains("\"resp_7\"") && end.contains("\"msg_9\"") && end.contains("\"sequence_number\":3"),
        "{end}"
    );
}

/// What a whole stream reads as: its reply, or its error, as text.
fn read(api: Api, pieces: &[&[u8]]) -> String {
    let mut reader = Reader::new(api, "m");
    for piece in pieces {
        reader.feed(piece);
    }
    format!("{:?}", reader.finish())
}

proptest::proptest! {
    /// The network cuts a stream anywhere: however its bytes arrive, the reader reads the
    /// same events into the same reply (or the same error), on every API.
    #[test]
    fn a_stream_reads_the_same_however_its_bytes_arrive(
        events in proptest::collection::vec(
            (
                proptest::sample::select(vec!["", "message_start", "content_block_start", "content_block_delta",
                    "message_delta", "message_stop", "response.output_text.delta", "response.completed"]),
                proptest::sample::select(vec![
                    r#"{"choices":[{"index":0,"delta":{"content":"hé"}}]}"#,
                    r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c","function":{"name":"f","arguments":"{}"}}]},"finish_reason":"tool_calls"}]}"#,
                    r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x"}}"#,
                    r#"{"type":"message_delta","delta":{"stop_reason":"end_turn"}}"#,
                    r#"{"type":"response.output_text.delta","delta":"y"}"#,
                    "[DONE]",
                    "not json",
                ]),
                proptest::bool::ANY,
            ),
            0..8,
        ),
        cuts in proptest::collection::vec(1usize..40, 1..20),
        api in proptest::sample::select(vec![Api::OpenAi, Api::Anthropic, Api::Responses]),
    ) {
        let mut sse = String::new();
        for (name, data, crlf) in events {
            let end = if crlf { "\r\n" } else { "\n" };
            if !name.is_empty() {
                sse.push_str(&format!("event: {name}{end}"));
            }
            sse.push_str(&format!("data: {data}{end}{end}"));
        }
        let bytes = sse.as_bytes();
        let mut pieces = Vec::new();
        let mut at = 0;
        for cut in cuts.iter().cycle().take(bytes.len()) {
            if at >= bytes.len() {
                break;
            }
            let end = (at + cut).min(bytes.len());
            pieces.push(&bytes[at..end]);
            at = end;
        }
        proptest::prop_assert_eq!(read(api, &pieces), read(api, &[bytes]));
    }
}

/// Feeds `pieces` through [`Reader::pass_on`]: what passed, piece by piece.
fn passed_on(api: Api, pieces: &[&[u8]]) -> Vec<Bytes> {
    let mut reader = Reader::new(api, "m");
    pieces.iter().map(|piece| reader.pass_on(Bytes::copy_from_slice(piece))).collect()
}

#[test]
fn after_the_terminal_event_everything_that_arrived_passes() {
    let events =
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"}}]}\n\ndata: [DONE]\n\n: trailing";
    let (head, tail) = events.split_at(20);
    let passed = passed_on(Api::OpenAi, &[head.as_bytes(), tail.as_bytes(), b"more"]);
    assert_eq!(passed[0], Bytes::new(), "an event still arriving is held back");
    assert_eq!(passed[1], events.as_bytes(), "the held bytes, the rest and what followed the end");
    assert_eq!(passed[2], &b"more"[..]);
}

proptest::proptest! {
    /// However the network cuts a stream, the client is passed whole events only, all of them,
    /// in order and unchanged; an event cut off by the stream's end never passes.
    #[test]
    fn a_stream_is_passed_on_in_whole_events_however_it_arrives(
        texts in proptest::collection::vec("[a-z \\n:]{0,30}", 1..12),
        cuts in proptest::collection::vec(1usize..50, 1..20),
        crlf in proptest::bool::ANY,
        cut_off in 0usize..40,
    ) {
        let end = if crlf { "\r\n" } else { "\n" };
        let mut sse = String::new();
        for text in &texts {
            let data = serde_json::json!({"choices": [{"index": 0, "delta": {"content": text}}]});
            sse.push_str(&format!("data: {data}{end}{end}"));
        }
        // And the start of one more event, which the stream's end cuts off.
        let partial = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"unfinished\"}}]}";
        let sent = format!("{sse}{}", &partial[..cut_off.min(partial.len())]);
        let bytes = sent.as_bytes();
        let (mut pieces, mut at) = (Vec::new(), 0);
        for cut in cuts.iter().cycle() {
            if at >= bytes.len() {
                break;
            }
            let end = (at + cut).min(bytes.len());
            pieces.push(&bytes[at..end]);
            at = end;
        }
        let passed = passed_on(Api::OpenAi, &pieces);
        for piece in passed.iter().filter(|p| !p.is_empty()) {
            proptest::prop_assert!(whole_events(piece), "{:?}", String::from_utf8_lossy(piece));
        }
        proptest::prop_assert_eq!(passed.concat(), sse.as_bytes());
    }
}
