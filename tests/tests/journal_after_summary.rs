//! The run journal after a history summary: the full journal as it is when the summary is
//! written, not as it was when the run started, placed right after the summary.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use looprail_compaction::AutoCompaction;
use looprail_journal::{JournalHandle, RunJournal};
use looprail_loop_core::message::HISTORY_SUMMARY;
use looprail_loop_core::prelude::*;
use looprail_loop_core::testkit::{RecordingTool, ScriptStep, ScriptedProvider};
use looprail_tests::drive;

fn tag(message: &Message) -> Option<&str> {
    message.internal.as_ref().map(|t| t.reason.as_str())
}

#[tokio::test]
async fn the_pair_after_a_summary_shows_the_journal_as_it_is_now() {
    let journal =
        JournalHandle::new(RunJournal { objective: "Read the first page".into(), ..RunJournal::default() });
    let (get, update, append) = journal.tools();
    let tools = ToolSet::new()
        .with(get)
        .with(update)
        .with(append)
        .with(RecordingTool::new("fetch").output("a page of results ".repeat(60)));
    let mut provider = ScriptedProvider::new("m")
        .call_tool("update_run_journal", r#"{"objective": "Collect every page"}"#)
        .call_tool(
            "append_run_journal_entry",
            r#"{"section": "verified_findings", "entry": "Pages hold 60 results each"}"#,
        );
    for page in 0..30 {
        provider = provider.call_tool("fetch", &format!(r#"{{"page": {page}}}"#));
    }
    let provider = provider
        .reply_text("Collected.")
        .on_fallback(ScriptStep::Reply(ModelResponse::text("m", "We fetched pages 0 to 20.")));
    let mut builder = Run::builder(LoopConfig::default())
        .system("You collect pages.")
        .history(journal.snapshot().messages().to_vec())
        .tools(tools.definitions())
        .policy(AutoCompaction::for_window(6_000))
        .guard(journal.guard());
    builder = builder.user("Collect every page.");
    let mut run = builder.build().unwrap();
    let recorded = drive(&mut run, Driver::new(Arc::new(provider), tools)).await;
    assert!(recorded.count("agent.compaction.run") >= 1, "{:?}", recorded.names());

    let messages = run.messages();
    let summary = messages.iter().rposition(|m| tag(m) == Some(HISTORY_SUMMARY)).expect("a summary");
    assert_eq!(tag(&messages[summary + 1]), Some("run_journal"));
    assert_eq!(tag(&messages[summary + 2]), Some("run_journal_ack"));
    let pair = messages[summary + 1].joined_text().unwrap();
    assert!(pair.contains("Collect every page") && pair.contains("Pages hold 60 results each"), "{pair}");
    assert!(!pair.contains("Read the first page"), "the journal as it is now: {pair}");
    assert_eq!(
        messages.iter().filter(|m| tag(m) == Some("run_journal")).count(),
        1,
        "the pair the run started with is replaced, not kept beside the new one"
    );
}
