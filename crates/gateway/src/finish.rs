//! The end of a chat request: relaying the upstream's stream and, once the reply is known,
//! counting its tokens, recording the conversation and storing its state (with the
//! fingerprint the client's next request will be known by, and a Responses reply's link).

use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::http::Response;
use looprail_loop_core::json_text::json_text;
use looprail_loop_core::message::Message;
use serde_json::Value;

use crate::Gateway;
use crate::conversation::ConversationState;
use crate::conversation::Spent;
use crate::identity;
use crate::respond::reply;
use crate::response_chain::{Link, response_key};
use crate::save::{Recording, Save};
use crate::wire::Api;
use crate::wire::responses::{ItemKind, model_item_id};

/// Reads the rest of an upstream body whose terminal event has been relayed (normally only the
/// body's end), behind the answer, for at most [`DRAIN_TIME`] and [`DRAIN_BYTES`].
///
/// Dropped unread instead, an HTTP/2 stream is reset (`CANCEL`), and frames the upstream sent
/// before it learnt of the reset can arrive for a stream h2 no longer keeps; h2 answers those
/// with resets of its own, which it counts, and past 1,024 on one connection it closes the
/// connection, every stream on it broken. On the driven HTTP/1 path
/// reading to the end also puts the connection back in the pool.
///
/// [`DRAIN_TIME`]: crate::http1_pool::DRAIN_TIME
/// [`DRAIN_BYTES`]: crate::http1_pool::DRAIN_BYTES
fn read_out<S>(mut upstream: S)
where
    S: futures_util::Stream<Item = reqwest::Result<Bytes>> + Send + Unpin + 'static,
{
    let mut rest = Box::pin(async move {
        let mut read = 0;
        while let Some(Ok(piece)) = futures_util::StreamExt::next(&mut upstream).await {
            read += piece.len();
            if read > crate::http1_pool::DRAIN_BYTES {
                return;
            }
        }
    });
    // What has arrived already (usually the body's end, in the terminal event's read) is read
    // here: a task is spawned only for a rest still to come.
    if futures_util::FutureExt::now_or_never(rest.as_mut()).is_some() {
        return;
    }
    let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
    runtime.spawn(async move {
        let _ = tokio::time::timeout(crate::http1_pool::DRAIN_TIME, rest).await;
    });
}

