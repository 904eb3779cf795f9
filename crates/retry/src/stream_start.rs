//! The start of a stream, where a failure can still be retried.

use futures_util::StreamExt;
use looprail_loop_core::provider::{ProviderError, ResponseStream, StreamEvent};

/// Waits for a stream's first item. A stream that fails before delivering anything is returned
/// as its error (the call may be made again); otherwise the stream comes back whole, first item
/// included, and its later failures are the caller's to pass on (never to replay).
pub(crate) async fn first_delivery(mut stream: ResponseStream) -> Result<ResponseStream, ProviderError> {
    match stream.next().await {
        Some(StreamEvent::Finished(Err(error))) => Err(error),
        Some(first) => Ok(Box::pin(futures_util::stream::once(async move { first }).chain(stream))),
        None => Ok(stream),
    }
}
