//! looprail: the runtime layer that keeps LLM agent loops safe, cheap and recoverable.
//!
//! This facade re-exports every crate and offers [`Agent::builder`], a run with every default of
//! the feature catalogue switched on (budgets and caps, loop detection with the escalation
//! ladder, the fallback reply, retries, auto-compaction), and [`LooprailConfig`], the config file
//! (JSON or TOML) shared with the `looprail` command.
//!
//! ```
//! use looprail::core::testkit::{RecordingTool, ScriptedProvider};
//! use looprail::Agent;
//!
//! let provider = ScriptedProvider::new("scripted").call_tool("lookup", "{}").reply_text("42");
//! let agent = Agent::builder()
//!     .provider(provider)
//!     .tool(RecordingTool::new("lookup").idempotent(true).output("the answer is 42"))
//!     .system("Answer briefly.")
//!     .build()?;
//! let runtime = tokio::runtime::Builder::new_current_thread().enable_time().build()?;
//! let outcome = runtime.block_on(agent.run("What is the answer?"))?;
//! assert_eq!(outcome.final_text, "42");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod agent;
pub mod config;
pub mod gateway_settings;

pub use agent::{Agent, AgentBuilder, AgentError};
pub use config::{AuditConfig, LooprailConfig};
pub use gateway_settings::{GatewaySettings, OnStoreError, SaveOrder};
pub use looprail_compaction as compaction;
pub use looprail_guardrails as guardrails;
pub use looprail_journal as journal;
pub use looprail_loop_core as core;
pub use looprail_providers as providers;
pub use looprail_rag_dedup as rag_dedup;
pub use looprail_retry as retry;
