//! HTTP/2 connections to `https://` upstreams for the requests past what the driven HTTP/1
//! connections carry ([`HttpClient`](crate::http_client::HttpClient) sends them here).
//!
//! Each request under way over HTTP/1 holds a connection (a file descriptor and TLS buffers);
//! past a thousand at once the rest share HTTP/2 connections, many streams on each. A
//! connection here is a *lane*: it takes streams up to what the upstream allows on one
//! connection (its `SETTINGS_MAX_CONCURRENT_STREAMS`, 100 until it has said, at most
//! [`LANE_STREAMS`]); past that the next request opens another lane, so ten thousand streams go
//! over a hundred connections or so, each driven by its own task (both cores at work), none
//! queueing behind the upstream's limit. A request counts in its lane from its send until its
//! answer's body is done with, so requests arriving together spread over new lanes at once
//! instead of each opening a connection of its own (reqwest's pool, not knowing a TLS
//! connection's protocol before ALPN, opens one per waiting request and then drops all but
//! one: a burst of a few thousand handshakes and resets).
//!
//! An upstream whose TLS agrees on HTTP/1.1 only is remembered as such: its requests then go
//! over HTTP/1 whatever their number ([`Failed::NotHttp2`] tells the caller so).
//!
//! A lane with no stream for longer than its idle limit (90 s in the gateway, as its HTTP/1
//! connections) is closed when the next request to that upstream picks its lane: a connection
//! idle for long may have been dropped on the way without a word.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::http::{Request, Response};
use http_body_util::Full;
use hyper::body::{Frame, Incoming};
use hyper::client::conn::http2::SendRequest;
use hyper_util::rt::{TokioExecutor, TokioIo};

use crate::http1_pool::Failed;
use crate::upstream_stream::{Connector, HTTP2_OR_1};

/// The most streams one lane takes, whatever the upstream allows: one connection is one task,
/// and a thousand streams of a fast stream of events keep it busy.
pub(crate) const LANE_STREAMS: usize = 1000;
/// What a lane takes before its upstream has said how many it allows (HTTP/2's recommended
/// least, and what hyper assumes until then).
const STREAMS_UNTIL_TOLD: usize = 100;

/// How many bytes of one stream's answer the upstream may send before the relay reads them.
const STREAM_WINDOW: u32 = 256 * 1024;
/// How many bytes of all a lane's answers together.
const CONNECTION_WINDOW: u32 = 1024 * 1024;

/// The HTTP/2 lanes to each `https://` upstream.
pub(crate) struct Lanes {
    /// How long a lane with no stream keeps its connection for the next one (a connection idle
    /// for long may have died on the way without a word, as NAT and load balancers drop them).
    idle_timeout: Duration,
    /// How connections open (TLS asking for HTTP/2, HTTP/1.1 accepted).
    connector: Connector,
    /// Per upstream (`host:port`): its lanes, or `None` once it agreed on HTTP/1.1 only.
    upstreams: Mutex<HashMap<String, Option<Vec<Arc<Lane>>>>>,
}

impl std::fmt::Debug for Lanes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lanes").finish_non_exhaustive()
    }
}

/// One HTTP/2 connection and the streams counted on it.
struct Lane {
    /// Streams under way (sent, their answer's body not done with), and those about to be
    /// ([`InLane`]).
    streams: AtomicUsize,
    /// When the last stream ended (or the lane was made).
    idle_since: Mutex<Instant>,
    /// How many streams the lane takes (see [`Lanes`]), kept by the connection's task.
    room: Arc<AtomicUsize>,
    /// Connections tried so far: a request that waited while one was tried takes its outcome.
    attempts: AtomicU64,
    /// The connection (`None` before the first and after one that failed), locked while one
    /// opens so that the lane opens one at a time.
    open: tokio::sync::Mutex<Opened>,
}

/// What the lane's last connection attempt gave.
#[derive(Default)]
struct Opened {
    send: Option<SendRequest<Full<Bytes>>>,
    failed: Option<String>,
}

