//! Tests of the HTTP/2 lanes, alone and as the client's way past its HTTP/1 connections: a
//! local HTTPS upstream (the bench's CA) whose answers stay open until released, so streams
//! are under way together.

use std::convert::Infallible;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Bytes;
use axum::http::{self, Request, Response, Version};
use futures_util::StreamExt;
use http_body_util::{BodyExt, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper_util::rt::{TokioExecutor, TokioIo};

use super::Lanes;
use crate::http_client::{HttpClient, Outgoing};
use crate::http1_pool::Failed;
use crate::http1_pool::tests::post;
use crate::upstream_stream::tests::{acceptor, trusted, trusting};
use crate::upstream_stream::{HTTP1, HTTP2_OR_1};

/// An HTTPS upstream: the protocols it agrees on, the streams it allows per connection, the
/// connections it accepted, each request's HTTP version, and the switch that lets every
/// answer ([`held`]) end.
struct Upstream {
    base: String,
    accepted: Arc<AtomicUsize>,
    versions: Arc<Mutex<Vec<Version>>>,
    release: tokio::sync::watch::Sender<bool>,
}

/// An answer's body: `held` at once, `-done` once `released` turns true.
fn held(
    mut released: tokio::sync::watch::Receiver<bool>,
) -> StreamBody<futures_util::stream::BoxStream<'static, Result<Frame<Bytes>, Infallible>>> {
    let rest = async move {
        let _ = released.wait_for(|released| *released).await;
        Ok(Frame::data(Bytes::from_static(b"-done")))
    };
    let first = futures_util::stream::once(async { Ok(Frame::data(Bytes::from_static(b"held"))) });
    StreamBody::new(first.chain(futures_util::stream::once(rest)).boxed())
}

impl Upstream {
    async fn start(alpn: &[&[u8]], streams: u32) -> Self {
        let acceptor = acceptor(alpn);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let base = format!("https://127.0.0.1:{}", listener.local_addr().expect("address").port());
        let (accepted, versions) = (Arc::new(AtomicUsize::new(0)), Arc::new(Mutex::new(Vec::new())));
        let (release, released) = tokio::sync::watch::channel(false);
        let (counted, seen) = (Arc::clone(&accepted), Arc::clone(&versions));
        tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                let (acceptor, counted, seen, released) =
                    (acceptor.clone(), Arc::clone(&counted), Arc::clone(&seen), released.clone());
                counted.fetch_add(1, Ordering::SeqCst);
                tokio::spawn(async move {
                    let Ok(tls) = acceptor.accept(tcp).await else { return };
                    let service = hyper::service::service_fn(move |request: Request<Incoming>| {
                        seen.lock().expect("versions").push(request.version());
                        let body = held(released.clone());
                        async move { Ok::<_, Infallible>(Response::new(body)) }
                    });
                    let mut builder = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
                    builder.http2().max_concurrent_streams(streams);
                    let _ = builder.serve_connection(TokioIo::new(tls), service).await;
                });
            }
        });
        Self { base, accepted, versions, release }
    }

    fn url(&self) -> String {
        format!("{}/v1/messages", self.base)
    }

    fn accepted(&self) -> usize {
        self.accepted.load(Ordering::SeqCst)
    }

    fn versions(&self) -> Vec<Version> {
        self.versions.lock().expect("versions").clone()
    }
}

async fn read<B: hyper::body::Body>(response: Response<B>) -> Bytes
where
    B::Error: std::fmt::Debug,
{
    response.into_body().collect().await.expect("body").to_bytes()
}

