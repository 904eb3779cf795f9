//! [`FallbackChain`]: ordered models; a call the current one cannot serve moves to the next
//! (F23).

use std::sync::Arc;

use async_trait::async_trait;
use looprail_loop_core::event::{Event, EventSink};
use looprail_loop_core::provider::{ModelRequest, ModelResponse, Provider, ProviderError, ResponseStream};

use crate::classify::{ErrorClass, classify};
use crate::stream_start::first_delivery;

/// Tries its providers in order. A transient failure (after that provider's own retries, when
/// it is wrapped in [`Retry`](crate::Retry)) or a "model unavailable" error moves the call to
/// the next provider, publishing `agent.model.fallback`; authentication and invalid-request
/// errors are returned at once, since they would fail everywhere. The response names the model
/// that answered, so usage and cost are charged to it.
pub struct FallbackChain {
    providers: Vec<Arc<dyn Provider>>,
    events: EventSink,
}

impl std::fmt::Debug for FallbackChain {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.providers.iter().map(|p| p.model().to_owned())).finish()
    }
}

impl FallbackChain {
    /// A chain over `providers`, first to last. An empty chain fails every call.
    pub fn new(providers: impl IntoIterator<Item = Arc<dyn Provider>>) -> Self {
        Self { providers: providers.into_iter().collect(), events: EventSink::none() }
    }

    /// Publishes `agent.model.fallback` events here.
    #[must_use]
    pub fn with_events(mut self, events: EventSink) -> Self {
        self.events = events;
        self
    }

    /// Whether `error` from provider `index` moves on; publishes the hop when it does.
    fn hand_on(&self, index: usize, error: &ProviderError) -> bool {
        let Some(next) = self.providers.get(index + 1) else { return false };
        if classify(error) == ErrorClass::Permanent {
            return false;
        }
        let from = self.providers[index].model().to_owned();
        tracing::warn!(%from, to = next.model(), %error, "falling back to the next model");
        self.events.emit(&Event::ModelFallback {
            from,
            to: next.model().to_owned(),
            cause: error.to_string(),
        });
        true
    }

    fn empty() -> ProviderError {
        ProviderError::new(
            looprail_loop_core::provider::ProviderErrorKind::InvalidRequest,
            "the fallback chain is empty",
        )
    }
}

#[async_trait]
impl Provider for FallbackChain {
    fn model(&self) -> &str {
        self.providers.first().map_or("", |p| p.model())
    }

    fn provider_name(&self) -> &str {
        self.providers.first().map_or("unknown", |p| p.provider_name())
    }

    fn supports_tool_choice(&self) -> bool {
        self.providers.iter().all(|p| p.supports_tool_choice())
    }

    async fn complete(&self, request: &ModelRequest<'_>) -> Result<ModelResponse, ProviderError> {
        for (index, provider) in self.providers.iter().enumerate() {
            match provider.complete(request).await {
                Ok(response) => return Ok(response),
                Err(error) if self.hand_on(index, &error) => continue,
                Err(error) => return Err(error),
            }
        }
        Err(Self::empty())
    }

    async fn stream(&self, request: &ModelRequest<'_>) -> Result<ResponseStream, ProviderError> {
        for (index, provider) in self.providers.iter().enumerate() {
            let error = match provider.stream(request).await {
                Err(error) => error,
                Ok(stream) => match first_delivery(stream).await {
                    Ok(stream) => return Ok(stream),
                    // Nothing was delivered yet: the call may be made again.
                    Err(error) => error,
                },
            };
            if !self.hand_on(index, &error) {
                return Err(error);
            }
        }
        Err(Self::empty())
    }
}
