//! The gateway's HTTP client to its upstreams.
//!
//! An upstream reached without a proxy goes through hyper's HTTP/1 connections directly, the
//! engine reqwest wraps, without reqwest's layers, each connection driven by the task using it
//! (see `http1_pool`), plain or over TLS (rustls, the platform's certificates): on the peers
//! bench that saved about 30 µs of each call over reqwest, and 35 µs more over hyper's own
//! pooled client, on plain HTTP; over HTTPS, where reqwest's HTTP/2 connection task hands every
//! request and answer across tasks, 0.15-0.25 ms for 4-150 KB agent requests (none at 500 KB).
//! An upstream behind a proxy the environment names (`HTTP_PROXY`, `ALL_PROXY`, with
//! `NO_PROXY`) goes through reqwest. `https://` requests beyond [`DRIVEN_TLS_MAX`] under way
//! go over HTTP/2 connections, many streams on each ([`crate::http2_lanes`]), when the
//! upstream speaks it. Every way answers a [`reqwest::Response`], so what reads it does not
//! know which one ran. A request is an [`Outgoing`], not a reqwest builder: the driven path
//! hands its headers and body to hyper as they are (no URL parsed twice, no body copied).
//!
//! Which way a URL goes, and the forms of it each way needs (hyper's `Uri`, reqwest's `Url` for
//! the answer's [`reqwest::Response::url`]), is worked out once per URL and remembered: an
//! upstream's few endpoints are called over and over, and parsing them each time (reqwest's
//! conversion parses a URL for every answer) was a tenth of the time between the upstream's
//! answer and the client's.
//!
//! Limits alike: 10 s to connect, 600 s for the whole exchange on reqwest; on the driven path
//! 600 s until the answer's head (its body then lasts as long as the client stays).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum::body::Bytes;
use axum::http::{HeaderMap, HeaderValue, Method};
use http_body_util::Full;
use hyper_util::client::proxy::matcher::Matcher;
use reqwest::ResponseBuilderExt;

use crate::http1_pool::{Failed, Pool};
use crate::http2_lanes::Lanes;
#[cfg(test)]
use crate::upstream_stream::{Connector, HTTP1, HTTP2_OR_1};

/// How long a connection may take to open.
const CONNECT: Duration = Duration::from_secs(10);
/// How long a connection is kept idle for the next request.
const IDLE: Duration = Duration::from_secs(90);
/// How long an exchange may take.
const EXCHANGE: Duration = Duration::from_secs(600);

/// The client: reqwest, and the driven HTTP/1 connections for upstreams not behind a proxy.
#[derive(Debug, Clone)]
pub struct HttpClient {
    full: reqwest::Client,
    driven: Arc<Pool>,
    /// HTTP/2 connections for the `https://` requests past [`DRIVEN_TLS_MAX`] under way.
    lanes: Arc<Lanes>,
    /// [`DRIVEN_TLS_MAX`] (tests: fewer).
    driven_tls_max: usize,
    /// Whether a URL goes through a proxy (the environment's, read once, as reqwest reads it).
    proxies: Arc<Matcher>,
    /// The way each URL called lately goes.
    routes: Arc<Mutex<HashMap<String, Route>>>,
}

/// How many URLs' ways are remembered; past that the memory starts over (an upstream has a few
/// endpoints; only model names in paths make more).
const ROUTES_KEPT: usize = 64;

/// The way a URL goes.
#[derive(Debug, Clone)]
enum Route {
    /// Through reqwest: a proxy, or a URL hyper cannot take.
    Full,
    /// Straight to the upstream over HTTP/1 connections the request's task drives (plain or
    /// TLS): the URL as hyper takes it, and as reqwest's response tells it (when reqwest's
    /// parser takes it too). `https://` goes over HTTP/2 lanes instead while
    /// [`DRIVEN_TLS_MAX`] requests are under way on that path.
    Driven(axum::http::Uri, Option<reqwest::Url>),
}

/// The most `https://` requests at once over the driven HTTP/1 connections; past it, HTTP/2
/// carries them, many streams on each connection ([`crate::http2_lanes`]). A request over a
/// connection its own task drives answers sooner (on the peers bench, 4-150 KB agent requests
/// over HTTPS: 0.15-0.25 ms less added at one client), and HTTP/1 is what nginx and LiteLLM
/// use upstream too. But it needs a connection (a file descriptor and TLS buffers) per request
/// under way, while the client's own connections need as many: past a thousand open streams
/// the rest share connections.
const DRIVEN_TLS_MAX: usize = 1024;

impl HttpClient {
    /// Builds both clients (reqwest needs a rustls crypto provider installed first).
    pub fn new() -> Result<Self, reqwest::Error> {
        let full = reqwest::Client::builder().connect_timeout(CONNECT).timeout(EXCHANGE).build()?;
        Ok(Self::with(full, Matcher::from_system()))
    }