#[tokio::test]
async fn streams_past_what_the_upstream_allows_on_a_connection_go_over_another() {
    let upstream = Upstream::start(HTTP2_OR_1, 50).await;
    let lanes = Lanes::with(trusted(HTTP2_OR_1), Duration::from_secs(90));
    let mut held = Vec::new();
    for _ in 0..120 {
        let response = within(lanes.send(post(upstream.url()))).await.expect("answer");
        assert_eq!(response.version(), Version::HTTP_2);
        held.push(response);
    }
    assert_eq!(upstream.accepted(), 3, "120 streams at once, 50 on each connection");
    let key = upstream.base.trim_start_matches("https://");
    assert_eq!(lanes.lanes(key), 3);
    upstream.release.send(true).expect("release");
    for response in held {
        assert_eq!(&read(response).await[..], b"held-done");
    }
    // Done with, the streams leave room: the next ones go over the connections open.
    let again = futures_util::future::join_all((0..100).map(|_| lanes.send(post(upstream.url())))).await;
    for response in again {
        assert_eq!(&read(response.expect("answer")).await[..], b"held-done");
    }
    assert_eq!(upstream.accepted(), 3, "no connection opened for streams that fit");
}

#[tokio::test]
async fn an_upstream_without_http2_is_told_and_remembered() {
    let upstream = Upstream::start(HTTP1, 50).await;
    let lanes = Lanes::with(trusted(HTTP2_OR_1), Duration::from_secs(90));
    for _ in 0..2 {
        let refused = lanes.send(post(upstream.url())).await.expect_err("HTTP/1.1 only");
        assert!(matches!(refused, Failed::NotHttp2(_)), "{refused}");
    }
    assert_eq!(upstream.accepted(), 1, "learnt from one connection");
    assert!(upstream.versions().is_empty(), "no request went over it");
}

#[tokio::test]
async fn a_refused_connection_says_why_to_every_request_that_waited_for_it() {
    let closed = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let address = closed.local_addr().expect("address");
    drop(closed);
    let lanes = Lanes::with(trusted(HTTP2_OR_1), Duration::from_secs(90));
    let url = format!("https://{address}/v1/messages");
    let tried = futures_util::future::join_all((0..3).map(|_| lanes.send(post(url.clone())))).await;
    for refused in tried {
        let refused = refused.expect_err("nothing listens");
        assert!(refused.to_string().to_lowercase().contains("refused"), "{refused}");
    }
    assert_eq!(lanes.lanes(&address.to_string()), 1, "one lane tried, not one per request");
}

/// The client with both ways trusting the bench's CA, HTTP/1 taking `driven` requests at once.
fn client(driven: usize) -> HttpClient {
    HttpClient::trusting(trusting(), driven)
}

async fn send(client: &HttpClient, url: &str) -> reqwest::Response {
    let request = Outgoing::new(http::Method::POST, url.to_owned()).body(Bytes::from_static(b"{}"));
    within(client.send(request)).await.expect("answer")
}

/// `answer`, failing the test if it takes more than 10 s (a stream queued behind a full
/// connection never gets its head while the others are held).
async fn within<T>(answer: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(10), answer).await.expect("answered within 10 s")
}

#[tokio::test]
async fn requests_past_the_http1_connections_share_an_http2_one() {
    let upstream = Upstream::start(HTTP2_OR_1, 100).await;
    let client = client(2);
    let url = upstream.url();
    let mut held = vec![send(&client, &url).await, send(&client, &url).await];
    // Twenty more at once: one connection opened for them, not one each.
    held.extend(futures_util::future::join_all((0..20).map(|_| send(&client, &url))).await);
    let (one, two) = (Version::HTTP_11, Version::HTTP_2);
    let versions = upstream.versions();
    assert_eq!(versions[..2], [one, one]);
    assert_eq!(versions[2..], [two; 20]);
    assert_eq!(upstream.accepted(), 3, "two HTTP/1 connections, one HTTP/2");
    upstream.release.send(true).expect("release");
    for response in held {
        assert_eq!(response.url().as_str(), upstream.url(), "the answer tells where it came from");
        assert_eq!(&response.bytes().await.expect("body")[..], b"held-done");
    }
    // Those done with, HTTP/1 takes the next one again.
    let _ = send(&client, &upstream.url()).await.bytes().await;
    assert_eq!(upstream.versions().last(), Some(&one));
}

