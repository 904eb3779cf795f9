//! A connection to an upstream as [`http1_pool`](crate::http1_pool) drives it: plain TCP, or
//! TLS over it (rustls, the platform's certificate verifier, as reqwest uses, HTTP/1.1 asked
//! for by ALPN; [`http2_lanes`](crate::http2_lanes) asks for HTTP/2).

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;

use crate::http1_pool::Failed;

/// Plain TCP or TLS over it.
#[derive(Debug)]
pub(crate) enum UpstreamStream {
    /// `http://`.
    Plain(TcpStream),
    /// `https://`.
    Tls(Box<TlsStream<TcpStream>>),
}

/// ALPN asking for HTTP/1.1.
pub(crate) const HTTP1: &[&[u8]] = &[b"http/1.1"];
/// ALPN asking for HTTP/2, HTTP/1.1 accepted.
pub(crate) const HTTP2_OR_1: &[&[u8]] = &[b"h2", b"http/1.1"];

/// The TLS client setup of `https://` connections: the platform's verifier (the system's
/// certificates, `SSL_CERT_FILE` included), as reqwest's; `alpn` asked for.
fn platform_connector(alpn: &[&[u8]]) -> Result<TlsConnector, String> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let config =
        <rustls::ClientConfig as rustls_platform_verifier::ConfigVerifierExt>::with_platform_verifier()
            .map_err(|e| format!("cannot set up TLS: {e}"))?;
    Ok(connector(config, alpn))
}

/// `config` asking for the protocols `alpn` names.
fn connector(mut config: rustls::ClientConfig, alpn: &[&[u8]]) -> TlsConnector {
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    TlsConnector::from(Arc::new(config))
}

/// One request counted in a count of those under way (the pool's `https://` requests) while it
/// lives.
#[derive(Debug)]
pub(crate) struct Lease(Arc<AtomicUsize>);

impl Lease {
    /// Counts one more in `count` until dropped.
    pub(crate) fn new(count: &Arc<AtomicUsize>) -> Self {
        count.fetch_add(1, Ordering::Relaxed);
        Self(Arc::clone(count))
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// How a pool opens its connections: within a time limit, over TLS asking for the protocols of
/// its ALPN list (the setup made on the first `https://` connection, or given).
pub(crate) struct Connector {
    timeout: Duration,
    alpn: &'static [&'static [u8]],
    tls: std::sync::OnceLock<Result<TlsConnector, String>>,
}

impl Connector {
    /// Connections opened within `timeout`, TLS asking for `alpn` with the platform's verifier.
    pub(crate) fn new(timeout: Duration, alpn: &'static [&'static [u8]]) -> Self {
        Self { timeout, alpn, tls: std::sync::OnceLock::new() }
    }

    /// Connections whose TLS trusts what `config` trusts (tests: a local CA).
    #[cfg(test)]
    pub(crate) fn trusting(
        timeout: Duration,
        alpn: &'static [&'static [u8]],
        config: rustls::ClientConfig,
    ) -> Self {
        let connector = Self::new(timeout, alpn);
        let _ = connector.tls.set(Ok(self::connector(config, alpn)));
        connector
    }

    /// A new connection to `host:port` (`key` names it in errors), over TLS with `tls`.
    pub(crate) async fn open(
        &self,
        host: &str,
        port: u16,
        key: &str,
        tls: bool,
    ) -> Result<UpstreamStream, Failed> {
        // An IPv6 literal comes bracketed in a URI.
        let host = host.trim_start_matches('[').trim_end_matches(']');
        let timed_out = || Failed::ConnectTimeout(key.to_owned(), self.timeout.as_secs());
        let stream = match tokio::time::timeout(self.timeout, TcpStream::connect((host, port))).await {
            Ok(Ok(stream)) => stream,
            Ok(Err(e)) => return Err(Failed::Connect(key.to_owned(), e)),
            Err(_) => return Err(timed_out()),
        };
        let _ = stream.set_nodelay(true);
        if !tls {
            return Ok(UpstreamStream::Plain(stream));
        }
        let connector = self.tls.get_or_init(|| platform_connector(self.alpn)).as_ref();
        let connector = connector.map_err(|e| Failed::Tls(key.to_owned(), io::Error::other(e.clone())))?;
        match tokio::time::timeout(self.timeout, UpstreamStream::tls(stream, host, connector)).await {
            Ok(Ok(stream)) => Ok(stream),
            Ok(Err(e)) => Err(Failed::Tls(key.to_owned(), e)),
            Err(_) => Err(timed_out()),
        }
    }
}

impl UpstreamStream {
    /// TLS over `tcp` to `host` (its name checked against the certificate).
    async fn tls(tcp: TcpStream, host: &str, connector: &TlsConnector) -> io::Result<Self> {
        let name = rustls::pki_types::ServerName::try_from(host.to_owned())
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, format!("{host}: {e}")))?;
        Ok(Self::Tls(Box::new(connector.connect(name, tcp).await?)))
    }

    /// Whether TLS agreed on HTTP/2 by ALPN.
    pub(crate) fn is_http2(&self) -> bool {
        match self {
            Self::Plain(_) => false,
            Self::Tls(tls) => tls.get_ref().1.alpn_protocol() == Some(b"h2"),
        }
    }
}

impl AsyncRead for UpstreamStream {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Self::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Self::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for UpstreamStream {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Self::Plain(s) => Pin::new(s).poll_write(cx, buf),
            Self::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Self::Plain(s) => Pin::new(s).poll_write_vectored(cx, bufs),
            Self::Tls(s) => Pin::new(s.as_mut()).poll_write_vectored(cx, bufs),
        }
    }

    fn is_write_vectored(&self) -> bool {
        match self {
            Self::Plain(s) => s.is_write_vectored(),
            Self::Tls(s) => s.is_write_vectored(),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Self::Plain(s) => Pin::new(s).poll_flush(cx),
            Self::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Self::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Self::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}

#[cfg(test)]
#[path = "upstream_stream_tests.rs"]
pub(crate) mod tests;
