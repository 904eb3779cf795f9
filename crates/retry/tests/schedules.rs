//! The exact retry schedules, in virtual time (tokio's paused clock).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use futures_util::StreamExt;
use looprail_loop_core::executor::{ExecContext, ToolExecutor};
use looprail_loop_core::prelude::*;
use looprail_loop_core::provider::{CallPurpose, ResponseStream, StreamEvent};
use looprail_loop_core::tool::{ToolContext, ToolErrorKind, ToolOutput};
use looprail_retry::{ModelRetryConfig, Retry, RetryingExecutor};
use tokio::time::Instant;

/// A provider that fails with the given errors first, then answers, noting when it was called.
struct Flaky {
    failures: Mutex<Vec<ProviderError>>,
    calls: Mutex<Vec<Instant>>,
}

impl Flaky {
    fn new(failures: Vec<ProviderError>) -> Self {
        Self { failures: Mutex::new(failures), calls: Mutex::new(Vec::new()) }
    }
    fn gaps(&self) -> Vec<Duration> {
        let calls = self.calls.lock().unwrap();
        calls.windows(2).map(|w| w[1] - w[0]).collect()
    }
}

#[async_trait]
impl Provider for Flaky {
    fn model(&self) -> &str {
        "flaky"
    }
    async fn complete(&self, _r: &ModelRequest<'_>) -> Result<ModelResponse, ProviderError> {
        self.calls.lock().unwrap().push(Instant::now());
        let mut failures = self.failures.lock().unwrap();
        if failures.is_empty() { Ok(ModelResponse::text("flaky", "ok")) } else { Err(failures.remove(0)) }
    }
}

fn transient() -> ProviderError {
    ProviderError::new(ProviderErrorKind::Server, "502 bad gateway")
}

fn request(messages: &[Message]) -> ModelRequest<'_> {
    ModelRequest {
        messages,
        tools: &[],
        tool_choice: ToolChoice::Auto,
        max_output_tokens: None,
        instruction: None,
        purpose: CallPurpose::Turn,
    }
}

#[tokio::test(start_paused = true)]
async fn waits_are_full_jitter_draws_within_the_exponential_steps() {
    let config = ModelRetryConfig {
        max_retries: 3,
        initial_delay_ms: 1_000,
        max_delay_ms: 3_000,
        ..Default::default()
    };
    for seed in 0..20 {
        let flaky = Arc::new(Flaky::new(vec![transient(), transient(), transient()]));
        let retry =
            Retry::new(SharedProvider(flaky.clone())).with_config(config.clone()).with_jitter_seed(seed);
        let messages = [Message::user("x")];
        assert!(retry.complete(&request(&messages)).await.is_ok());
        let gaps = flaky.gaps();
        assert_eq!(gaps.len(), 3);
        for (gap, cap) in gaps.iter().zip([1_000u64, 2_000, 3_000]) {
            assert!(*gap <= Duration::from_millis(cap), "seed {seed}: {gap:?} > {cap} ms");
        }
    }
    // Full jitter spreads the waits: over many seeds some first waits fall in the lower half.
    let mut low = 0;
    for seed in 0..50 {
        let flaky = Arc::new(Flaky::new(vec![transient()]));
        let retry =
            Retry::new(SharedProvider(flaky.clone())).with_config(config.clone()).with_jitter_seed(seed);
        let messages = [Message::user("x")];
        retry.complete(&request(&messages)).await.unwrap();
        low += usize::from(flaky.gaps()[0] < Duration::from_millis(500));
    }
    assert!((10..=40).contains(&low), "full jitter draws from [0, step]: {low}/50 below half");
}

