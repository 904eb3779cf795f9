//! The durable run's scenario: a crash in the middle of a side-effecting tool, resumed from
//! the SQLite file without sending twice.

use std::sync::Arc;
use std::time::Duration;

use looprail_loop_core::prelude::*;
use looprail_loop_core::testkit::ScriptedProvider;
use looprail_loop_core::tool::{ToolContext, ToolOutput};

use looprail_journal::{Resolution, Resumed, RunSpec, Runner, SqliteStore};

use super::harness::{Check, runtime};
use crate::progress::stderr_sink;

/// A side-effecting tool that sends (counted) and, the first time, dies before it can return.
struct SendEmail {
    sent: Arc<std::sync::atomic::AtomicU32>,
    crash_first: std::sync::atomic::AtomicBool,
    crashed: Arc<tokio::sync::Notify>,
}

#[async_trait::async_trait]
impl Tool for SendEmail {
    fn definition(&self) -> ToolDefinition {
        ToolDefinition::new("send_email", "send an email", serde_json::json!({"type": "object"}))
    }
    async fn call(&self, _args: serde_json::Value, _cx: ToolContext) -> Result<ToolOutput, ToolError> {
        self.sent.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        if self.crash_first.swap(false, std::sync::atomic::Ordering::SeqCst) {
            self.crashed.notify_one();
            std::future::pending::<()>().await; // the worker dies here
        }
        Ok("sent".into())
    }
}

pub(super) fn crash_resume(quiet: bool) -> Result<Check, String> {
    let dir = std::env::temp_dir().join(format!("looprail-demo-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let db = dir.join("runs.db");
    let _ = std::fs::remove_file(&db);
    let sent = Arc::new(std::sync::atomic::AtomicU32::new(0));
    let script = || {
        ScriptedProvider::new("scripted")
            .call_tool("send_email", r#"{"to": "ops@example.com"}"#)
            .reply_text("Booking confirmed by email.")
    };
    let runtime = runtime()?;
    let note = runtime.block_on(async {
        let store = SqliteStore::open(&db).await.map_err(|e| e.to_string())?;
        // Worker 1 dies in the middle of the side-effecting call.
        let crashed = Arc::new(tokio::sync::Notify::new());
        let tool = SendEmail { sent: sent.clone(), crash_first: true.into(), crashed: crashed.clone() };
        let runner =
            Runner::new(store.clone(), Arc::new(script()), ToolSet::new().with(tool), "You book travel.")
                .with_events(stderr_sink("crash-resume", quiet));
        let task = tokio::spawn(async move {
            runner.start(&RunSpec::new("booking-1", "trip", "Email the confirmation")).await
        });
        crashed.notified().await;
        task.abort();
        let _ = task.await;
        // Worker 2 resumes from the SQLite file: it must not send again.
        let tool = || SendEmail {
            sent: sent.clone(),
            crash_first: false.into(),
            crashed: Arc::new(tokio::sync::Notify::new()),
        };
        // The resumed model sees the send in its history: it only has to answer. (A scripted
        // provider restarting its script would ask for a second, new send.)
        let answer = || ScriptedProvider::new("scripted").reply_text("Booking confirmed by email.");
        // Worker 1's heartbeat would take a minute to go stale; the demo does not wait for it.
        let runner =
            Runner::new(store.clone(), Arc::new(answer()), ToolSet::new().with(tool()), "You book travel.")
                .with_stale_after(Duration::ZERO);
        let first = runner.resume("booking-1").await.map_err(|e| e.to_string())?;
        let Resumed::Ran(halted) = first else { return Err("the resume did not run".to_owned()) };
        if halted.state != RunState::WaitingOnHuman {
            return Err(format!("expected a halt for a human, got {:?}", halted.state));
        }
        // A person checks the mail server and records that the call the halt names went out.
        let StopCause::ResumeUnsafe { call_id, .. } = &halted.stop else {
            return Err(format!("expected a resume-unsafe halt, got {:?}", halted.stop));
        };
        let runner = Runner::new(store, Arc::new(answer()), ToolSet::new().with(tool()), "You book travel.");
        match runner
            .resolve("booking-1", call_id, Resolution::Done("sent".into()))
            .await
            .map_err(|e| e.to_string())?
        {
            Resumed::Ran(outcome) => Ok(outcome),
            Resumed::Halted(h) => Err(format!("halted: {h:?}")),
        }
    });
    let _ = std::fs::remove_dir_all(&dir);
    let outcome = note?;
    let emails = sent.load(std::sync::atomic::Ordering::SeqCst);
    let ok = outcome.state == RunState::Completed && emails == 1;
    Ok(Check { note: format!("killed mid-send, resumed from SQLite: {emails} email sent"), outcome, ok })
}