    /// The driven connections beside `full`, `proxies` saying which URLs go through a proxy (the
    /// ones `full` was told of).
    fn with(full: reqwest::Client, proxies: Matcher) -> Self {
        let driven = Pool::new(CONNECT, IDLE);
        let lanes = Lanes::new(CONNECT, IDLE);
        Self {
            full,
            driven,
            lanes,
            driven_tls_max: DRIVEN_TLS_MAX,
            proxies: Arc::new(proxies),
            routes: Arc::default(),
        }
    }

    /// A client whose connections trust what `config` trusts (tests: a local CA), HTTP/1 taking
    /// `driven_tls_max` `https://` requests at once.
    #[cfg(test)]
    pub(crate) fn trusting(config: rustls::ClientConfig, driven_tls_max: usize) -> Self {
        let full = reqwest::Client::builder().build().expect("client");
        let mut client = Self::with(full, Matcher::builder().build());
        client.driven = Pool::with(Connector::trusting(CONNECT, HTTP1, config.clone()), IDLE);
        client.lanes = Lanes::with(Connector::trusting(CONNECT, HTTP2_OR_1, config), IDLE);
        client.driven_tls_max = driven_tls_max;
        client
    }

    /// The way `url` goes, worked out the first time it is called.
    fn route(&self, url: &str) -> Route {
        let mut routes = self.routes.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(route) = routes.get(url) {
            return route.clone();
        }
        let driven = (url.starts_with("http://") || url.starts_with("https://"))
            .then(|| url.parse::<axum::http::Uri>().ok())
            .flatten()
            .filter(|uri| self.proxies.intercept(uri).is_none())
            .map(|uri| Route::Driven(uri, reqwest::Url::parse(url).ok()));
        let route = driven.unwrap_or(Route::Full);
        if routes.len() >= ROUTES_KEPT {
            routes.clear();
        }
        routes.insert(url.to_owned(), route.clone());
        route
    }

    /// Sends `outgoing`; the error says why no answer came.
    pub async fn send(&self, outgoing: Outgoing) -> Result<reqwest::Response, String> {
        let Outgoing { method, url, headers, body, invalid } = outgoing;
        if let Some(invalid) = invalid {
            return Err(invalid);
        }
        let Route::Driven(uri, answered_from) = self.route(&url) else {
            let request = self.full.request(method, url.as_str()).headers(headers).body(body);
            return self
                .full
                .execute(request.build().map_err(|e| e.to_string())?)
                .await
                .map_err(|e| e.to_string());
        };
        let request = |headers| {
            let mut request = axum::http::Request::new(Full::new(body.clone()));
            *request.method_mut() = method.clone();
            *request.uri_mut() = uri.clone();
            *request.headers_mut() = headers;
            request
        };
        let overflow =
            uri.scheme_str() == Some("https") && self.driven.tls_in_flight() >= self.driven_tls_max;
        let sent = async {
            if overflow {
                match self.lanes.send(request(headers.clone())).await {
                    Err(Failed::NotHttp2(_)) => {}
                    answer => return answer.map(|response| response.map(reqwest::Body::wrap)),
                }
            }
            Ok(self.driven.send(request(headers)).await?.map(reqwest::Body::wrap))
        };
        match tokio::time::timeout(EXCHANGE, sent).await {
            Ok(Ok(mut response)) => {
                // The URL the answer says it came from, given (reqwest would parse a stand-in).
                if let Some(url) = answered_from {
                    let given = axum::http::Response::builder().url(url).body(()).unwrap_or_default();
                    response.extensions_mut().extend(given.into_parts().0.extensions);
                }
                Ok(reqwest::Response::from(response))
            }
            Ok(Err(e)) => Err(describe(&e)),
            Err(_) => Err(format!("no answer within {} s", EXCHANGE.as_secs())),
        }
    }
}

/// A request to an upstream: its method, URL, headers and whole body, built without reqwest's
/// builder, so the driven path hands it to hyper as it is (no second parse of the URL, no copy
/// of the body).
#[derive(Debug, Clone)]
pub struct Outgoing {
    method: Method,
    url: String,
    headers: HeaderMap,
    body: Bytes,
    /// The first header value that could not be sent, as the error the send then gives.
    invalid: Option<String>,
}

impl Outgoing {
    /// `method` on `url`, without headers or body.
    pub fn new(method: Method, url: String) -> Self {
        Self { method, url, headers: HeaderMap::new(), body: Bytes::new(), invalid: None }
    }

    /// With header `name` set to `value` (a key is marked sensitive: it never shows in a log);
    /// a value no header may carry makes the send fail with why.
    pub fn header(mut self, name: &'static str, value: impl TryInto<HeaderValue>, sensitive: bool) -> Self {
        match value.try_into() {
            Ok(mut value) => {
                value.set_sensitive(sensitive);
                self.headers.insert(name, value);
            }
            Err(_) => {
                self.invalid.get_or_insert_with(|| format!("the {name} header's value cannot be sent"));
            }
        }
        self
    }

