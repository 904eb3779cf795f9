//! Accepting the clients' connections and serving each, the way `axum::serve` does, with one
//! difference: each connection is polled in rounds ([`PollRounds`]).
//!
//! hyper serves a connection in one task: its dispatcher and the handler it calls share the
//! task, and the request body's channel between them (the handler reading the body, the
//! dispatcher feeding it) wakes that task while it runs. tokio takes such a wake-up as a yield:
//! the task goes to the back of its queue and an idle worker thread is woken (a futex call),
//! which then often took the request's answer over on the other core. Traced at one client,
//! once per request, just after the request went upstream. Polled in rounds, the wake-up is
//! answered by polling the connection again at once, on the same thread.

use std::convert::Infallible;
use std::future::poll_fn;
use std::pin::pin;

use axum::Router;
use axum::body::Body;
use axum::serve::{Listener, ListenerExt};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use hyper_util::service::TowerToHyperService;
use tokio::sync::watch;
use tokio_util::task::TaskTracker;
use tower::ServiceExt;

use crate::poll_rounds::PollRounds;

/// Serves `router` on `listener` until `shutdown` completes; then stops accepting, lets each
/// connection finish the request it is serving (idle ones close at once) and returns when all
/// are closed.
pub(crate) async fn serve(
    listener: tokio::net::TcpListener,
    router: Router,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) {
    // Replies go out as soon as they are written: with Nagle's algorithm on, the last small
    // write of a streamed reply waits for the client's delayed ACK (40 ms on Linux).
    let mut listener = listener.tap_io(|tcp| {
        if let Err(error) = tcp.set_nodelay(true) {
            tracing::warn!(%error, "cannot set TCP_NODELAY on a client connection");
        }
    });
    let (stop, stopping) = watch::channel(false);
    let connections = TaskTracker::new();
    let mut shutdown = pin!(shutdown);
    loop {
        // `accept` retries by itself after an error (a connection reset while queued, too
        // many open files: after a pause), as with `axum::serve`.
        let (io, _) = tokio::select! {
            accepted = listener.accept() => accepted,
            () = &mut shutdown => break,
        };
        let service =
            router.clone().map_request(|request: axum::http::Request<Incoming>| request.map(Body::new));
        connections.spawn(connection(TokioIo::new(io), TowerToHyperService::new(service), stopping.clone()));
    }
    drop(listener);
    let _ = stop.send(true);
    connections.close();
    connections.wait().await;
}

/// Serves one connection, polled in rounds, until it closes; once `stopping` turns true, it
/// closes after the request it serves.
async fn connection<S>(io: TokioIo<tokio::net::TcpStream>, service: S, mut stopping: watch::Receiver<bool>)
where
    S: hyper::service::Service<
            axum::http::Request<Incoming>,
            Response = axum::http::Response<Body>,
            Error = Infallible,
        > + Send,
    S::Future: Send + 'static,
{
    let mut conn = pin!(hyper::server::conn::http1::Builder::new().serve_connection(io, service));
    let rounds = PollRounds::default();
    // A connection taken just before the stop still sees it: its receiver was cloned before.
    let mut closing = false;
    loop {
        tokio::select! {
            served = poll_fn(|cx| rounds.poll(cx, |cx| conn.as_mut().poll(cx))) => {
                if let Err(error) = served {
                    tracing::trace!(%error, "client connection ended with an error");
                }
                return;
            }
            changed = stopping.changed(), if !closing => {
                closing = changed.is_err() || *stopping.borrow();
                if closing {
                    conn.as_mut().graceful_shutdown();
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use axum::routing::get;
    use tokio::sync::{Notify, oneshot};

    use super::*;

    #[tokio::test]
    async fn shutting_down_lets_the_request_being_served_finish_closes_idle_connections_and_refuses_new_ones()
    {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let release = Arc::new(Notify::new());
        let held = Arc::clone(&release);
        let router = Router::new().route("/quick", get(|| async { "quick" })).route(
            "/held",
            get(move || async move {
                held.notified().await;
                "held"
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let (stop, stopped) = oneshot::channel::<()>();
        let served = tokio::spawn(serve(listener, router, async move {
            let _ = stopped.await;
        }));
        // A client keeping its connection open, idle after its answer.
        let idle = reqwest::Client::new();
        assert_eq!(idle.get(format!("{base}/quick")).send().await.unwrap().text().await.unwrap(), "quick");
        let held = tokio::spawn(reqwest::get(format!("{base}/held")));
        tokio::time::sleep(Duration::from_millis(100)).await;
        stop.send(()).unwrap();
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(!served.is_finished(), "a request being served keeps the server up");
        let refused = reqwest::Client::new().get(format!("{base}/quick")).send().await;
        assert!(refused.is_err(), "no new connection is taken once stopping");
        release.notify_one();
        let answer = held.await.unwrap().unwrap();
        assert_eq!(answer.text().await.unwrap(), "held", "the request in flight got its whole answer");
        // The idle connection does not hold the server up.
        tokio::time::timeout(Duration::from_secs(5), served).await.expect("served returns").unwrap();
    }
}