#[tokio::test(start_paused = true)]
async fn retry_after_replaces_the_backoff_and_permanent_errors_are_not_retried() {
    let mut asked = ProviderError::new(ProviderErrorKind::RateLimited, "slow down");
    asked.retry_after = Some(Duration::from_secs(7));
    let flaky = Arc::new(Flaky::new(vec![asked]));
    let messages = [Message::user("x")];
    Retry::new(SharedProvider(flaky.clone()))
        .with_jitter_seed(1)
        .complete(&request(&messages))
        .await
        .unwrap();
    assert_eq!(flaky.gaps(), [Duration::from_secs(7)]);

    let auth = Arc::new(Flaky::new(vec![ProviderError::new(ProviderErrorKind::Auth, "bad key")]));
    let err = Retry::new(SharedProvider(auth.clone())).complete(&request(&messages)).await.unwrap_err();
    assert_eq!(err.kind, ProviderErrorKind::Auth);
    assert_eq!(auth.calls.lock().unwrap().len(), 1);

    let mut advised = transient();
    advised.should_retry = Some(false);
    let told = Arc::new(Flaky::new(vec![advised]));
    Retry::new(SharedProvider(told.clone())).complete(&request(&messages)).await.unwrap_err();
    assert_eq!(told.calls.lock().unwrap().len(), 1, "x-should-retry: false is obeyed");
}

#[tokio::test(start_paused = true)]
async fn retries_stop_at_the_cap_and_at_the_elapsed_budget() {
    let messages = [Message::user("x")];
    let always = Arc::new(Flaky::new(vec![transient(); 10]));
    let err = Retry::new(SharedProvider(always.clone()))
        .with_jitter_seed(3)
        .complete(&request(&messages))
        .await
        .unwrap_err();
    assert_eq!(always.calls.lock().unwrap().len(), 4, "1 attempt + max_retries 3");
    assert!(err.message.contains("gave up after 4 attempts"), "{}", err.message);

    let mut too_long = transient();
    too_long.retry_after = Some(Duration::from_secs(300));
    let patient = Arc::new(Flaky::new(vec![too_long]));
    Retry::new(SharedProvider(patient.clone())).complete(&request(&messages)).await.unwrap_err();
    assert_eq!(
        patient.calls.lock().unwrap().len(),
        1,
        "a retry-after beyond max_retry_after is not waited for"
    );

    let budget = ModelRetryConfig {
        max_retries: 10,
        initial_delay_ms: 10_000,
        max_delay_ms: 10_000,
        max_elapsed_ms: 25_000,
        ..Default::default()
    };
    let mut slow = transient();
    slow.retry_after = Some(Duration::from_secs(10));
    let capped = Arc::new(Flaky::new(vec![slow; 10]));
    Retry::new(SharedProvider(capped.clone()))
        .with_config(budget)
        .complete(&request(&messages))
        .await
        .unwrap_err();
    assert_eq!(capped.calls.lock().unwrap().len(), 3, "10 s + 10 s fit in 25 s, a third wait does not");
}

/// A provider whose stream delivers `delivered` text deltas and then fails transiently.
struct BreaksMidStream {
    delivered: usize,
    calls: Mutex<u32>,
}

#[async_trait]
impl Provider for BreaksMidStream {
    fn model(&self) -> &str {
        "breaks"
    }
    async fn complete(&self, _r: &ModelRequest<'_>) -> Result<ModelResponse, ProviderError> {
        unreachable!("streaming only")
    }
    async fn stream(&self, _r: &ModelRequest<'_>) -> Result<ResponseStream, ProviderError> {
        *self.calls.lock().unwrap() += 1;
        let mut items: Vec<StreamEvent> =
            (0..self.delivered).map(|i| StreamEvent::TextDelta(format!("part{i} "))).collect();
        items.push(StreamEvent::Finished(Err(ProviderError::new(
            ProviderErrorKind::StreamBroken,
            "connection reset",
        ))));
        Ok(Box::pin(futures_util::stream::iter(items)))
    }
}

