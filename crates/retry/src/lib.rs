//! Retries, idempotency-aware tool retry and model fallback for looprail.
//!
//! Provider wrappers in the spirit of tower's layers, composed as you need:
//!
//! - [`Retry`] retries a provider's transient failures (exponential backoff with full jitter,
//!   `retry-after` and `x-should-retry` honoured, capped per wait and in total).
//! - [`FallbackChain`] moves a call the current model cannot serve to the next one; errors that
//!   would fail everywhere (authentication, invalid request) are returned at once.
//! - [`RetryingExecutor`] retries transient failures of idempotent tools only
//!   (0.5 s → 2 s → 8 s, 3 attempts), each call with its own budget.
//!
//! Each model retried on its own, then the next one:
//!
//! ```
//! use std::sync::Arc;
//! use looprail_loop_core::prelude::*;
//! use looprail_loop_core::testkit::ScriptedProvider;
//! use looprail_retry::{FallbackChain, Retry, RetryingExecutor};
//!
//! let primary = ScriptedProvider::new("primary").fail(ProviderErrorKind::ModelUnavailable, "not served");
//! let secondary = ScriptedProvider::new("secondary").reply_text("served by the secondary");
//! let chain = FallbackChain::new([
//!     Arc::new(Retry::new(primary)) as Arc<dyn Provider>,
//!     Arc::new(Retry::new(secondary)),
//! ]);
//! let mut run = Run::builder(LoopConfig::default()).user("hi").build()?;
//! let driver = Driver::new(Arc::new(chain), ToolSet::new()).with_executor(Arc::new(RetryingExecutor::default()));
//! let runtime = tokio::runtime::Builder::new_current_thread().enable_time().build()?;
//! let outcome = runtime.block_on(driver.drive(&mut run))?;
//! assert_eq!(outcome.final_text, "served by the secondary");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod classify;
mod config;
mod fallback;
mod jitter;
mod model_retry;
mod stream_start;
mod tool_retry;

pub use classify::{ErrorClass, classify, tool_error_for_status, tool_error_from_text};
pub use config::{ModelRetryConfig, RetryConfig, ToolRetryConfig};
pub use fallback::FallbackChain;
pub use jitter::Jitter;
pub use model_retry::Retry;
pub use tool_retry::RetryingExecutor;
