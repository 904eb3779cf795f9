//! Turns an HTTP body of server-sent events into a [`ResponseStream`] that ends with exactly
//! one [`StreamEvent::Finished`] (F24): after the terminal event, after an error event, after a
//! broken connection, after an idle gap longer than the timeout, or when the body ends without
//! a terminal event.

use std::collections::VecDeque;
use std::pin::Pin;
use std::time::Duration;

use eventsource_stream::Eventsource;
use futures_util::{Stream, StreamExt};
use looprail_loop_core::provider::{
    ModelResponse, ProviderError, ProviderErrorKind, ResponseStream, StreamEvent,
};

/// What a wire format does with one event.
pub enum Step {
    /// Deltas to pass on; the stream goes on.
    Continue(Vec<StreamEvent>),
    /// The stream is over with this result.
    Done(Result<ModelResponse, ProviderError>),
}

/// A wire format's stream parser: feed it events, it returns deltas or the end.
pub trait SseParser: Send + 'static {
    /// One event: its `event:` name (may be empty) and its `data:`.
    fn event(&mut self, name: &str, data: &str) -> Step;
    /// The body ended without a terminal event.
    fn end_of_body(&mut self) -> Result<ModelResponse, ProviderError>;

    /// The text of every [`StreamEvent::TextDelta`] returned so far, in order, when the parser
    /// keeps it (`None` when it does not): what a relay that ends a stream early tells the
    /// client had, without a copy of its own.
    fn text_so_far(&self) -> Option<&str> {
        None
    }
}

/// Parsed SSE events, as [`drive_events`] takes them.
pub type Events = Pin<Box<dyn Stream<Item = Result<eventsource_stream::Event, String>> + Send>>;

struct State<P> {
    events: Events,
    parser: P,
    queue: VecDeque<StreamEvent>,
    finished: bool,
    idle: Duration,
}

/// Drives `parser` over the SSE body of `response`.
pub(crate) fn drive<P: SseParser>(response: reqwest::Response, parser: P, idle: Duration) -> ResponseStream {
    let events: Events =
        Box::pin(response.bytes_stream().eventsource().map(|item| item.map_err(|e| e.to_string())));
    drive_events(events, parser, idle)
}

/// Drives `parser` over any stream of parsed SSE events (errors as text).
pub fn drive_events<P: SseParser>(events: Events, parser: P, idle: Duration) -> ResponseStream {
    let state = State { events, parser, queue: VecDeque::new(), finished: false, idle };
    Box::pin(futures_util::stream::unfold(state, |mut state| async move {
        loop {
            if let Some(item) = state.queue.pop_front() {
                return Some((item, state));
            }
            if state.finished {
                return None;
            }
            let next = tokio::time::timeout(state.idle, state.events.next()).await;
            let step = match next {
                Err(_) => Step::Done(Err(ProviderError::new(
                    ProviderErrorKind::Timeout,
                    format!("no stream data for {:?}", state.idle),
                ))),
                Ok(None) => Step::Done(state.parser.end_of_body()),
                Ok(Some(Err(error))) => Step::Done(Err(ProviderError::new(
                    ProviderErrorKind::StreamBroken,
                    format!("the stream broke: {error}"),
                ))),
                Ok(Some(Ok(event))) => state.parser.event(&event.event, &event.data),
            };
            match step {
                Step::Continue(items) => state.queue.extend(items),
                Step::Done(result) => {
                    state.finished = true;
                    state.queue.push_back(StreamEvent::Finished(result));
                }
            }
        }
    }))
}

/// Parses a whole SSE body held in memory with `parser` (recorded streams, benchmarks).
pub async fn parse_body<P: SseParser>(body: Vec<u8>, parser: P) -> Result<ModelResponse, ProviderError> {
    // Fed in 4 KiB pieces, as a network delivers it.
    let pieces: Vec<Result<Vec<u8>, std::convert::Infallible>> =
        body.chunks(4096).map(|c| Ok(c.to_vec())).collect();
    let bytes = futures_util::stream::iter(pieces);
    let events: Events = Box::pin(bytes.eventsource().map(|item| item.map_err(|e| e.to_string())));
    collect(drive_events(events, parser, Duration::from_secs(3600))).await
}

/// Collects a stream into its final result (for `complete` over a streaming-only server and
/// for tests).
pub async fn collect(mut stream: ResponseStream) -> Result<ModelResponse, ProviderError> {
    while let Some(item) = stream.next().await {
        if let StreamEvent::Finished(result) = item {
            return result;
        }
    }
    Err(ProviderError::new(ProviderErrorKind::StreamBroken, "the stream ended without a finished signal"))
}