impl Lane {
    fn new() -> Arc<Self> {
        Arc::new(Self {
            streams: AtomicUsize::new(0),
            idle_since: Mutex::new(Instant::now()),
            room: Arc::new(AtomicUsize::new(STREAMS_UNTIL_TOLD)),
            attempts: AtomicU64::new(0),
            open: tokio::sync::Mutex::default(),
        })
    }

    /// Whether the lane takes another stream.
    fn has_room(&self) -> bool {
        self.streams.load(Ordering::Relaxed) < self.room.load(Ordering::Relaxed)
    }

    /// Whether the lane carries nothing and its connection is gone, never opened, or idle
    /// longer than `idle_timeout`.
    fn is_spent(&self, idle_timeout: Duration) -> bool {
        self.streams.load(Ordering::Relaxed) == 0
            && self.open.try_lock().is_ok_and(|open| {
                open.send.as_ref().is_none_or(SendRequest::is_closed)
                    || self.idle_since.lock().unwrap_or_else(PoisonError::into_inner).elapsed() > idle_timeout
            })
    }
}

impl Lanes {
    /// Lanes opening connections within `connect_timeout`, closing those idle `idle_timeout`.
    pub(crate) fn new(connect_timeout: Duration, idle_timeout: Duration) -> Arc<Self> {
        Self::with(Connector::new(connect_timeout, HTTP2_OR_1), idle_timeout)
    }

    /// Opening connections as `connector` does, closing those idle `idle_timeout`.
    pub(crate) fn with(connector: Connector, idle_timeout: Duration) -> Arc<Self> {
        Arc::new(Self { idle_timeout, connector, upstreams: Mutex::default() })
    }

    /// How many connections the lanes to `host:port` hold (tests).
    #[cfg(test)]
    pub(crate) fn lanes(&self, key: &str) -> usize {
        let upstreams = self.upstreams.lock().unwrap_or_else(PoisonError::into_inner);
        upstreams.get(key).and_then(Option::as_ref).map_or(0, Vec::len)
    }

    /// Sends `request` (its URI absolute, `https://`) over a lane and answers its head; the
    /// body's stream stays counted in the lane until the body is done with.
    /// [`Failed::NotHttp2`] when the upstream speaks HTTP/1.1 only: the caller sends it there.
    pub(crate) async fn send(&self, request: Request<Full<Bytes>>) -> Result<Response<LaneBody>, Failed> {
        let uri = request.uri();
        let host = uri.host().ok_or(Failed::NoHost)?.to_owned();
        let port = uri.port_u16().unwrap_or(443);
        let key = format!("{host}:{port}");
        let (lane, counted) = self.lane(&key)?;
        let (mut request, mut again) = (request, true);
        // A connection that closed after it was found open gives the request back unsent:
        // once more, on a new one.
        loop {
            let mut send = self.ready(&lane, &host, port, &key).await?;
            match send.try_send_request(request).await {
                Ok(response) => return Ok(response.map(|body| LaneBody { body, _counted: counted })),
                Err(mut failed) => match failed.take_message() {
                    Some(unsent) if std::mem::take(&mut again) => request = unsent,
                    _ => return Err(Failed::Http(failed.into_error())),
                },
            }
        }
    }

    /// A lane to `key` with room, a new one when none has, with the request counted in it.
    fn lane(&self, key: &str) -> Result<(Arc<Lane>, InLane), Failed> {
        let mut upstreams = self.upstreams.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(lanes) = upstreams.entry(key.to_owned()).or_insert_with(|| Some(Vec::new())) else {
            return Err(Failed::NotHttp2(key.to_owned()));
        };
        lanes.retain(|lane| !lane.is_spent(self.idle_timeout));
        let lane = match lanes.iter().find(|lane| lane.has_room()) {
            Some(lane) => Arc::clone(lane),
            None => {
                let lane = Lane::new();
                lanes.push(Arc::clone(&lane));
                lane
            }
        };
        let counted = InLane::new(&lane);
        Ok((lane, counted))
    }

