//! Relaying an upstream event stream to the client as it arrives: every byte is passed on at
//! once, and the same bytes are read by the providers' stream parsers, so when the stream ends
//! the gateway knows the reply it carried (its tokens, its fingerprint, what to record). A
//! stream that breaks is ended with the API's own error event, never left hanging.

use looprail_loop_core::message::Message;
use looprail_loop_core::provider::{ModelResponse, StreamEvent};
use looprail_loop_core::watch::{Degenerated, ReplyWatch};
use looprail_providers::sse::{SseParser, Step};

use crate::wire::Api;
use crate::wire::cut::StreamSoFar;
use crate::wire::responses::StreamParser;

/// Splits SSE bytes into events and feeds them to the API's parser.
pub struct Reader {
    api: Api,
    parser: Parser,
    buffer: Vec<u8>,
    /// How much of `buffer` is known to hold no event end (so each byte is scanned about
    /// once, however small the pieces an event arrives in).
    scanned: usize,
    done: Option<Result<ModelResponse, String>>,
    /// Reads the reply as it comes, for a degenerate one (B14).
    watch: Option<Box<dyn ReplyWatch>>,
    /// Set once the reply degenerated: the stream is to be ended.
    degenerated: Option<Degenerated>,
    /// What the stream showed so far, for the events that end it early.
    so_far: StreamSoFar,
    /// The last event (name, data), not read by `so_far` yet: it is read one event late (or
    /// when the end is asked for), so a piece's bytes leave without waiting for that parse.
    unobserved: Option<(String, String)>,
}

/// The most an event may hold before the stream is taken for broken (the largest real ones,
/// a Responses stream's last event with the whole response, are a few megabytes): the bytes
/// still go to the client, but the gateway stops buffering them.
const MAX_EVENT_BYTES: usize = 64 << 20;

/// The API's stream parser: the providers' for their APIs, the gateway's own for Responses
/// (which keeps the whole response its terminal event carried).
enum Parser {
    Provider(Box<dyn SseParser>),
    Responses(StreamParser),
}

impl Parser {
    fn get(&mut self) -> &mut dyn SseParser {
        match self {
            Parser::Provider(parser) => parser.as_mut(),
            Parser::Responses(parser) => parser,
        }
    }
}

impl Reader {
    /// A reader for a stream of `api` from `model`.
    pub fn new(api: Api, model: &str) -> Self {
        let parser = match api {
            Api::OpenAi => Parser::Provider(Box::new(looprail_providers::openai::ChunkParser::new(model))),
            Api::Anthropic => {
                Parser::Provider(Box::new(looprail_providers::anthropic::EventParser::new(model)))
            }
            Api::Responses => Parser::Responses(StreamParser::new(model)),
        };
        Self {
            api,
            parser,
            buffer: Vec::new(),
            scanned: 0,
            done: None,
            watch: None,
            degenerated: None,
            so_far: StreamSoFar::default(),
            unobserved: None,
        }
    }

    /// Reads the reply with `watch` as it comes: once it degenerates, [`Reader::degenerated`]
    /// says so and the relay ends the stream.
    #[must_use]
    pub fn with_watch(mut self, watch: Box<dyn ReplyWatch>) -> Self {
        self.watch = Some(watch);
        self
    }

    /// Whether the reply degenerated (B14).
    pub fn degenerated(&self) -> Option<Degenerated> {
        self.degenerated
    }

    /// For a reply that degenerated: the events that end its stream now, and the reply the
    /// client has (its text as received, its calls dropped, as the end says).
    pub fn cut(&mut self) -> Option<(String, Message)> {
        self.degenerated?;
        self.observe_unobserved();
        let text = Some(self.so_far.text.clone()).filter(|t| !t.is_empty());
        Some((self.so_far.end(self.api), Message::assistant_with_calls(text, Vec::new())))
    }

    /// Lets `so_far` read the event it has not read yet.
    fn observe_unobserved(&mut self) {
        if let Some((name, data)) = self.unobserved.take() {
            self.so_far.observe(self.api, &name, &data);
        }
    }

    /// The deltas of one event: the text the client receives, read by the watch.
    fn deltas(&mut self, deltas: Vec<StreamEvent>) {
        for delta in deltas {
            let found = match delta {
                StreamEvent::TextDelta(text) => {
                    self.so_far.text.push_str(&text);
                    self.watch.as_mut().and_then(|w| w.text(&text))
                }
                StreamEvent::ToolCallDelta { index, arguments, .. } => {
                    self.watch.as_mut().and_then(|w| w.arguments(index, &arguments))
                }
                StreamEvent::Finished(_) => None,
            };
            if let Some(found) = found {
                self.degenerated.get_or_insert(found);
                // The rest of what arrived is the client's too, but no longer watched.
                self.watch = None;
            }
        }
    }