    /// With `body`.
    pub fn body(mut self, body: Bytes) -> Self {
        self.body = body;
        self
    }
}

/// An error with its causes (hyper's own says only "client error (Connect)").
fn describe(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut cause = error.source();
    while let Some(inner) = cause {
        text.push_str(": ");
        text.push_str(&inner.to_string());
        cause = inner.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// A one-shot HTTP server on 127.0.0.1 answering `{"ok":true}`; hands back what it read.
    async fn server() -> (String, tokio::task::JoinHandle<String>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let address = listener.local_addr().expect("address");
        let read = tokio::spawn(async move {
            let (mut socket, _) = listener.accept().await.expect("accept");
            let mut seen = Vec::new();
            let mut buffer = [0_u8; 4096];
            // The head, then the body: by its length, or chunked to its last chunk.
            let whole = |seen: &[u8]| {
                let text = String::from_utf8_lossy(seen).to_ascii_lowercase();
                let Some((head, body)) = text.split_once("\r\n\r\n") else { return false };
                let length =
                    head.lines().find_map(|l| l.strip_prefix("content-length: ")?.trim().parse().ok());
                match length {
                    Some(length) => body.len() >= length,
                    None => !head.contains("chunked") || body.ends_with("0\r\n\r\n"),
                }
            };
            while !whole(&seen) {
                let n = socket.read(&mut buffer).await.expect("read");
                if n == 0 {
                    break;
                }
                seen.extend_from_slice(&buffer[..n]);
            }
            let body = br#"{"ok":true}"#;
            let head = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                body.len()
            );
            socket.write_all(head.as_bytes()).await.expect("write");
            socket.write_all(body).await.expect("write");
            String::from_utf8_lossy(&seen).into_owned()
        });
        (format!("http://{address}"), read)
    }

    #[tokio::test]
    async fn a_plain_upstream_is_called_directly_with_the_headers_and_body() {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let (upstream, seen) = server().await;
        let client = HttpClient::new().expect("client");
        let request = Outgoing::new(Method::POST, format!("{upstream}/v1/chat/completions?x=1"))
            .header("authorization", "Bearer k", true)
            .body(Bytes::from_static(b"{}"));
        let response = client.send(request).await.expect("answer");
        assert_eq!(response.status(), 200);
        // The answer tells the URL it came from (the one remembered for the next call).
        assert_eq!(response.url().as_str(), format!("{upstream}/v1/chat/completions?x=1"));
        assert_eq!(response.text().await.expect("body"), r#"{"ok":true}"#);
        let seen = seen.await.expect("server").to_ascii_lowercase();
        // The request line carries the path only; the host goes in its header.
        assert!(seen.starts_with("post /v1/chat/completions?x=1 http/1.1\r\n"), "{seen}");
        let authority = upstream.trim_start_matches("http://");
        assert!(seen.contains(&format!("host: {authority}\r\n")), "{seen}");
        assert!(seen.contains("authorization: bearer k"), "{seen}");
        assert!(seen.contains("content-length: 2\r\n"), "{seen}");
        assert!(seen.ends_with("\r\n\r\n{}"), "the body arrived: {seen}");
    }

    #[tokio::test]
    async fn a_header_value_that_cannot_be_sent_fails_the_send_before_any_connection() {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = HttpClient::new().expect("client");
        // Nothing listens on port 9 (discard); the error must come from the header, not from there.
        let request = Outgoing::new(Method::GET, "http://127.0.0.1:9/v1/models".to_owned())
            .header("x-api-key", "line\nbreak", true)
            .header("anthropic-version", "2023-06-01", false);
        let error = client.send(request).await.expect_err("refused");
        assert_eq!(error, "the x-api-key header's value cannot be sent");
    }

    #[tokio::test]
    async fn a_plain_upstream_behind_a_proxy_is_called_through_the_proxy() {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let (proxy, seen) = server().await;
        let full = reqwest::Client::builder()
            .proxy(reqwest::Proxy::http(&proxy).expect("proxy"))
            .build()
            .expect("client");
        let client = HttpClient::with(full, Matcher::builder().http(proxy.clone()).build());
        let request = Outgoing::new(Method::GET, "http://upstream.invalid/v1/models".to_owned());
        let response = client.send(request).await.expect("answer");
        assert_eq!(response.status(), 200);
        // A proxy is asked for the absolute URL.
        let seen = seen.await.expect("proxy");
        assert!(seen.starts_with("GET http://upstream.invalid/v1/models HTTP/1.1"), "{seen}");
    }

    #[tokio::test]
    async fn an_unreachable_plain_upstream_says_why() {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let closed = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let address = closed.local_addr().expect("address");
        drop(closed);
        let client = HttpClient::new().expect("client");
        let error = client
            .send(Outgoing::new(Method::GET, format!("http://{address}/v1/models")))
            .await
            .expect_err("nothing listens");
        assert!(error.to_lowercase().contains("refused"), "{error}");
    }
}