impl Gateway {
    /// Passes the upstream's event stream to the client as it arrives and, when it ends, counts
    /// the reply it carried and stores the conversation. A stream that breaks ends with the
    /// API's error event.
    pub(crate) fn relay(
        self: &Arc<Self>,
        done: Done,
        model: &str,
        response: reqwest::Response,
    ) -> Response<Body> {
        let id = done.state.id.clone();
        let reader = crate::relay::Reader::new(done.api, model);
        let reader = match self.gate.reply_watch() {
            Some(watch) => reader.with_watch(watch),
            None => reader,
        };
        // Set at a cut: the upstream connection then closes instead of being read on for reuse.
        let close = response.extensions().get::<crate::http1_pool::CloseOnDrop>().cloned();
        let upstream = Box::pin(response.bytes_stream());
        // What the relay carries from piece to piece is boxed, and the stores' futures of its
        // last piece too: each piece's future is built anew and moved whole.
        let start =
            (Some(upstream), Some(Box::new((reader, done, Arc::clone(self)))), 0_usize, None::<Bytes>);
        let events = futures_util::stream::unfold(start, move |(upstream, open, relayed, unread)| {
            let close = close.clone();
            async move {
                let mut open = open?;
                let mut upstream = upstream?;
                if relayed == 1 {
                    // The first piece leaves before the next is read: hyper writes what the body
                    // gave only once the body waits, and an upstream's events that came in one read
                    // would otherwise all be parsed (the last one's save begun) before any left.
                    // (Not tokio's yield: the connection, polled in rounds, polls again at once.)
                    crate::poll_rounds::pending_once().await;
                }
                if let Some(piece) = unread {
                    // The first piece, sent before it was read (whole events that could not end the
                    // stream): it is read now that it has left, before the next piece is taken.
                    open.0.pass_on(piece);
                    if let Some((end, received)) = open.0.cut() {
                        // Closed at the cut, so the model stops generating (and billing) now.
                        close.iter().for_each(crate::http1_pool::CloseOnDrop::set);
                        drop(upstream);
                        let (_, done, gateway) = *open;
                        Box::pin(gateway.cut(done, received)).await;
                        return Some((Ok(Bytes::from(end)), (None, None, relayed, None)));
                    }
                    if open.0.is_done() {
                        // Only a malformed event ends a stream here: it is stored as it ended.
                        read_out(upstream);
                        let (reader, done, gateway) = *open;
                        Box::pin(gateway.complete(reader, done)).await;
                        return None;
                    }
                }
                let relayed = relayed + 1;
                let mut first = relayed == 1;
                loop {
                    let bytes = match futures_util::StreamExt::next(&mut upstream).await {
                        Some(Ok(bytes)) => bytes,
                        Some(Err(e)) => {
                            // What the client has ends with a whole event: the error event follows.
                            let (_, done, gateway) = *open;
                            let api = done.api;
                            Box::pin(gateway.save(Save::state_only(done))).await;
                            let error = api.stream_error(&format!("upstream stream broke: {e}"));
                            return Some((Ok(Bytes::from(error)), (None, None, relayed, None)));
                        }
                        None => {
                            let (reader, done, gateway) = *open;
                            Box::pin(gateway.complete(reader, done)).await;
                            return None;
                        }
                    };
                    if std::mem::take(&mut first)
                        && !bytes.is_empty()
                        && crate::relay::whole_events(&bytes)
                        && !crate::relay::may_end(open.0.api(), &bytes)
                    {
                        // The client's first byte does not wait for the gateway's reading of it.
                        return Some((Ok(bytes.clone()), (Some(upstream), Some(open), relayed, Some(bytes))));
                    }
                    let passed = open.0.pass_on(bytes);
                    if let Some((end, received)) = open.0.cut() {
                        // The reply repeats itself (B14): the client gets the whole events that
                        // arrived and an end as by the output limit; the upstream's body is dropped
                        // here, before the save, so the model stops generating.
                        close.iter().for_each(crate::http1_pool::CloseOnDrop::set);
                        drop(upstream);
                        let (_, done, gateway) = *open;
                        Box::pin(gateway.cut(done, received)).await;
                        let mut out = passed.to_vec();
                        out.extend_from_slice(end.as_bytes());
                        return Some((Ok(Bytes::from(out)), (None, None, relayed, None)));
                    }
                    if !open.0.is_done() {
                        if passed.is_empty() {
                            continue; // an event still arriving: nothing to pass on yet
                        }
                        return Some((
                            Ok::<Bytes, std::io::Error>(passed),
                            (Some(upstream), Some(open), relayed, None),
                        ));
                    }
                    // The terminal event: the conversation is saved (or its save begun, see
                    // `write_behind`) before the client sees it, so its next request finds it.
                    read_out(upstream);
                    let (reader, done, gateway) = *open;
                    Box::pin(gateway.complete(reader, done)).await;
                    return Some((Ok(passed), (None, None, relayed, None)));
                }
            }
        });
        let mut response = reply(200, "text/event-stream", Body::from_stream(events), Some(&id));
        response.headers_mut().insert("cache-control", axum::http::HeaderValue::from_static("no-cache"));
        response
    }

    /// Stores a reply cut for repeating itself: as the client has it, the conversation's guards
    /// told to climb the ladder with its next request.
    pub(crate) async fn cut(self: &Arc<Self>, mut done: Done, received: Message) {
        tracing::info!(name: "agent.reply.degenerate", target: "looprail", conversation = %done.state.id, "gateway cut a reply that repeated itself");
        done.state.degenerate_reply = true;
        self.finish(done, Some(received), Spent::default(), Replied::default()).await;
    }

