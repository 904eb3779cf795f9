//! [`Retry`]: retries a provider's transient failures with exponential backoff and full jitter
//! (F21), honouring `retry-after` and `x-should-retry`.

use std::time::Duration;

use async_trait::async_trait;
use looprail_loop_core::event::{Event, EventSink};
use looprail_loop_core::provider::{ModelRequest, ModelResponse, Provider, ProviderError, ResponseStream};

use crate::classify::{ErrorClass, classify};
use crate::config::ModelRetryConfig;
use crate::jitter::Jitter;
use crate::stream_start::first_delivery;

/// A provider wrapper that retries transient failures.
///
/// Waits are full-jitter draws from an exponential schedule (`initial × factorⁿ`, capped); a
/// `retry-after` from the provider replaces the drawn wait (up to `max_retry_after_ms`); retries
/// stop at `max_retries` or when the next wait would cross `max_elapsed_ms`, and the last error
/// is returned with the number of attempts. Permanent errors are never retried. A stream is
/// retried only while nothing has been delivered from it: once a delta went out, a failure is
/// passed on, never replayed.
///
/// ```
/// use looprail_retry::Retry;
/// use looprail_loop_core::testkit::ScriptedProvider;
/// use looprail_loop_core::provider::ProviderErrorKind;
///
/// let flaky = ScriptedProvider::new("m").fail(ProviderErrorKind::Overloaded, "busy").reply_text("ok");
/// let provider = Retry::new(flaky).with_jitter_seed(7);
/// # let _ = provider;
/// ```
#[derive(Debug)]
pub struct Retry<P> {
    inner: P,
    config: ModelRetryConfig,
    jitter: Jitter,
    events: EventSink,
}

impl<P: Provider> Retry<P> {
    /// Retries `inner` with the default settings.
    pub fn new(inner: P) -> Self {
        Self {
            inner,
            config: ModelRetryConfig::default(),
            jitter: Jitter::from_clock(),
            events: EventSink::none(),
        }
    }

    /// Uses these settings.
    #[must_use]
    pub fn with_config(mut self, config: ModelRetryConfig) -> Self {
        self.config = config;
        self
    }

    /// Makes the jitter reproducible.
    #[must_use]
    pub fn with_jitter_seed(mut self, seed: u64) -> Self {
        self.jitter = Jitter::seeded(seed);
        self
    }

    /// The wrapped provider.
    pub fn inner(&self) -> &P {
        &self.inner
    }

    /// Publishes `agent.model.retry` events here.
    #[must_use]
    pub fn with_events(mut self, events: EventSink) -> Self {
        self.events = events;
        self
    }

    /// The wait before the next attempt, or `None` when the error must be returned.
    fn next_wait(
        &self,
        error: &ProviderError,
        retries_done: usize,
        steps: &[Duration],
        spent: Duration,
    ) -> Option<Duration> {
        if classify(error) != ErrorClass::Transient {
            return None;
        }
        let step = *steps.get(retries_done)?;
        let wait = match error.retry_after {
            Some(asked) if asked <= Duration::from_millis(self.config.max_retry_after_ms) => asked,
            Some(_) => return None,
            None => self.jitter.full(step),
        };
        (spent + wait <= Duration::from_millis(self.config.max_elapsed_ms)).then_some(wait)
    }

    async fn wait_or_give_up(
        &self,
        error: ProviderError,
        retries_done: &mut usize,
        steps: &[Duration],
        started: tokio::time::Instant,
    ) -> Result<(), ProviderError> {
        let Some(wait) = self.next_wait(&error, *retries_done, steps, started.elapsed()) else {
            return Err(gave_up(error, *retries_done + 1));
        };
        *retries_done += 1;
        self.events.emit(&Event::ModelRetry {
            model: self.inner.model().to_owned(),
            attempt: u32::try_from(*retries_done + 1).unwrap_or(u32::MAX),
            delay_ms: u64::try_from(wait.as_millis()).unwrap_or(u64::MAX),
            cause: error.to_string(),
        });
        tokio::time::sleep(wait).await;
        Ok(())
    }
}

fn gave_up(mut error: ProviderError, attempts: usize) -> ProviderError {
    if attempts > 1 {
        error.message = format!("{} (gave up after {attempts} attempts)", error.message);
    }
    error
}

#[async_trait]
impl<P: Provider> Provider for Retry<P> {
    fn model(&self) -> &str {
        self.inner.model()
    }

    fn provider_name(&self) -> &str {
        self.inner.provider_name()
    }

    fn supports_tool_choice(&self) -> bool {
        self.inner.supports_tool_choice()
    }

    async fn complete(&self, request: &ModelRequest<'_>) -> Result<ModelResponse, ProviderError> {
        let steps = self.config.steps();
        let started = tokio::time::Instant::now();
        let mut retries_done = 0;
        loop {
            match self.inner.complete(request).await {
                Ok(response) => return Ok(response),
                Err(error) => self.wait_or_give_up(error, &mut retries_done, &steps, started).await?,
            }
        }
    }

    async fn stream(&self, request: &ModelRequest<'_>) -> Result<ResponseStream, ProviderError> {
        let steps = self.config.steps();
        let started = tokio::time::Instant::now();
        let mut retries_done = 0;
        loop {
            let error = match self.inner.stream(request).await {
                Err(error) => error,
                Ok(stream) => match first_delivery(stream).await {
                    Ok(stream) => return Ok(stream),
                    // Nothing was delivered yet: the call may be made again.
                    Err(error) => error,
                },
            };
            self.wait_or_give_up(error, &mut retries_done, &steps, started).await?;
        }
    }
}
