//! SIGINT and SIGTERM: the first one asks every run of this process to stop at its next safe
//! boundary (checkpointed, left `interrupted` and resumable); a second one exits at once.

use tokio_util::sync::CancellationToken;

/// A token cancelled by the first SIGINT or SIGTERM. Must be called inside the runtime.
pub fn shutdown_token() -> CancellationToken {
    let token = CancellationToken::new();
    let cancel = token.clone();
    tokio::spawn(async move {
        wait_for_signal().await;
        eprintln!("[shutdown] stopping at the next safe boundary (send it again to exit now)");
        cancel.cancel();
        wait_for_signal().await;
        std::process::exit(i32::from(crate::exit::CANCELLED));
    });
    token
}

#[cfg(unix)]
async fn wait_for_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut interrupt), Ok(mut terminate)) =
        (signal(SignalKind::interrupt()), signal(SignalKind::terminate()))
    else {
        return std::future::pending().await; // no signal handling: never fires
    };
    tokio::select! {
        _ = interrupt.recv() => {}
        _ = terminate.recv() => {}
    }
}

#[cfg(not(unix))]
async fn wait_for_signal() {
    if tokio::signal::ctrl_c().await.is_err() {
        std::future::pending::<()>().await;
    }
}
