//! Retry and fallback with the real clients against the local fake server (issue 4).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Duration;

use looprail_loop_core::prelude::*;
use looprail_providers::fake::{FakeServer, Reply};
use looprail_providers::{AnthropicClient, ClientConfig, OpenAiClient};
use looprail_retry::{FallbackChain, ModelRetryConfig, Retry};

const OPENAI_OK: &str = r#"{"model":"gpt-4o-mini-2024","choices":[{"index":0,"message":{"role":"assistant","content":"answer from openai"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1000000,"completion_tokens":0}}"#;
const OVERLOADED: &str = r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;

fn fast() -> ModelRetryConfig {
    // Real sockets: keep real waits short.
    ModelRetryConfig { max_retries: 2, initial_delay_ms: 10, max_delay_ms: 20, ..Default::default() }
}

fn openai(server: &FakeServer) -> OpenAiClient {
    OpenAiClient::new(ClientConfig::custom("gpt-4o-mini", &format!("{}/v1", server.url), Some("sk"))).unwrap()
}

fn anthropic(server: &FakeServer) -> AnthropicClient {
    let config = ClientConfig::custom("claude-primary", &server.url, Some("sk-ant")).with_timeouts(
        Duration::from_secs(2),
        Duration::from_secs(10),
        Duration::from_secs(5),
    );
    AnthropicClient::new(config).unwrap()
}

async fn drive(provider: Arc<dyn Provider>, config: LoopConfig) -> (Outcome, Vec<Event>) {
    let mut run = Run::builder(config).user("hi").build().unwrap();
    let (sink, mut rx) = EventSink::channel();
    let outcome = Driver::new(provider, ToolSet::new()).with_events(sink).drive(&mut run).await.unwrap();
    let mut events = Vec::new();
    while let Ok(e) = rx.try_recv() {
        events.push(e);
    }
    (outcome, events)
}

#[tokio::test]
async fn a_429_then_200_is_retried_honouring_retry_after() {
    let limited = Reply::json(
        429,
        r#"{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}"#,
    )
    .with_header("retry-after-ms", "30");
    let server = FakeServer::start(vec![limited, Reply::json(200, OPENAI_OK)]).await;
    let (sink, mut rx) = EventSink::channel();
    let provider = Retry::new(openai(&server)).with_config(fast()).with_events(sink);
    let started = std::time::Instant::now();
    let (outcome, _) = drive(Arc::new(provider), LoopConfig::default()).await;
    assert_eq!(outcome.final_text, "answer from openai");
    assert_eq!(server.requests().len(), 2);
    assert!(started.elapsed() >= Duration::from_millis(30), "retry-after-ms was honoured");
    let retry = rx.try_recv().unwrap();
    assert!(matches!(retry, Event::ModelRetry { attempt: 2, delay_ms: 30, .. }), "{retry:?}");
}

#[tokio::test]
async fn a_529_after_retries_falls_back_and_the_answering_model_is_charged() {
    let primary_server = FakeServer::start(vec![Reply::json(529, OVERLOADED); 3]).await;
    let secondary_server = FakeServer::start(vec![Reply::json(200, OPENAI_OK)]).await;
    let (sink, mut rx) = EventSink::channel();
    let chain = FallbackChain::new([
        Arc::new(Retry::new(anthropic(&primary_server)).with_config(fast())) as Arc<dyn Provider>,
        Arc::new(Retry::new(openai(&secondary_server)).with_config(fast())),
    ])
    .with_events(sink);
    let mut config = LoopConfig::default();
    config.prices = config
        .prices
        .with(
            "claude-primary",
            looprail_loop_core::price::ModelPrice {
                input_per_mtok: 3.0,
                output_per_mtok: 15.0,
                ..Default::default()
            },
        )
        .with(
            "gpt-4o-mini",
            looprail_loop_core::price::ModelPrice {
                input_per_mtok: 0.15,
                output_per_mtok: 0.6,
                ..Default::default()
            },
        );
    let (outcome, events) = drive(Arc::new(chain), config).await;
    assert_eq!(outcome.final_text, "answer from openai");
    assert_eq!(primary_server.requests().len(), 3, "1 attempt + 2 retries on the primary");
    assert_eq!(secondary_server.requests().len(), 1);
    let fallback = rx.try_recv().unwrap();
    assert!(
        matches!(&fallback, Event::ModelFallback { from, to, .. } if from == "claude-primary" && to == "gpt-4o-mini"),
        "{fallback:?}"
    );
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::ModelResponded { model, .. } if model == "gpt-4o-mini-2024"))
    );
    assert!((outcome.cost - 0.15).abs() < 1e-9, "priced as the model that answered: {}", outcome.cost);
}

#[tokio::test]
async fn a_401_does_not_fall_through() {
    let primary_server = FakeServer::start(vec![Reply::json(
        401,
        r#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}"#,
    )])
    .await;
    let secondary_server = FakeServer::start(vec![Reply::json(200, OPENAI_OK)]).await;
    let chain = FallbackChain::new([
        Arc::new(Retry::new(anthropic(&primary_server)).with_config(fast())) as Arc<dyn Provider>,
        Arc::new(Retry::new(openai(&secondary_server)).with_config(fast())),
    ]);
    let (outcome, _) = drive(Arc::new(chain), LoopConfig::default()).await;
    assert_eq!(outcome.state, RunState::Error);
    let StopCause::ProviderFailed { message } = &outcome.stop else { panic!("{:?}", outcome.stop) };
    assert!(message.contains("invalid x-api-key"));
    assert_eq!(primary_server.requests().len(), 1, "auth errors are not retried");
    assert_eq!(secondary_server.requests().len(), 0, "nor handed to the next model");
    assert!(!outcome.final_text.is_empty(), "the user still gets a reply");
}
