//! Token counting, context compaction and the recovery ladder for looprail.
//!
//! - [`TiktokenCounter`]: cl100k_base (default) or o200k_base, shared per process, with a
//!   documented framing overhead; [`TokenLedger`] caches per-message counts so a turn costs
//!   only its new messages.
//! - Strategies, each a [`ContextPolicy`](looprail_loop_core::context::ContextPolicy) usable
//!   alone: [`SlidingWindow`], [`KeepEnds`] and [`AutoCompaction`] (with the
//!   three-step recovery ladder). None ever drops the system prompt or separates a tool call
//!   from its results.
//!
//! ```
//! use std::sync::Arc;
//! use looprail_compaction::{AutoCompaction, AutoCompactionConfig};
//! use looprail_loop_core::prelude::*;
//! use looprail_loop_core::testkit::{RecordingTool, ScriptedProvider};
//!
//! // An 8,000-token window (compaction at 5,600) and a tool that returns 400 tokens a call.
//! let policy = AutoCompaction::new(AutoCompactionConfig { context_window: 8_000, ..Default::default() });
//! let mut provider = ScriptedProvider::new("m");
//! for i in 0..16 {
//!     provider = provider.call_tool("read", &format!("{{\"page\": {i}}}"));
//! }
//! let provider = provider.reply_text("done");
//! let tools = ToolSet::new().with(RecordingTool::new("read").output("word ".repeat(400)));
//! let mut run = Run::builder(LoopConfig::default()).user("read it all").tools(tools.definitions()).policy(policy).build()?;
//! let (sink, mut events) = EventSink::channel();
//! let runtime = tokio::runtime::Builder::new_current_thread().enable_time().build()?;
//! let outcome = runtime.block_on(Driver::new(Arc::new(provider), tools).with_events(sink).drive(&mut run))?;
//! assert_eq!(outcome.final_text, "done");
//! let mut compactions = Vec::new();
//! while let Ok(event) = events.try_recv() {
//!     if let Event::CompactionRun { before_tokens, after_tokens, .. } = event {
//!         compactions.push((before_tokens, after_tokens));
//!     }
//! }
//! // One compaction: from just over 5,600 tokens down to the last 10 messages and a summary.
//! assert_eq!(compactions.len(), 1);
//! assert!(compactions[0].0 > 5_600 && compactions[0].1 < 3_000, "{compactions:?}");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod counter;
mod ledger;
mod memo;
mod merge;
pub mod pairs;
mod pieces;
mod pretokenize;
mod shared_counts;
mod strategies;
pub mod summary;
mod vocabulary;

pub use counter::{Encoding, IMAGE_TOKENS, MESSAGE_OVERHEAD, TOOL_PART_OVERHEAD, TiktokenCounter};
pub use ledger::TokenLedger;
pub use memo::MemoCounter;
pub use strategies::{AutoCompaction, AutoCompactionConfig, KeepEnds, RecoveryState, SlidingWindow};
