//! The policies' scenarios: the ladder on a thrashing model, RAG dedup with citations, tool
//! retries for the idempotent tool only, and compaction under context pressure.

use std::sync::Arc;

use looprail_guardrails::{GuardrailsConfig, default_stack};
use looprail_loop_core::config::LoopConfig;
use looprail_loop_core::finalize::Finalizer;
use looprail_loop_core::prelude::*;
use looprail_loop_core::testkit::{RecordingTool, ScriptedProvider};
use looprail_loop_core::tool::{ToolContext, ToolErrorKind, ToolOutput};

use looprail_compaction::{AutoCompaction, AutoCompactionConfig};
use looprail_rag_dedup::{Chunk, RagDedup};
use looprail_retry::RetryingExecutor;

use super::harness::{Check, drive, drive_with_guards, runtime};
use crate::progress::stderr_sink;

pub(super) fn thrash_ladder(quiet: bool) -> Result<Check, String> {
    // The model runs the same failing search again and again.
    let mut provider = ScriptedProvider::new("scripted");
    for _ in 0..20 {
        provider = provider.call_tool("search_flights", r#"{"to": "LSB"}"#);
    }
    let search = RecordingTool::new("search_flights").fail_times(100, ToolErrorKind::Failed);
    let tools = ToolSet::new().with(search.clone());
    let guards = default_stack(&GuardrailsConfig::default());
    let (outcome, run) =
        drive_with_guards("thrash", quiet, LoopConfig::default(), provider, tools, guards, |d| d)?;
    let rungs: Vec<String> = ["loop_nudge", "loop_directive", "loop_ask_human"]
        .iter()
        .filter(|tag| run.messages().iter().any(|m| m.internal.as_ref().is_some_and(|t| t.reason == **tag)))
        .map(|t| t.trim_start_matches("loop_").to_owned())
        .collect();
    let ok = outcome.state == RunState::WaitingOnHuman && rungs.len() == 3 && search.call_count() == 7;
    Ok(Check {
        note: format!("{} after {} identical calls", rungs.join(" -> "), search.call_count()),
        outcome,
        ok,
    })
}

/// A tiny retrieval tool: every query returns overlapping passages.
struct FareRules;

#[async_trait::async_trait]
impl Tool for FareRules {
    fn definition(&self) -> ToolDefinition {
        ToolDefinition::new(
            "search_fare_rules",
            "search the fare rules",
            serde_json::json!({"type": "object"}),
        )
    }
    fn idempotent(&self) -> bool {
        true
    }
    async fn call(&self, args: serde_json::Value, _cx: ToolContext) -> Result<ToolOutput, ToolError> {
        let chunk = |i: u32, text: &str| Chunk::new("fares", "rules.md", i, text);
        let chunks = match args["q"].as_str() {
            Some("baggage") => {
                vec![chunk(1, "One cabin bag is included."), chunk(2, "Checked bags cost 30 EUR.")]
            }
            _ => vec![
                chunk(2, "Checked bags cost 30 EUR."),
                chunk(1, "One cabin bag is included."),
                chunk(7, "Sports gear costs 50 EUR."),
            ],
        };
        serde_json::to_string(&chunks).map(ToolOutput::from).map_err(|e| ToolError::failed(e.to_string()))
    }
}

pub(super) fn rag_dedup(quiet: bool) -> Result<Check, String> {
    let dedup = RagDedup::default();
    let provider = ScriptedProvider::new("scripted")
        .call_tool("search_fare_rules", r#"{"q": "baggage"}"#)
        .call_tool("search_fare_rules", r#"{"q": "baggage fees"}"#)
        .reply_text("A cabin bag is included [1]; checked bags cost 30 EUR [2], sports gear 50 EUR [3].");
    let tools = ToolSet::new().with(dedup.wrap(FareRules));
    let guards: Vec<Box<dyn Guard>> = vec![Box::new(dedup.state_guard())];
    let finalizer = Arc::new(Finalizer::new().citations(Arc::new(dedup.clone())));
    let (outcome, _) =
        drive_with_guards("rag-dedup", quiet, LoopConfig::default(), provider, tools, guards, |d| {
            d.with_finalizer(finalizer)
        })?;
    let ok = dedup.duplicates_total() == 2 && outcome.citations.len() == 3 && dedup.context().len() == 3;
    let note = format!(
        "{} duplicate chunks dropped, {} citations",
        dedup.duplicates_total(),
        outcome.citations.len()
    );
    Ok(Check { note, outcome, ok })
}

pub(super) fn tool_retries(quiet: bool) -> Result<Check, String> {
    // Both tools time out twice. The idempotent search is retried (0.5 s, then 2 s); the
    // side-effecting booking is not, and its error goes to the model.
    let search = RecordingTool::new("search_flights").idempotent(true).fail_times(2, ToolErrorKind::Timeout);
    let book = RecordingTool::new("book_flight").fail_times(2, ToolErrorKind::Timeout);
    let provider = ScriptedProvider::new("scripted")
        .call_tools(&[("search_flights", r#"{"to": "LIS"}"#), ("book_flight", r#"{"flight": "FR55"}"#)])
        .reply_text("Found FR55; booking failed, please retry later.");
    let tools = ToolSet::new().with(search.clone()).with(book.clone());
    let executor = Arc::new(RetryingExecutor::default());
    let (outcome, _) =
        drive("tool-retry", quiet, LoopConfig::default(), provider, tools, |d| d.with_executor(executor))?;
    let ok = search.call_count() == 3 && book.call_count() == 1 && outcome.state == RunState::Completed;
    let note = format!(
        "idempotent search called {}x, side-effecting booking {}x",
        search.call_count(),
        book.call_count()
    );
    Ok(Check { note, outcome, ok })
}

pub(super) fn context_pressure(quiet: bool) -> Result<Check, String> {
    // An 8,000-token window: reading 16 fare tables of 400 tokens crosses 70% of it.
    let mut provider = ScriptedProvider::new("scripted");
    for page in 0..16 {
        provider = provider.call_tool("read_fare_table", &format!(r#"{{"page": {page}}}"#));
    }
    let provider = provider.reply_text("The cheapest fare is on page 12.");
    let tools = ToolSet::new()
        .with(RecordingTool::new("read_fare_table").idempotent(true).output("fare ".repeat(400)));
    let policy = AutoCompaction::new(AutoCompactionConfig { context_window: 8_000, ..Default::default() });
    let mut run = Run::builder(LoopConfig::default())
        .user("Find the cheapest fare.")
        .tools(tools.definitions())
        .policy(policy)
        .build()
        .map_err(|e| e.to_string())?;
    let compactions = Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = compactions.clone();
    let progress = stderr_sink("compaction", quiet);
    let sink = EventSink::new(move |event| {
        progress.emit(event);
        if let (Event::CompactionRun { before_tokens, after_tokens, .. }, Ok(mut list)) = (event, seen.lock())
        {
            list.push((*before_tokens, *after_tokens));
        }
    });
    let outcome = runtime()?
        .block_on(Driver::new(Arc::new(provider), tools).with_events(sink).drive(&mut run))
        .map_err(|e| e.to_string())?;
    let compactions = compactions.lock().map(|c| c.clone()).unwrap_or_default();
    let ok = outcome.state == RunState::Completed && compactions.len() == 1;
    let note = match compactions.first() {
        Some((before, after)) => format!("compacted {before} -> {after} tokens"),
        None => "no compaction".to_owned(),
    };
    Ok(Check { note, outcome, ok })
}
