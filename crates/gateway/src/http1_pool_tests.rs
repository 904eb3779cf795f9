//! Tests of the plain-HTTP/1 connection pool against local upstreams.

use std::sync::atomic::{AtomicUsize, Ordering};

use axum::serve::ListenerExt;
use http_body_util::BodyExt;

use super::*;

/// An upstream counting the connections it accepts: `/whole` answers 10 bytes by length,
/// `/stream` 3 pieces chunked, `/long` 200 KiB chunked.
async fn upstream() -> (String, Arc<AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let address = listener.local_addr().expect("address");
    let accepted = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&accepted);
    let listener = listener.tap_io(move |_| {
        counted.fetch_add(1, Ordering::SeqCst);
    });
    let pieces = |pieces: Vec<Bytes>| {
        axum::body::Body::from_stream(futures_util::stream::iter(
            pieces.into_iter().map(Ok::<_, std::io::Error>),
        ))
    };
    let app = axum::Router::new()
        .route("/whole", axum::routing::post(|| async { "0123456789" }))
        .route(
            "/stream",
            axum::routing::post(move || async move {
                pieces(vec![Bytes::from_static(b"a"), Bytes::from_static(b"b"), Bytes::from_static(b"c")])
            }),
        )
        .route(
            "/long",
            axum::routing::post(move || async move { pieces(vec![Bytes::from(vec![b'x'; 1024]); 200]) }),
        );
    tokio::spawn(async move { axum::serve(listener, app).await });
    (format!("http://{address}"), accepted)
}

/// A POST of `{}` to `url`.
pub(crate) fn post(url: String) -> Request<Full<Bytes>> {
    let mut request = Request::new(Full::new(Bytes::from_static(b"{}")));
    *request.method_mut() = http::Method::POST;
    *request.uri_mut() = url.parse().expect("uri");
    request
}

async fn read(response: Response<Driven>) -> Bytes {
    response.into_body().collect().await.expect("body").to_bytes()
}

fn pool() -> Arc<Pool> {
    Pool::new(Duration::from_secs(5), Duration::from_secs(90))
}

#[tokio::test]
async fn a_connection_serves_the_next_request_once_its_answer_is_read() {
    let (base, accepted) = upstream().await;
    let pool = pool();
    for _ in 0..3 {
        let response = pool.send(post(format!("{base}/whole"))).await.expect("answer");
        assert_eq!(read(response).await, "0123456789");
        let response = pool.send(post(format!("{base}/stream"))).await.expect("answer");
        assert_eq!(read(response).await, "abc");
    }
    assert_eq!(accepted.load(Ordering::SeqCst), 1, "six requests, one connection");
}

#[tokio::test]
async fn an_answer_dropped_before_its_end_is_read_out_and_its_connection_reused() {
    let (base, accepted) = upstream().await;
    let pool = pool();
    let response = pool.send(post(format!("{base}/stream"))).await.expect("answer");
    let mut body = response.into_body();
    let first = body.frame().await.expect("a piece").expect("read");
    assert_eq!(first.into_data().expect("data"), "a");
    drop(body);
    // The rest is read by a task: the next request finds the connection back.
    for _ in 0..100 {
        if pool.idle.lock().expect("lock").values().map(VecDeque::len).sum::<usize>() == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let response = pool.send(post(format!("{base}/whole"))).await.expect("answer");
    assert_eq!(read(response).await, "0123456789");
    assert_eq!(accepted.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn an_answer_dropped_with_a_long_rest_closes_its_connection() {
    let (base, accepted) = upstream().await;
    let pool = pool();
    let response = pool.send(post(format!("{base}/long"))).await.expect("answer");
    drop(response);
    tokio::time::sleep(Duration::from_millis(50)).await;
    let response = pool.send(post(format!("{base}/whole"))).await.expect("answer");
    assert_eq!(read(response).await, "0123456789");
    assert_eq!(accepted.load(Ordering::SeqCst), 2, "past the bytes read out, a new connection");
}

/// Answers one request on each connection, keeping it open (as keep-alive allows) until
/// told to close it; says when it has.
async fn closing_upstream()
-> (String, tokio::sync::mpsc::UnboundedSender<()>, tokio::sync::mpsc::UnboundedReceiver<()>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let address = listener.local_addr().expect("address");
    let (close, mut told) = tokio::sync::mpsc::unbounded_channel::<()>();
    let (closed, closings) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let mut seen = Vec::new();
            let mut buffer = [0_u8; 1024];
            while !seen.ends_with(b"{}") {
                match socket.read(&mut buffer).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => seen.extend_from_slice(&buffer[..n]),
                }
            }
            let _ = socket.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok").await;
            let _ = told.recv().await;
            drop(socket);
            let _ = closed.send(());
        }
    });
    (format!("http://{address}"), close, closings)
}

#[tokio::test]
async fn an_idle_connection_the_upstream_closed_is_not_used() {
    let (base, close, mut closed) = closing_upstream().await;
    let pool = pool();
    for _ in 0..3 {
        let response = pool.send(post(format!("{base}/v1/x"))).await.expect("answer");
        assert_eq!(read(response).await, "ok");
        assert_eq!(pool.idle.lock().expect("lock").values().map(VecDeque::len).sum::<usize>(), 1, "kept");
        close.send(()).expect("close");
        closed.recv().await.expect("closed");
    }
}

/// A future's wake-ups of its own task from inside its poll (which tokio takes as a yield:
/// the task queued again and an idle worker woken), counted.
struct OwnWakes {
    polling: std::sync::atomic::AtomicBool,
    counted: AtomicUsize,
    task: Mutex<Option<std::task::Waker>>,
}

impl std::task::Wake for OwnWakes {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }
    fn wake_by_ref(self: &Arc<Self>) {
        // The tests run on a current-thread runtime: a wake-up during the poll is the poll's.
        if self.polling.load(Ordering::SeqCst) {
            self.counted.fetch_add(1, Ordering::SeqCst);
        }
        if let Some(task) = &*self.task.lock().expect("lock") {
            task.wake_by_ref();
        }
    }
}

/// Awaits `future`, answering how many times it woke its own task while polled.
async fn own_wakes<T>(future: impl Future<Output = T>) -> (T, usize) {
    let own =
        Arc::new(OwnWakes { polling: false.into(), counted: AtomicUsize::new(0), task: Mutex::new(None) });
    let waker = std::task::Waker::from(Arc::clone(&own));
    let mut future = std::pin::pin!(future);
    let out = poll_fn(|cx| {
        *own.task.lock().expect("lock") = Some(cx.waker().clone());
        own.polling.store(true, Ordering::SeqCst);
        let polled = future.as_mut().poll(&mut Context::from_waker(&waker));
        own.polling.store(false, Ordering::SeqCst);
        polled
    })
    .await;
    (out, own.counted.load(Ordering::SeqCst))
}

#[tokio::test]
async fn a_request_and_its_answer_through_the_pool_never_wake_their_own_task() {
    let (base, _) = upstream().await;
    let pool = pool();
    for path in ["whole", "stream", "whole", "long"] {
        let url = format!("{base}/{path}");
        let (body, woken) =
            own_wakes(async { read(pool.send(post(url)).await.expect("answer")).await }).await;
        assert!(!body.is_empty());
        assert_eq!(woken, 0, "/{path}: the connection's hand-overs woke the task that drives it");
    }
}
