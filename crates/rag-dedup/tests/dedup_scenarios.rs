//! RAG dedup (F30) and output finalisation (F13) through the engine.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use async_trait::async_trait;
use looprail_loop_core::finalize::{DenySubstrings, Finalizer};
use looprail_loop_core::prelude::*;
use looprail_loop_core::testkit::ScriptedProvider;
use looprail_loop_core::tool::{ToolContext, ToolOutput};
use looprail_rag_dedup::{Chunk, RagDedup, SeenChunks};

/// A search tool over a tiny corpus: each query returns fixed chunks.
struct Search;

#[async_trait]
impl Tool for Search {
    fn definition(&self) -> ToolDefinition {
        ToolDefinition::new("search_docs", "search the handbook", serde_json::json!({"type": "object"}))
    }
    fn idempotent(&self) -> bool {
        true
    }
    async fn call(&self, args: serde_json::Value, _cx: ToolContext) -> Result<ToolOutput, ToolError> {
        let chunk = |i: u32, text: &str| Chunk {
            source: Some(format!("https://docs/{i}")),
            ..Chunk::new("vs_1", "handbook.pdf", i, text)
        };
        let chunks = match args["q"].as_str() {
            Some("refunds") => vec![chunk(4, "Refunds take 5 days."), chunk(9, "Refunds need a receipt.")],
            Some("refund timing") => vec![
                chunk(9, "Refunds need a receipt."),
                chunk(4, "Refunds take 5 days."),
                chunk(12, "Bank delays add 2 days."),
            ],
            _ => vec![],
        };
        Ok(ToolOutput::from(serde_json::to_string(&chunks).unwrap()))
    }
}