    /// Reads the next bytes of the stream.
    pub fn feed(&mut self, bytes: &[u8]) {
        if self.done.is_some() {
            return;
        }
        self.buffer.extend_from_slice(bytes);
        while self.done.is_none() {
            // A separator may straddle the last piece's end: look back three bytes.
            let from = self.scanned.saturating_sub(3);
            let Some((length, separator)) = find_event_end(&self.buffer[from..]) else {
                self.scanned = self.buffer.len();
                if self.buffer.len() > MAX_EVENT_BYTES {
                    self.buffer = Vec::new();
                    self.done = Some(Err(format!("an upstream event passed {} MiB", MAX_EVENT_BYTES >> 20)));
                }
                break;
            };
            self.scanned = 0;
            let (name, data) = event_fields(&self.buffer[..from + length]);
            self.buffer.drain(..from + length + separator);
            let Some(data) = data else { continue };
            self.observe_unobserved();
            let step = self.parser.get().event(&name, &data);
            self.unobserved = Some((name, data));
            match step {
                Step::Done(result) => self.done = Some(result.map_err(|e| e.to_string())),
                Step::Continue(deltas) => self.deltas(deltas),
            }
        }
    }

    /// On the Responses API, the whole response the stream's terminal event carried (its
    /// output items are what a client continuing it by id had).
    pub fn take_response(&mut self) -> Option<serde_json::Value> {
        match &mut self.parser {
            Parser::Responses(parser) => parser.take_response(),
            Parser::Provider(_) => None,
        }
    }

    /// True once the stream's terminal event was read.
    pub fn is_done(&self) -> bool {
        self.done.is_some()
    }

    /// The reply the stream carried, once it is over (`end_of_body` when it ended without a
    /// terminal event).
    pub fn finish(mut self) -> Result<ModelResponse, String> {
        match self.done.take() {
            Some(result) => result,
            None => self.parser.get().end_of_body().map_err(|e| e.to_string()),
        }
    }
}

/// An event's name (empty when it has none) and its data lines joined (`None` when it has
/// none: a comment, a keep-alive), read from its bytes (without the blank line ending it).
fn event_fields(event: &[u8]) -> (String, Option<String>) {
    let text = String::from_utf8_lossy(event);
    let (mut name, mut data) = (String::new(), None::<String>);
    for line in text.lines() {
        if let Some(value) = line.strip_prefix("event:") {
            name = value.trim().to_owned();
        } else if let Some(value) = line.strip_prefix("data:") {
            let value = value.strip_prefix(' ').unwrap_or(value);
            match &mut data {
                Some(data) => {
                    data.push('\n');
                    data.push_str(value);
                }
                None => data = Some(value.to_owned()),
            }
        }
    }
    (name, data)
}

/// Where the first complete event ends: (its length, the separator's length).
fn find_event_end(buffer: &[u8]) -> Option<(usize, usize)> {
    let lf = buffer.windows(2).position(|w| w == b"\n\n").map(|i| (i, 2));
    let crlf = buffer.windows(4).position(|w| w == b"\r\n\r\n").map(|i| (i, 4));
    match (lf, crlf) {
        (Some(a), Some(b)) => Some(if a.0 <= b.0 { a } else { b }),
        (a, b) => a.or(b),
    }
}

/// The assistant message of an assembled reply, as the client will echo it.
pub fn message_of(response: &ModelResponse) -> Message {
    Message::assistant_with_calls(
        response.text.clone().filter(|t| !t.is_empty()),
        response.tool_calls.clone(),
    )
}

/// The usage of an assembled reply as `(input, output)`.
pub fn usage_of(response: &ModelResponse) -> (u64, u64) {
    response.usage.map_or((0, 0), |u| (u.input_tokens, u.output_tokens))
}

#[cfg(test)]
mod tests {
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

    #[test]
    fn an_events_data_lines_are_joined_and_an_event_without_data_is_none() {
        let event = b": a comment\r\nevent:  message_start \r\ndata: {\"a\":\r\ndata:1}\r\nid: 7";
        assert_eq!(event_fields(event), ("message_start".to_owned(), Some("{\"a\":\n1}".to_owned())));
        assert_eq!(event_fields(b"data:x\ndata: y\ndata:"), (String::new(), Some("x\ny\n".to_owned())));
        assert_eq!(event_fields(b": keep-alive\nevent: ping"), ("ping".to_owned(), None));
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
}
