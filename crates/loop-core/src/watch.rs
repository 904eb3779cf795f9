//! Watching a reply while it arrives (B14): the seam for a degenerate-reply detector.
//!
//! A [`ReplyWatch`] reads each piece of a reply's text, and of each call's arguments, as it
//! streams, and says when the reply has degenerated (the same text again and again). The
//! [`Driver`](crate::Driver) then stops reading: the stream is dropped, which closes the HTTP
//! body, so the provider stops generating (and billing); the engine gets the reply cut where the
//! repetition began, with [`StopReason::Degenerate`](crate::provider::StopReason::Degenerate),
//! and the guards react to it like to a loop (a nudge on the next turn; repeated degenerate
//! replies climb the ladder). A complete (non-streamed) reply is read the same way once it is
//! in. `looprail-guardrails` provides the detector (`repetition`); the engine knows none.
//!
//! ```
//! use looprail_loop_core::watch::{Degenerated, ReplyWatch, WatchReplies, WatchedPart};
//!
//! /// Flags a reply once its text holds "again again again".
//! struct Naive(String);
//! impl ReplyWatch for Naive {
//!     fn text(&mut self, delta: &str) -> Option<Degenerated> {
//!         self.0.push_str(delta);
//!         let at = self.0.find("again again again")?;
//!         Some(Degenerated { part: WatchedPart::Text, keep: at as u64 + 6, period: 6, repeats: 3 })
//!     }
//!     fn arguments(&mut self, _index: usize, _delta: &str) -> Option<Degenerated> {
//!         None
//!     }
//! }
//! struct Factory;
//! impl WatchReplies for Factory {
//!     fn watch(&self) -> Box<dyn ReplyWatch> {
//!         Box::new(Naive(String::new()))
//!     }
//! }
//! let mut watch = Factory.watch();
//! assert!(watch.text("say it ").is_none());
//! assert_eq!(watch.text("again again again").unwrap().keep, 13);
//! ```

use serde::{Deserialize, Serialize};

/// Which part of a reply degenerated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "part", rename_all = "snake_case")]
pub enum WatchedPart {
    /// Its text.
    Text,
    /// The arguments of its call at `index` (in the reply's order).
    Arguments {
        /// The call's index.
        index: usize,
    },
}

/// A degenerate reply: what to keep of the part that degenerated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Degenerated {
    /// The part.
    pub part: WatchedPart,
    /// Bytes of it to keep: up to where the repetition began (one copy kept).
    pub keep: u64,
    /// The repeated block's length in bytes.
    pub period: u32,
    /// Copies of it seen.
    pub repeats: u32,
}

/// Reads one reply as it arrives.
pub trait ReplyWatch: Send {
    /// The next piece of the reply's text; `Some` once the text has degenerated.
    fn text(&mut self, delta: &str) -> Option<Degenerated>;

    /// The next piece of the arguments of the call at `index`; `Some` once they have.
    fn arguments(&mut self, index: usize, delta: &str) -> Option<Degenerated>;
}

/// Makes a [`ReplyWatch`] for each reply.
pub trait WatchReplies: Send + Sync {
    /// A watch for the next reply.
    fn watch(&self) -> Box<dyn ReplyWatch>;
}

/// `text` cut to its first `keep` bytes, on a character boundary.
pub fn cut(text: &str, keep: u64) -> &str {
    let mut at = usize::try_from(keep).unwrap_or(usize::MAX).min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    &text[..at]
}

/// Reads a streamed reply to its end, or, when `watch` finds it degenerate, to that point:
/// the stream is then dropped (the provider's HTTP body with it) and the reply built from what
/// was read, the degenerate part cut. Text deltas are published on `events` as they come.
pub(crate) async fn read_stream(
    mut stream: crate::provider::ResponseStream,
    mut watch: Option<Box<dyn ReplyWatch>>,
    events: &crate::event::EventSink,
    model: &str,
) -> Result<crate::provider::ModelResponse, crate::provider::ProviderError> {
    use crate::event::Event;
    use crate::provider::{ProviderError, ProviderErrorKind, StreamEvent};
    use futures_util::StreamExt;

    let mut text = String::new();
    let mut calls: Vec<(Option<String>, Option<String>, String)> = Vec::new();
    while let Some(item) = stream.next().await {
        let found = match item {
            StreamEvent::TextDelta(delta) => {
                text.push_str(&delta);
                let found = watch.as_mut().and_then(|w| w.text(&delta));
                events.emit(&Event::TextDelta { text: delta });
                found
            }
            StreamEvent::ToolCallDelta { index, id, name, arguments } => {
                if calls.len() <= index {
                    calls.resize(index + 1, (None, None, String::new()));
                }
                let call = &mut calls[index];
                call.0 = call.0.take().or(id);
                call.1 = call.1.take().or(name);
                call.2.push_str(&arguments);
                watch.as_mut().and_then(|w| w.arguments(index, &arguments))
            }
            // The first finished signal ends the call; anything after it is ignored (F24).
            StreamEvent::Finished(result) => return result,
        };
        if let Some(found) = found {
            drop(stream);
            let read = match found.part {
                WatchedPart::Text => text.len(),
                WatchedPart::Arguments { index } => calls.get(index).map_or(0, |c| c.2.len()),
            };
            let response = degenerate_reply(model, &text, found);
            announce(events, found, read as u64);
            return Ok(response);
        }
    }
    Err(ProviderError::new(ProviderErrorKind::StreamBroken, "the stream ended without a finished signal"))
}