    /// The lane's connection, opened if it has none (or its last one closed).
    async fn ready(
        &self,
        lane: &Lane,
        host: &str,
        port: u16,
        key: &str,
    ) -> Result<SendRequest<Full<Bytes>>, Failed> {
        let before = lane.attempts.load(Ordering::Acquire);
        let mut open = lane.open.lock().await;
        if let Some(send) = open.send.as_ref().filter(|send| !send.is_closed()) {
            return Ok(send.clone());
        }
        if let Some(failed) = open.failed.as_ref().filter(|_| lane.attempts.load(Ordering::Acquire) > before)
        {
            // Tried while this request waited: its outcome, not another try.
            return Err(Failed::Before(failed.clone()));
        }
        lane.attempts.fetch_add(1, Ordering::AcqRel);
        match self.connect(host, port, key, &lane.room).await {
            Ok(send) => {
                *open = Opened { send: Some(send.clone()), failed: None };
                Ok(send)
            }
            Err(failed) => {
                *open = Opened { send: None, failed: Some(failed.to_string()) };
                Err(failed)
            }
        }
    }

    /// A new HTTP/2 connection to `host:port`, its task spawned, keeping `room` at what the
    /// upstream allows.
    async fn connect(
        &self,
        host: &str,
        port: u16,
        key: &str,
        room: &Arc<AtomicUsize>,
    ) -> Result<SendRequest<Full<Bytes>>, Failed> {
        let stream = self.connector.open(host, port, key, true).await?;
        if !stream.is_http2() {
            let mut upstreams = self.upstreams.lock().unwrap_or_else(PoisonError::into_inner);
            upstreams.insert(key.to_owned(), None);
            return Err(Failed::NotHttp2(key.to_owned()));
        }
        let (send, connection) = hyper::client::conn::http2::Builder::new(TokioExecutor::new())
            // A stream this side ends early (a client gone mid-answer, a cut reply) is reset;
            // h2 counts such resets and closes the connection, every stream on it, past 1,024
            // by default: a lane carrying a thousand streams for hours would reach that.
            .max_local_error_reset_streams(None)
            // What the upstream may send ahead of what the relays have read: a model's stream
            // is a few KB a second, and a thousand streams behind slow clients would otherwise
            // hold hyper's default 5 MB a connection (2 MB a stream) in memory.
            .initial_stream_window_size(STREAM_WINDOW)
            .initial_connection_window_size(CONNECTION_WINDOW)
            .handshake(TokioIo::new(stream))
            .await?;
        let (room, mut connection) = (Arc::clone(room), Box::pin(connection));
        tokio::spawn(std::future::poll_fn(move |cx| {
            let polled = connection.as_mut().poll(cx);
            // What the upstream's SETTINGS allow (they may change on the way).
            room.store(connection.current_max_send_streams().clamp(1, LANE_STREAMS), Ordering::Relaxed);
            polled
        }));
        Ok(send)
    }
}

/// A stream counted in its lane while it lives; when it ends, the lane's idle time starts.
struct InLane(Arc<Lane>);

impl InLane {
    fn new(lane: &Arc<Lane>) -> Self {
        lane.streams.fetch_add(1, Ordering::Relaxed);
        Self(Arc::clone(lane))
    }
}

impl Drop for InLane {
    fn drop(&mut self) {
        *self.0.idle_since.lock().unwrap_or_else(PoisonError::into_inner) = Instant::now();
        self.0.streams.fetch_sub(1, Ordering::Relaxed);
    }
}

/// An answer's body over a lane: its stream counted in the lane until it is dropped.
pub(crate) struct LaneBody {
    body: Incoming,
    _counted: InLane,
}

impl std::fmt::Debug for LaneBody {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LaneBody").field("body", &self.body).finish_non_exhaustive()
    }
}

impl hyper::body::Body for LaneBody {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, hyper::Error>>> {
        Pin::new(&mut self.get_mut().body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        hyper::body::Body::is_end_stream(&self.body)
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        hyper::body::Body::size_hint(&self.body)
    }
}

#[cfg(test)]
#[path = "http2_lanes_tests.rs"]
mod tests;