#[tokio::test(start_paused = true)]
async fn a_stream_is_retried_only_before_it_delivered_anything() {
    let messages = [Message::user("x")];
    let before = Arc::new(BreaksMidStream { delivered: 0, calls: Mutex::new(0) });
    let retry = Retry::new(SharedProvider(before.clone())).with_jitter_seed(5);
    let error = match retry.stream(&request(&messages)).await {
        Ok(_) => panic!("every attempt failed before delivering anything"),
        Err(error) => error,
    };
    // Nothing was ever delivered, so every attempt could be retried, up to the cap.
    assert_eq!(*before.calls.lock().unwrap(), 4);
    assert!(error.message.contains("gave up after 4 attempts"), "{}", error.message);

    let after = Arc::new(BreaksMidStream { delivered: 2, calls: Mutex::new(0) });
    let retry = Retry::new(SharedProvider(after.clone())).with_jitter_seed(5);
    let mut stream = retry.stream(&request(&messages)).await.unwrap();
    let mut items = Vec::new();
    while let Some(item) = stream.next().await {
        items.push(item);
    }
    assert_eq!(*after.calls.lock().unwrap(), 1, "output was delivered: never replayed");
    assert!(matches!(items.last(), Some(StreamEvent::Finished(Err(_)))));
    assert_eq!(items.len(), 3);
}

/// Shares one provider between the test and the wrapper.
struct SharedProvider<P>(Arc<P>);

#[async_trait]
impl<P: Provider> Provider for SharedProvider<P> {
    fn model(&self) -> &str {
        self.0.model()
    }
    async fn complete(&self, r: &ModelRequest<'_>) -> Result<ModelResponse, ProviderError> {
        self.0.complete(r).await
    }
    async fn stream(&self, r: &ModelRequest<'_>) -> Result<ResponseStream, ProviderError> {
        self.0.stream(r).await
    }
}

/// A tool that fails transiently a set number of times per argument value, noting call times.
struct Unstable {
    name: &'static str,
    idempotent: bool,
    fail_first: u32,
    kind: ToolErrorKind,
    calls: Mutex<Vec<(String, Instant)>>,
}

#[async_trait]
impl Tool for Unstable {
    fn definition(&self) -> ToolDefinition {
        ToolDefinition::new(self.name, "unstable", serde_json::json!({"type": "object"}))
    }
    fn idempotent(&self) -> bool {
        self.idempotent
    }
    async fn call(&self, args: serde_json::Value, _cx: ToolContext) -> Result<ToolOutput, ToolError> {
        let key = args.to_string();
        let mut calls = self.calls.lock().unwrap();
        calls.push((key.clone(), Instant::now()));
        let so_far = calls.iter().filter(|(k, _)| *k == key).count() as u32;
        if so_far <= self.fail_first {
            Err(ToolError::new(self.kind, "upstream timed out"))
        } else {
            Ok("fine".into())
        }
    }
}

fn unstable(name: &'static str, idempotent: bool, fail_first: u32, kind: ToolErrorKind) -> Arc<Unstable> {
    Arc::new(Unstable { name, idempotent, fail_first, kind, calls: Mutex::new(Vec::new()) })
}

async fn execute(tool: Arc<Unstable>, calls: &[ToolCall]) -> (Vec<ToolResult>, Vec<Event>) {
    let mut tools = ToolSet::new();
    tools.insert(tool);
    let (sink, mut rx) = EventSink::channel();
    let cx = ExecContext { events: sink, ..ExecContext::default() };
    let results = RetryingExecutor::default().execute(calls, &tools, &cx).await;
    let mut events = Vec::new();
    while let Ok(e) = rx.try_recv() {
        events.push(e);
    }
    (results, events)
}