/// Reads a complete reply with `watch` as if it had streamed (its text, then each call's
/// arguments): what degenerated, if anything, and how many bytes of that part there were.
///
/// ```
/// use looprail_loop_core::provider::ModelResponse;
/// use looprail_loop_core::watch::{inspect, Degenerated, ReplyWatch, WatchedPart};
///
/// struct Echoes;
/// impl ReplyWatch for Echoes {
///     fn text(&mut self, delta: &str) -> Option<Degenerated> {
///         let at = delta.find("echo echo echo")?;
///         Some(Degenerated { part: WatchedPart::Text, keep: at as u64 + 5, period: 5, repeats: 3 })
///     }
///     fn arguments(&mut self, _index: usize, _delta: &str) -> Option<Degenerated> {
///         None
///     }
/// }
/// let reply = ModelResponse::text("m", "hello echo echo echo");
/// let (found, read) = inspect(&reply, &mut Echoes).unwrap();
/// assert_eq!((found.keep, read), (11, 20));
/// assert!(inspect(&ModelResponse::text("m", "hello"), &mut Echoes).is_none());
/// ```
pub fn inspect(
    response: &crate::provider::ModelResponse,
    watch: &mut dyn ReplyWatch,
) -> Option<(Degenerated, u64)> {
    let found = response.text.as_deref().and_then(|t| watch.text(t)).or_else(|| {
        response
            .tool_calls
            .iter()
            .enumerate()
            .find_map(|(index, call)| watch.arguments(index, &call.arguments))
    })?;
    let read = match found.part {
        WatchedPart::Text => response.text.as_deref().map_or(0, str::len),
        WatchedPart::Arguments { index } => response.tool_calls.get(index).map_or(0, |c| c.arguments.len()),
    };
    Some((found, read as u64))
}

/// A complete reply read by `watch` as if it had streamed: the same reply, or, degenerate, cut.
pub(crate) fn check_complete(
    response: crate::provider::ModelResponse,
    mut watch: Box<dyn ReplyWatch>,
    events: &crate::event::EventSink,
) -> crate::provider::ModelResponse {
    let Some((found, read)) = inspect(&response, watch.as_mut()) else { return response };
    announce(events, found, read);
    crate::provider::ModelResponse {
        usage: response.usage,
        id: response.id.clone(),
        ..degenerate_reply(&response.model, response.text.as_deref().unwrap_or_default(), found)
    }
}

/// The reply a degenerate one becomes: its `text` up to the repetition (or whole, when the
/// arguments degenerated), no calls (a call cut short cannot run, and the calls of a reply
/// that degenerated are not trusted), and [`StopReason::Degenerate`](crate::provider::StopReason::Degenerate).
///
/// ```
/// use looprail_loop_core::provider::StopReason;
/// use looprail_loop_core::watch::{degenerate_reply, Degenerated, WatchedPart};
///
/// let found = Degenerated { part: WatchedPart::Text, keep: 9, period: 4, repeats: 10 };
/// let reply = degenerate_reply("m", "Let me: nono no", found);
/// assert_eq!((reply.text.as_deref(), reply.stop_reason), (Some("Let me: n"), StopReason::Degenerate));
/// ```
pub fn degenerate_reply(model: &str, text: &str, found: Degenerated) -> crate::provider::ModelResponse {
    let text = match found.part {
        WatchedPart::Text => cut(text, found.keep),
        WatchedPart::Arguments { .. } => text,
    };
    crate::provider::ModelResponse {
        text: Some(text.to_owned()).filter(|t| !t.is_empty()),
        tool_calls: Vec::new(),
        stop_reason: crate::provider::StopReason::Degenerate,
        usage: None,
        model: model.to_owned(),
        id: None,
    }
}

fn announce(events: &crate::event::EventSink, found: Degenerated, read: u64) {
    let part = match found.part {
        WatchedPart::Text => "text".to_owned(),
        WatchedPart::Arguments { index } => format!("arguments of call {index}"),
    };
    events.emit(&crate::event::Event::DegenerateReply {
        part,
        period: found.period,
        repeats: found.repeats,
        kept_bytes: found.keep,
        read_bytes: read,
    });
}
