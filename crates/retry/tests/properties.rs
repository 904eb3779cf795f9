//! For any sequence of transient and permanent failures, attempts never exceed the configured
//! maximum and a permanent error is never retried (issue 4).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Mutex;

use async_trait::async_trait;
use looprail_loop_core::prelude::*;
use looprail_loop_core::provider::CallPurpose;
use looprail_retry::{ModelRetryConfig, Retry};
use proptest::prelude::*;

#[derive(Debug, Clone, Copy)]
enum Outcome {
    Transient,
    Permanent,
    Ok,
}

struct Sequence {
    outcomes: Mutex<Vec<Outcome>>,
    seen: Mutex<Vec<Outcome>>,
}

#[async_trait]
impl Provider for Sequence {
    fn model(&self) -> &str {
        "seq"
    }
    async fn complete(&self, _r: &ModelRequest<'_>) -> Result<ModelResponse, ProviderError> {
        let mut outcomes = self.outcomes.lock().unwrap();
        let next = if outcomes.is_empty() { Outcome::Ok } else { outcomes.remove(0) };
        self.seen.lock().unwrap().push(next);
        match next {
            Outcome::Transient => Err(ProviderError::new(ProviderErrorKind::Overloaded, "busy")),
            Outcome::Permanent => Err(ProviderError::new(ProviderErrorKind::InvalidRequest, "bad")),
            Outcome::Ok => Ok(ModelResponse::text("seq", "ok")),
        }
    }
}

fn outcome() -> impl Strategy<Value = Outcome> {
    prop_oneof![4 => Just(Outcome::Transient), 1 => Just(Outcome::Permanent), 1 => Just(Outcome::Ok)]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn attempts_are_capped_and_permanent_errors_end_the_call(
        outcomes in prop::collection::vec(outcome(), 0..12),
        max_retries in 0u32..6,
        seed in any::<u64>(),
    ) {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().unwrap();
        let provider = Sequence { outcomes: Mutex::new(outcomes), seen: Mutex::new(Vec::new()) };
        let config = ModelRetryConfig { max_retries, initial_delay_ms: 100, max_delay_ms: 1_000, ..Default::default() };
        let retry = Retry::new(provider).with_config(config).with_jitter_seed(seed);
        let messages = [Message::user("x")];
        let request = ModelRequest { messages: &messages, tools: &[], tool_choice: ToolChoice::Auto, max_output_tokens: None, instruction: None, purpose: CallPurpose::Turn };
        let result = runtime.block_on(retry.complete(&request));
        let seen = retry.inner().seen.lock().unwrap().clone();
        prop_assert!(seen.len() as u32 <= max_retries + 1);
        // Only the last attempt may be permanent or successful: everything before it was transient.
        for outcome in &seen[..seen.len() - 1] {
            prop_assert!(matches!(outcome, Outcome::Transient));
        }
        match seen.last().unwrap() {
            Outcome::Ok => prop_assert!(result.is_ok()),
            Outcome::Permanent => prop_assert_eq!(result.unwrap_err().kind, ProviderErrorKind::InvalidRequest),
            Outcome::Transient => prop_assert_eq!(seen.len() as u32, max_retries + 1),
        }
    }
}
