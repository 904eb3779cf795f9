//! Tests of `https://` upstreams over the driven HTTP/1 connections: TLS with a local CA (the
//! peers bench's), the connection kept for the next request, the count of requests under way,
//! and a certificate nobody trusts refused.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::body::Bytes;
use axum::http;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

use crate::http1_pool::tests::post;
use crate::http1_pool::{Failed, Pool};

fn tls_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("benches/peers/tls")
}

/// The bench's upstream certificate (for `localhost` and 127.0.0.1) behind TLS agreeing on
/// the first of `alpn` the client asks for.
pub(crate) fn acceptor(alpn: &[&[u8]]) -> tokio_rustls::TlsAcceptor {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(tls_dir().join("upstream.pem"))
        .expect("certificate")
        .collect::<Result<_, _>>()
        .expect("certificate");
    let key = PrivateKeyDer::from_pem_file(tls_dir().join("upstream-key.pem")).expect("key");
    let mut config =
        rustls::ServerConfig::builder().with_no_client_auth().with_single_cert(certs, key).expect("config");
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    tokio_rustls::TlsAcceptor::from(Arc::new(config))
}

/// A client setup trusting the bench's CA only.
pub(crate) fn trusting() -> rustls::ClientConfig {
    let mut roots = rustls::RootCertStore::empty();
    for ca in CertificateDer::pem_file_iter(tls_dir().join("ca.pem")).expect("ca") {
        roots.add(ca.expect("ca")).expect("ca");
    }
    rustls::ClientConfig::builder().with_root_certificates(roots).with_no_client_auth()
}

/// Connections (5 s to open) whose TLS asks for `alpn` and trusts the bench's CA only.
pub(crate) fn trusted(alpn: &'static [&'static [u8]]) -> crate::upstream_stream::Connector {
    crate::upstream_stream::Connector::trusting(Duration::from_secs(5), alpn, trusting())
}

/// An HTTPS upstream on 127.0.0.1 (HTTP/1.1) answering `0123456789`; counts the TLS
/// connections it accepts.
async fn tls_upstream() -> (String, Arc<AtomicUsize>) {
    let acceptor = acceptor(crate::upstream_stream::HTTP1);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let address = listener.local_addr().expect("address");
    let accepted = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&accepted);
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let acceptor = acceptor.clone();
            let counted = Arc::clone(&counted);
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(tcp).await else { return };
                counted.fetch_add(1, Ordering::SeqCst);
                let service = hyper::service::service_fn(|_request| async {
                    Ok::<_, std::convert::Infallible>(http::Response::new(Full::new(Bytes::from_static(
                        b"0123456789",
                    ))))
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(tls), service)
                    .await;
            });
        }
    });
    (format!("https://127.0.0.1:{}", address.port()), accepted)
}

/// A pool trusting the bench's CA only.
fn trusting_pool() -> Arc<Pool> {
    Pool::with(trusted(crate::upstream_stream::HTTP1), Duration::from_secs(90))
}

#[tokio::test]
async fn an_https_upstream_is_reached_over_tls_and_its_connection_kept() {
    let (base, accepted) = tls_upstream().await;
    let pool = trusting_pool();
    for _ in 0..3 {
        let response = pool.send(post(format!("{base}/v1/messages"))).await.expect("answer");
        assert_eq!(response.status(), 200);
        assert_eq!(pool.tls_in_flight(), 1, "counted until its body is read");
        let body = response.into_body().collect().await.expect("body").to_bytes();
        assert_eq!(&body[..], b"0123456789");
        assert_eq!(pool.tls_in_flight(), 0);
    }
    assert_eq!(accepted.load(Ordering::SeqCst), 1, "one TLS connection served the three requests");
}

#[tokio::test]
async fn a_certificate_no_trusted_authority_signed_is_refused() {
    let (base, _) = tls_upstream().await;
    let pool = Pool::new(Duration::from_secs(5), Duration::from_secs(90));
    let Err(refused) = pool.send(post(format!("{base}/v1/messages"))).await else {
        panic!("a certificate from the bench's own CA was trusted")
    };
    assert!(matches!(refused, Failed::Tls(..)), "{refused}");
    assert!(refused.to_string().contains("TLS"), "{refused}");
    assert_eq!(pool.tls_in_flight(), 0, "a refused request is not counted as under way");
}
