//! Relaying an upstream event stream to the client as it arrives: every whole event is passed
//! on at once (the bytes of one still arriving are held until it ends), and the same bytes are
//! read by the providers' stream parsers, so when the stream ends the gateway knows the reply it
//! carried (its tokens, its fingerprint, what to record). A stream that breaks is ended with the
//! API's own error event, never left hanging, and never glued to half an event.

use axum::body::Bytes;
use looprail_loop_core::message::Message;
use looprail_loop_core::provider::{ModelResponse, StreamEvent};
use looprail_loop_core::watch::{Degenerated, ReplyWatch};
use looprail_providers::sse::{SseParser, Step};

mod event;

use event::{event_fields, find_event_end};
pub use event::{may_end, whole_events};

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

    /// The API whose stream this reads.
    pub fn api(&self) -> Api {
        self.api
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
        // The parser's text when it keeps one (the relay's own copy is kept only otherwise).
        let text = self.parser.get().text_so_far().unwrap_or(&self.so_far.text);
        let text = Some(text.to_owned()).filter(|t| !t.is_empty());
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
                    if self.parser.get().text_so_far().is_none() {
                        self.so_far.text.push_str(&text);
                    }
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

    /// Reads the next piece of the stream and returns what the client may have now: whole
    /// events only. The bytes of an event still arriving are held back until it ends (the
    /// network splits a stream anywhere), so whatever the gateway ends a stream with, a cut's
    /// end or an error event, follows a whole event. Once the stream's end has been read,
    /// everything that arrived passes.
    pub fn pass_on(&mut self, piece: Bytes) -> Bytes {
        let held = self.in_flight();
        if held == 0 {
            self.feed(&piece);
            let in_flight = self.in_flight();
            return piece.slice(..piece.len() - in_flight);
        }
        // An event began in an earlier piece: its bytes so far pass with this piece's if it ends
        // here, or if the reading gives up on it. They are copied only then: an event of
        // megabytes (a Responses stream's last) arrives in many pieces.
        let straddling = [&self.buffer[held.saturating_sub(3)..], &piece[..piece.len().min(3)]].concat();
        let passes = find_event_end(&piece).is_some()
            || find_event_end(&straddling).is_some()
            || held + piece.len() > MAX_EVENT_BYTES;
        if !passes {
            self.feed(&piece);
            return Bytes::new();
        }
        let mut out = self.buffer.clone();
        self.feed(&piece);
        let in_flight = self.in_flight();
        if in_flight >= held + piece.len() {
            return Bytes::new();
        }
        out.extend_from_slice(&piece[..piece.len() - in_flight]);
        Bytes::from(out)
    }

    /// The bytes of an event still arriving, not passed on (none once the stream's end was read).
    fn in_flight(&self) -> usize {
        if self.done.is_some() { 0 } else { self.buffer.len() }
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
mod tests;