    /// Ends a relayed stream: stores what the reply it carried changed, or, when it ended early,
    /// only the state.
    async fn complete(self: &Arc<Self>, mut reader: crate::relay::Reader, done: Done) {
        let response = reader.take_response();
        match reader.finish() {
            Ok(reply) => {
                let (input, output) = crate::relay::usage_of(&reply);
                let usage = self.gate.spent(&reply.model, input, output);
                let outcome = response.map_or_else(Replied::default, |r| Replied::of(done.api, &r));
                self.finish(done, Some(crate::relay::message_of(&reply)), usage, outcome).await;
            }
            Err(e) => {
                tracing::warn!(conversation = %done.state.id, error = %e, "gateway: a relayed stream ended early");
                self.save(Save::state_only(done)).await;
            }
        }
    }

    /// Counts a reply's tokens, records the new messages and the reply, and stores the state
    /// with the fingerprint of the history the client now has.
    pub(crate) async fn finish(
        self: &Arc<Self>,
        mut done: Done,
        reply: Option<Message>,
        usage: Spent,
        replied: Replied,
    ) {
        // The state is saved from here on (the swap reads `done` only for the request's part).
        let mut state = std::mem::take(&mut done.state);
        let (new, starts, from, len, head, last) =
            (&done.new, &done.starts, done.from, done.len, done.head, done.last);
        let keep = done.referable;
        self.gate.replied(&mut state, usage);
        // A Responses reply comes back as its output items, that many wire messages; any other
        // as one.
        let items = replied.items.as_deref().filter(|items| reply.is_some() && !items.is_empty());
        let reply_len = items.map_or(usize::from(reply.is_some()), <[Value]>::len);
        let fingerprints = match (items, &reply) {
            (Some(items), _) => responses_fingerprints(head, len, last, items),
            (None, Some(reply)) => {
                vec![identity::anchor(
                    head,
                    len + 1,
                    last,
                    identity::message_hash(std::slice::from_ref(reply)),
                )]
            }
            (None, None) => Vec::new(),
        };
        // An append that failed since (written behind an answer) is recorded again from there.
        if let Some(before) = self.recorder.as_ref().and_then(|r| r.take_failure(&state.id)) {
            state.recorded = state.recorded.min(before);
        }
        // What the recording gains; its messages are put together by the save, off the answer's
        // path.
        let record = self.recorder.is_some().then(|| {
            // The previous reply comes back at the start of the new messages: recorded once.
            let record_from = if state.recorded <= len { state.recorded.max(from) } else { from };
            let skip = starts.get(record_from - from).copied().unwrap_or(new.len());
            Recording { skip, system: record_from == 0, reply, recorded: len + reply_len }
        });
        // Its items the client may send back as references, for the next request's guards.
        if let Some(items) = &replied.items {
            state.reply_items = if keep { referable(items) } else { Vec::new() };
        }
        // A Responses reply the client may continue by its id: what it added is kept.
        let kept = match (done.link.clone(), replied.id, replied.items) {
            (Some(mut link), Some(id), Some(items)) => {
                link.items.extend(items);
                Some((response_key(&id), serde_json::to_value(link).unwrap_or_default()))
            }
            _ => None,
        };
        let stack = done.stack.take();
        self.save(Save { done, state, fingerprints, kept, usage, record, stack }).await;
    }
}

/// The most bytes of a reply's items the conversation state keeps for resolving references: a
/// larger reply is not kept (its references stay unread, as before the gateway kept any).
const REFERABLE_BYTES: usize = 1 << 20;