async fn run_conversation(
    finalizer: Finalizer,
    dedup: &RagDedup,
    answer: &str,
) -> (Outcome, Run, Vec<Event>, Arc<ScriptedProvider>) {
    let tools = ToolSet::new().with(dedup.wrap(Search));
    let provider = Arc::new(
        ScriptedProvider::new("m")
            .call_tool("search_docs", r#"{"q": "refunds"}"#)
            .call_tool("search_docs", r#"{"q": "refund timing"}"#)
            .reply_text(answer),
    );
    let mut run = Run::builder(LoopConfig::default())
        .user("How long do refunds take?")
        .tools(tools.definitions())
        .guard(dedup.state_guard())
        .build()
        .unwrap();
    let (sink, mut rx) = EventSink::channel();
    let driver = Driver::new(provider.clone(), tools).with_events(sink).with_finalizer(Arc::new(finalizer));
    let outcome = driver.drive(&mut run).await.unwrap();
    let mut events = Vec::new();
    while let Ok(e) = rx.try_recv() {
        events.push(e);
    }
    (outcome, run, events, provider)
}

#[tokio::test]
async fn a_chunk_is_shown_once_and_only_shown_chunks_are_cited() {
    let dedup = RagDedup::default();
    let finalizer = Finalizer::new().citations(Arc::new(dedup.clone()));
    let answer = "Refunds take 5 days [1], plus bank delays [3]. See also [7].";
    let (outcome, run, events, _) = run_conversation(finalizer, &dedup, answer).await;

    let results: Vec<String> =
        run.messages().iter().flat_map(Message::tool_results).map(|r| r.content.clone()).collect();
    assert!(results[0].contains("[1] (https://docs/4) Refunds take 5 days."));
    assert!(results[0].contains("[2] (https://docs/9) Refunds need a receipt."));
    assert!(results[1].contains("[3] (https://docs/12) Bank delays add 2 days."));
    assert!(!results[1].contains("Refunds take 5 days"), "a duplicate is not shown again");
    assert!(results[1].contains("2 passage(s) you already saw were left out"));

    let dedup_events: Vec<(u32, u32)> = events
        .iter()
        .filter_map(|e| match e {
            Event::ChunksDeduplicated { kept, duplicates, .. } => Some((*kept, *duplicates)),
            _ => None,
        })
        .collect();
    assert_eq!(dedup_events, [(2, 0), (1, 2)]);

    let cited: Vec<(u32, u32)> = outcome.citations.iter().map(|c| (c.ref_id, c.chunk_index)).collect();
    assert_eq!(cited, [(1, 4), (3, 12)], "[7] names nothing shown and yields no citation");
    let first = &outcome.citations[0];
    assert_eq!(&answer[first.start..first.end], "[1]");
    assert_eq!(first.source.as_deref(), Some("https://docs/4"));
    assert_eq!(dedup.context().len(), 3, "the deduplicated context for grounding checks");
}

#[tokio::test]
async fn the_map_is_saved_with_the_run_and_restored() {
    let dedup = RagDedup::default();
    let (_, run, _, _) = run_conversation(Finalizer::new(), &dedup, "done").await;
    let state = run.header().guards["rag_dedup"].clone();
    let resumed = RagDedup::default();
    let mut guard = resumed.state_guard();
    guard.load_state(state).unwrap();
    let known = [Chunk::new("vs_1", "handbook.pdf", 12, "Bank delays add 2 days.")];
    let again = resumed.filter("call_9", &known);
    assert_eq!((again.kept.len(), again.duplicates), (0, 1), "the restored map still knows chunk 12");
    let same = [Chunk::new("vs_1", "handbook.pdf", 12, "x")];
    let fresh = RagDedup::default().filter("c", &same);
    assert_eq!(fresh.kept.len(), 1, "a new conversation starts empty");
}

#[tokio::test]
async fn a_rejected_output_is_marked_moderated_and_never_re_enters_the_loop() {
    let dedup = RagDedup::default();
    let finalizer = Finalizer::new().check(DenySubstrings::new("no-guarantees", ["guaranteed"]));
    let (outcome, _, _, provider) =
        run_conversation(finalizer, &dedup, "Refunds are guaranteed in 5 days [1].").await;
    let moderation = outcome.moderated.clone().unwrap();
    assert_eq!(moderation.rule, "no-guarantees");
    assert_eq!(outcome.final_text, "Refunds are guaranteed in 5 days [1].", "the original content is kept");
    assert_eq!(provider.calls().len(), 3, "no regeneration call");
    assert_eq!(outcome.state, RunState::Completed);
}

#[test]
fn the_oldest_chunk_is_forgotten_first_at_capacity() {
    let mut seen = SeenChunks::new(2);
    let c = |i| Chunk::new("s", "f", i, "t");
    seen.filter("a", &[c(1), c(2)]);
    seen.filter("b", &[c(3)]);
    assert_eq!(seen.len(), 2);
    assert!(!seen.contains("s", "f", 1), "chunk 1 was shown longest ago");
    assert!(seen.contains("s", "f", 2) && seen.contains("s", "f", 3));
    assert_eq!(seen.filter("c", &[c(1)]).kept.len(), 1, "a forgotten chunk may be shown again");
    assert!(seen.citations("see [1]").is_empty(), "and its old label no longer cites it");
}

#[test]
fn duplicates_inside_one_result_are_dropped_too() {
    let mut seen = SeenChunks::new(10);
    let c = |i| Chunk::new("s", "f", i, "t");
    let result = [c(1), c(2), c(1)];
    let filtered = seen.filter("a", &result);
    assert_eq!(filtered.kept.iter().map(|(_, c)| c.chunk_index).collect::<Vec<_>>(), [1, 2]);
    assert_eq!(filtered.duplicates, 1);
}

#[test]
fn corrupt_saved_state_is_a_typed_error() {
    let dedup = RagDedup::default();
    let mut guard = dedup.state_guard();
    assert!(guard.load_state(serde_json::json!({"chunks": "nope"})).is_err());
    let mut saved = serde_json::to_value(SeenChunks::new(5).save()).unwrap();
    saved["chunks"] = serde_json::json!([{"store": 7, "file": 0, "index": 1, "ref_id": 1, "text": "t", "source": null, "call_id": "c"}]);
    let err = guard.load_state(saved).unwrap_err();
    assert!(err.to_string().contains("outside the saved tables"), "{err}");
}

#[test]
fn output_that_is_not_a_chunk_list_passes_through() {
    assert!(looprail_rag_dedup::parse_chunks("plain text").is_none());
    assert!(looprail_rag_dedup::parse_chunks(r#"{"results": []}"#).is_none());
    assert_eq!(looprail_rag_dedup::parse_chunks(r#"{"chunks": []}"#), Some(vec![]));
}