#[tokio::test]
async fn requests_past_the_http1_connections_stay_on_http1_when_the_upstream_has_nothing_else() {
    let upstream = Upstream::start(HTTP1, 100).await;
    let client = client(2);
    let mut held = Vec::new();
    for _ in 0..5 {
        held.push(send(&client, &upstream.url()).await);
    }
    assert_eq!(upstream.versions(), [Version::HTTP_11; 5]);
    upstream.release.send(true).expect("release");
    for response in held {
        assert_eq!(&response.bytes().await.expect("body")[..], b"held-done");
    }
    // Five connections, and the one that found HTTP/1.1 only (not tried again).
    assert_eq!(upstream.accepted(), 6);
}

#[tokio::test]
async fn a_lane_whose_connection_the_upstream_closes_opens_a_new_one() {
    // An upstream that says GOAWAY on each connection once it has a request (as servers rotate
    // their connections): the request under way finishes there, the next needs another.
    let acceptor = acceptor(HTTP2_OR_1);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("https://127.0.0.1:{}/v1/messages", listener.local_addr().expect("address").port());
    let accepted = Arc::new(AtomicUsize::new(0));
    let (release, released) = tokio::sync::watch::channel(false);
    let counted = Arc::clone(&accepted);
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            counted.fetch_add(1, Ordering::SeqCst);
            let (acceptor, released) = (acceptor.clone(), released.clone());
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(tcp).await else { return };
                let asked = Arc::new(tokio::sync::Notify::new());
                let told = Arc::clone(&asked);
                let service = hyper::service::service_fn(move |_request: Request<Incoming>| {
                    told.notify_one();
                    let body = held(released.clone());
                    async move { Ok::<_, Infallible>(Response::new(body)) }
                });
                let connection = hyper::server::conn::http2::Builder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(tls), service);
                let mut connection = std::pin::pin!(connection);
                tokio::select! {
                    _ = connection.as_mut() => return,
                    () = asked.notified() => connection.as_mut().graceful_shutdown(),
                }
                let _ = connection.await;
            });
        }
    });
    let lanes = Lanes::with(trusted(HTTP2_OR_1), Duration::from_secs(90));
    let first = within(lanes.send(post(url.clone()))).await.expect("answer");
    // The GOAWAY reaches the lane while its first stream is still under way.
    tokio::time::sleep(Duration::from_millis(100)).await;
    let second = within(lanes.send(post(url.clone()))).await.expect("answer on a new connection");
    assert_eq!(accepted.load(Ordering::SeqCst), 2);
    release.send(true).expect("release");
    for response in [first, second] {
        assert_eq!(&read(response).await[..], b"held-done", "both streams end whole");
    }
}

#[tokio::test]
async fn a_lane_idle_longer_than_its_limit_is_closed_and_the_next_stream_opens_another() {
    let upstream = Upstream::start(HTTP2_OR_1, 100).await;
    upstream.release.send(true).expect("release");
    let lanes = Lanes::with(trusted(HTTP2_OR_1), Duration::from_millis(100));
    let key = upstream.base.trim_start_matches("https://").to_owned();
    for _ in 0..2 {
        let response = within(lanes.send(post(upstream.url()))).await.expect("answer");
        assert_eq!(&read(response).await[..], b"held-done");
    }
    assert_eq!(upstream.accepted(), 1, "used again while fresh");
    tokio::time::sleep(Duration::from_millis(300)).await;
    let response = within(lanes.send(post(upstream.url()))).await.expect("answer");
    assert_eq!(&read(response).await[..], b"held-done");
    assert_eq!(upstream.accepted(), 2, "idle too long: a new connection");
    assert_eq!(lanes.lanes(&key), 1, "the idle lane dropped");
}