/// The output items of a Responses reply a client may send back as `item_reference`s: those
/// that carry an id, at most [`REFERABLE_BYTES`] of them in all.
fn referable(items: &[Value]) -> Vec<Value> {
    let kept: Vec<Value> = items
        .iter()
        .filter(|item| {
            let kind = ItemKind { kind: item["type"].as_str(), role: item["role"].as_str() };
            model_item_id(&kind, item["id"].as_str()).is_some()
        })
        .cloned()
        .collect();
    let bytes: usize = kept.iter().map(|item| json_text(item).len()).sum();
    if bytes > REFERABLE_BYTES { Vec::new() } else { kept }
}

/// The fingerprints a Responses reply leaves its history known by. Its output items come back
/// as that many wire messages, each known by its id when it carries one (sent back whole or as
/// an `item_reference`); a client that strips the ids (as `store: false` requires) sends them
/// by content, so that form is kept too when it differs.
fn responses_fingerprints(head: u64, len: usize, last: Option<u64>, items: &[Value]) -> Vec<u64> {
    let content: Vec<u64> = items
        .iter()
        .enumerate()
        .map(|(i, item)| Api::Responses.message(i, item).map_or(0, |m| identity::message_hash(&m)))
        .collect();
    let by_id: Vec<u64> = items
        .iter()
        .zip(&content)
        .map(|(item, c)| {
            let field = |key: &str| item.get(key).and_then(Value::as_str);
            let kind = ItemKind { kind: field("type"), role: field("role") };
            model_item_id(&kind, field("id")).map_or(*c, identity::id_hash)
        })
        .collect();
    let k = items.len();
    let mut fingerprints = Vec::with_capacity(2);
    for form in [by_id, content] {
        let before = if k >= 2 { Some(form[k - 2]) } else { last };
        let fingerprint = identity::anchor(head, len + k, before, form[k - 1]);
        if !fingerprints.contains(&fingerprint) {
            fingerprints.push(fingerprint);
        }
    }
    fingerprints
}

/// What a request leaves to do once its reply is known.
pub(crate) struct Done {
    pub(crate) api: Api,
    pub(crate) state: ConversationState,
    /// The messages new to the guards, as looprail messages.
    pub(crate) new: Vec<Message>,
    /// Where each new wire message starts in `new`.
    pub(crate) starts: Vec<usize>,
    /// The wire index of the first new message.
    pub(crate) from: usize,
    /// How many wire messages the client's history holds.
    pub(crate) len: usize,
    /// The tools the request declares.
    pub(crate) tools: std::sync::Arc<[String]>,
    /// The conversation's head fingerprint.
    pub(crate) head: u64,
    /// The fingerprint of the history's last message.
    pub(crate) last: Option<u64>,
    /// The system prompt given apart from the messages, when it is recorded now.
    pub(crate) system: Option<Message>,
    /// What a Responses request adds to its chain, when one is kept.
    pub(crate) link: Option<Link>,
    /// Whether the reply's items are kept for the client's references to them (a Responses
    /// request with `store` on).
    pub(crate) referable: bool,
    /// The state's document as it was read (`None`: none was stored), for the swap.
    pub(crate) stored: Option<Arc<Value>>,
    /// The conversation's live guard stack: kept from its last request before the guards
    /// observe this one (then `state.guards` is stale), its own after (then `state.guards` is
    /// empty: the save fills it from the stack).
    pub(crate) stack: Option<crate::conversation::Stack>,
}

/// What a complete reply says of itself for its chain: its id and, on the Responses API (only
/// there), its output items.
#[derive(Default)]
pub(crate) struct Replied {
    id: Option<String>,
    items: Option<Vec<Value>>,
}

impl Replied {
    pub(crate) fn of(api: Api, response: &Value) -> Self {
        if api != Api::Responses {
            return Self::default();
        }
        Self {
            id: response["id"].as_str().filter(|id| identity::storable_id(id)).map(str::to_owned),
            items: response["output"].as_array().cloned(),
        }
    }
}