#[tokio::test(start_paused = true)]
async fn idempotent_tools_retry_after_half_a_second_then_two_seconds() {
    let tool = unstable("lookup", true, 2, ToolErrorKind::Timeout);
    let (results, events) = execute(tool.clone(), &[ToolCall::new("c1", "lookup", "{}")]).await;
    assert!(!results[0].is_error);
    let times: Vec<Instant> = tool.calls.lock().unwrap().iter().map(|(_, t)| *t).collect();
    assert_eq!(times.len(), 3);
    assert_eq!(
        (times[1] - times[0], times[2] - times[1]),
        (Duration::from_millis(500), Duration::from_secs(2))
    );
    let retries: Vec<(u32, u64)> = events
        .iter()
        .filter_map(|e| match e {
            Event::ToolRetry { attempt, delay_ms, tool, call_id, cause } => {
                assert_eq!((tool.as_str(), call_id.as_str()), ("lookup", "c1"));
                assert!(cause.contains("timed out"));
                Some((*attempt, *delay_ms))
            }
            _ => None,
        })
        .collect();
    assert_eq!(retries, [(2, 500), (3, 2_000)]);
}

#[tokio::test(start_paused = true)]
async fn the_catalogue_s_8_second_step_is_reached_with_a_4th_attempt() {
    // F22 lists 0.5 s -> 2 s -> 8 s; the default of 3 calls in all stops before 8 s. With
    // `max_attempts = 4` the third wait is the catalogue's 8 s.
    let config = looprail_retry::ToolRetryConfig { max_attempts: 4, ..Default::default() };
    assert_eq!(config.delays_ms, [500, 2_000, 8_000], "the catalogue's schedule is the default");
    let tool = unstable("lookup", true, 3, ToolErrorKind::Timeout);
    let mut tools = ToolSet::new();
    tools.insert(tool.clone());
    let results = RetryingExecutor::new(config)
        .execute(&[ToolCall::new("c1", "lookup", "{}")], &tools, &ExecContext::default())
        .await;
    assert!(!results[0].is_error);
    let times: Vec<Instant> = tool.calls.lock().unwrap().iter().map(|(_, t)| *t).collect();
    let gaps: Vec<Duration> = times.windows(2).map(|w| w[1] - w[0]).collect();
    assert_eq!(gaps, [Duration::from_millis(500), Duration::from_secs(2), Duration::from_secs(8)]);
}

#[tokio::test(start_paused = true)]
async fn an_idempotent_tool_is_called_at_most_3_times_and_a_side_effecting_one_once() {
    let idempotent = unstable("lookup", true, 10, ToolErrorKind::Server);
    let (results, _) = execute(idempotent.clone(), &[ToolCall::new("c1", "lookup", "{}")]).await;
    assert_eq!(idempotent.calls.lock().unwrap().len(), 3);
    assert!(results[0].is_error && results[0].content.contains("failed 3 times"), "{}", results[0].content);

    let side_effect = unstable("send_email", false, 10, ToolErrorKind::Server);
    let (results, events) = execute(side_effect.clone(), &[ToolCall::new("c1", "send_email", "{}")]).await;
    assert_eq!(side_effect.calls.lock().unwrap().len(), 1, "side effects are never retried");
    assert!(results[0].is_error);
    assert!(events.is_empty());

    let permanent = unstable("lookup", true, 10, ToolErrorKind::InvalidArguments);
    execute(permanent.clone(), &[ToolCall::new("c1", "lookup", "{}")]).await;
    assert_eq!(permanent.calls.lock().unwrap().len(), 1, "permanent errors are never retried");
}

#[tokio::test(start_paused = true)]
async fn two_calls_of_one_tool_have_independent_budgets() {
    let tool = unstable("lookup", true, 2, ToolErrorKind::Connection);
    let calls = [ToolCall::new("a", "lookup", r#"{"q": 1}"#), ToolCall::new("b", "lookup", r#"{"q": 2}"#)];
    let (results, events) = execute(tool.clone(), &calls).await;
    assert!(results.iter().all(|r| !r.is_error));
    assert_eq!(tool.calls.lock().unwrap().len(), 6, "3 attempts each");
    let per_call = |id: &str| {
        events.iter().filter(|e| matches!(e, Event::ToolRetry { call_id, .. } if call_id == id)).count()
    };
    assert_eq!((per_call("a"), per_call("b")), (2, 2));
}
