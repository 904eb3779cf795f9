//! The demo scenarios: each a scripted run with the outcome it must reach.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use looprail_guardrails::{GuardrailsConfig, default_stack};
use looprail_loop_core::config::LoopConfig;
use looprail_loop_core::finalize::Finalizer;
use looprail_loop_core::prelude::*;
use looprail_loop_core::testkit::{RecordingTool, ScriptedProvider};
use looprail_loop_core::tool::{ToolContext, ToolErrorKind, ToolOutput};

use looprail_compaction::{AutoCompaction, AutoCompactionConfig};
use looprail_journal::{Resolution, Resumed, RunSpec, Runner, SqliteStore};
use looprail_rag_dedup::{Chunk, RagDedup};
use looprail_retry::RetryingExecutor;
use tokio_util::sync::CancellationToken;

use crate::progress::stderr_sink;

struct Scenario {
    name: &'static str,
    what: &'static str,
    run: fn(bool) -> Result<Check, String>,
}

/// What a scenario observed and whether that is what it expected.
struct Check {
    outcome: Outcome,
    ok: bool,
    note: String,
}

fn runtime() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_current_thread().enable_time().build().map_err(|e| e.to_string())
}

fn drive(
    name: &'static str,
    quiet: bool,
    config: LoopConfig,
    provider: ScriptedProvider,
    tools: ToolSet,
    configure: impl FnOnce(Driver) -> Driver,
) -> Result<(Outcome, Run), String> {
    drive_with_guards(name, quiet, config, provider, tools, Vec::new(), configure)
}

fn drive_with_guards(
    name: &'static str,
    quiet: bool,
    config: LoopConfig,
    provider: ScriptedProvider,
    tools: ToolSet,
    guards: Vec<Box<dyn Guard>>,
    configure: impl FnOnce(Driver) -> Driver,
) -> Result<(Outcome, Run), String> {
    let mut builder = Run::builder(config)
        .system("You are a careful assistant.")
        .user("Find the cheapest flight to Lisbon next week.")
        .tools(tools.definitions());
    for guard in guards {
        builder = builder.boxed_guard(guard);
    }
    let mut run = builder.build().map_err(|e| e.to_string())?;
    let driver = configure(Driver::new(Arc::new(provider), tools).with_events(stderr_sink(name, quiet)));
    let outcome = runtime()?.block_on(driver.drive(&mut run)).map_err(|e| e.to_string())?;
    Ok((outcome, run))
}

fn search_tool() -> RecordingTool {
    RecordingTool::new("search_flights").idempotent(true).output("TAP 1234: 89 EUR; Ryanair 55: 64 EUR")
}

fn normal(quiet: bool) -> Result<Check, String> {
    let provider = ScriptedProvider::new("scripted")
        .call_tool("search_flights", r#"{"to": "LIS"}"#)
        .reply_text("The cheapest is Ryanair 55 at 64 EUR.");
    let tools = ToolSet::new().with(search_tool());
    let (outcome, _) = drive("normal", quiet, LoopConfig::default(), provider, tools, |d| d)?;
    let ok = outcome.state == RunState::Completed && outcome.fallback.is_none() && outcome.tool_calls == 1;
    Ok(Check { note: format!("{} turns, {} tool call", outcome.turns, outcome.tool_calls), outcome, ok })
}

fn budget_stop(quiet: bool) -> Result<Check, String> {
    let mut config = LoopConfig::default();
    config.budget.tool_call_budget = Some(3);
    let mut provider = ScriptedProvider::new("scripted");
    for day in 1..=10 {
        provider = provider.call_tool("search_flights", &format!(r#"{{"to": "LIS", "day": {day}}}"#));
    }
    let tools = ToolSet::new().with(search_tool());
    let (outcome, _) = drive("budget", quiet, config, provider, tools, |d| d)?;
    let ok = outcome.stop == StopCause::Limit { reason: LimitReason::ToolCallBudget }
        && outcome.tool_calls == 3
        && outcome.fallback == Some(FallbackKind::ModelCall)
        && !outcome.final_text.is_empty();
    Ok(Check { note: "stopped at 3 tool calls, fallback reply".into(), outcome, ok })
}

fn continuation(quiet: bool) -> Result<Check, String> {
    let provider = ScriptedProvider::new("scripted")
        .truncated("Ryanair 55 leaves at 06:10 and costs ")
        .reply_text("64 EUR.");
    let (outcome, run) = drive("max-tokens", quiet, LoopConfig::default(), provider, ToolSet::new(), |d| d)?;
    let internal = run.messages().iter().filter(|m| m.is_internal()).count();
    let ok = outcome.final_text == "Ryanair 55 leaves at 06:10 and costs 64 EUR." && internal == 1;
    Ok(Check { note: "1 continuation, stitched reply".into(), outcome, ok })
}

fn empty_reply(quiet: bool) -> Result<Check, String> {
    let provider = ScriptedProvider::new("scripted").call_tool("search_flights", "{}").empty();
    let tools = ToolSet::new().with(search_tool());
    let (outcome, _) = drive("empty-reply", quiet, LoopConfig::default(), provider, tools, |d| d)?;
    let ok = outcome.stop == StopCause::EmptyReply && !outcome.final_text.is_empty();
    Ok(Check { note: "empty reply -> fallback".into(), outcome, ok })
}

fn iteration_ceiling(quiet: bool) -> Result<Check, String> {
    let mut provider = ScriptedProvider::new("scripted");
    for page in 0..80 {
        provider = provider.call_tool("search_flights", &format!(r#"{{"page": {page}}}"#));
    }
    let tools = ToolSet::new().with(search_tool());
    let (outcome, _) = drive("ceiling", true, LoopConfig::default(), provider, tools, |d| d)?;
    let _ = quiet;
    let ok = outcome.state == RunState::MaxSteps && outcome.turns == 50 && !outcome.final_text.is_empty();
    Ok(Check { note: "50-turn ceiling -> fallback".into(), outcome, ok })
}

fn bad_tool_call(quiet: bool) -> Result<Check, String> {
    let provider = ScriptedProvider::new("scripted")
        .call_tools(&[("book_flight", "{}"), ("search_flights", "{\"to\": ")])
        .call_tool("search_flights", r#"{"to": "LIS"}"#)
        .reply_text("Ryanair 55, 64 EUR.");
    let tools = ToolSet::new().with(search_tool());
    let (outcome, _) = drive("bad-call", quiet, LoopConfig::default(), provider, tools, |d| d)?;
    let ok = outcome.state == RunState::Completed && outcome.tool_calls == 3;
    Ok(Check { note: "unknown tool + bad JSON answered, run went on".into(), outcome, ok })
}

fn cancellation(quiet: bool) -> Result<Check, String> {
    let token = CancellationToken::new();
    let trigger = token.clone();
    let mut provider = ScriptedProvider::new("scripted");
    for page in 0..10 {
        provider = provider.call_tool("search_flights", &format!(r#"{{"page": {page}}}"#));
    }
    let tools = ToolSet::new().with(search_tool());
    let sink = stderr_sink("cancel", quiet);
    let (outcome, _) = drive("cancel", true, LoopConfig::default(), provider, tools, move |d| {
        // A user presses stop while turn 2's tool runs: the next boundary observes it.
        let events = EventSink::new(move |event| {
            sink.emit(event);
            if matches!(event, Event::TurnStarted { turn: 2, .. }) {
                trigger.cancel();
            }
        });
        d.with_cancel(token).with_events(events)
    })?;
    let ok = outcome.state == RunState::Cancelled && outcome.final_text.is_empty() && outcome.turns == 2;
    Ok(Check { note: "cancelled at the boundary after turn 2".into(), outcome, ok })
}

fn human_pause(quiet: bool) -> Result<Check, String> {
    let provider = ScriptedProvider::new("scripted")
        .call_tool("ask_human", r#"{"question": "Do you prefer morning or evening flights?"}"#);
    let (outcome, _) = drive("ask-human", quiet, LoopConfig::default(), provider, ToolSet::new(), |d| d)?;
    let ok = outcome.state == RunState::WaitingOnHuman && outcome.final_text.contains("morning or evening");
    Ok(Check { note: "paused for the human's answer".into(), outcome, ok })
}

fn thrash_ladder(quiet: bool) -> Result<Check, String> {
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

fn rag_dedup(quiet: bool) -> Result<Check, String> {
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

fn tool_retries(quiet: bool) -> Result<Check, String> {
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

fn context_pressure(quiet: bool) -> Result<Check, String> {
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

fn crash_resume(quiet: bool) -> Result<Check, String> {
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

const SCENARIOS: &[Scenario] = &[
    Scenario { name: "normal", what: "a tool call, then the answer", run: normal },
    Scenario { name: "budget", what: "tool-call budget stop with its fallback reply", run: budget_stop },
    Scenario { name: "max-tokens", what: "a truncated reply continued", run: continuation },
    Scenario { name: "empty-reply", what: "an empty model reply", run: empty_reply },
    Scenario { name: "ceiling", what: "the 50-iteration ceiling", run: iteration_ceiling },
    Scenario { name: "bad-call", what: "unknown tool and invalid JSON arguments", run: bad_tool_call },
    Scenario { name: "cancel", what: "cooperative cancellation", run: cancellation },
    Scenario { name: "ask-human", what: "the model asks a human", run: human_pause },
    Scenario {
        name: "thrash",
        what: "a thrashing model walked up the ladder to ask_human",
        run: thrash_ladder,
    },
    Scenario { name: "rag-dedup", what: "repeated retrievals deduplicated and cited", run: rag_dedup },
    Scenario {
        name: "tool-retry",
        what: "a transient failure retried only for the idempotent tool",
        run: tool_retries,
    },
    Scenario { name: "compaction", what: "context pressure compacted", run: context_pressure },
    Scenario {
        name: "crash-resume",
        what: "a crash mid-tool, resumed from the SQLite file",
        run: crash_resume,
    },
];

/// Runs every scenario and prints the summary table on stdout.
pub fn run(quiet: bool) -> ExitCode {
    let started = std::time::Instant::now();
    let mut rows = Vec::new();
    let mut failures = 0;
    for scenario in SCENARIOS {
        if !quiet {
            eprintln!("== {}: {}", scenario.name, scenario.what);
        }
        let row = match (scenario.run)(quiet) {
            Ok(check) => {
                if !check.ok {
                    failures += 1;
                }
                let o = &check.outcome;
                format!(
                    "{:<12} {:<6} {:<16} {:>5} {:>6} {:>7}  {}",
                    scenario.name,
                    if check.ok { "ok" } else { "FAILED" },
                    format!("{:?}", o.state),
                    o.turns,
                    o.tool_calls,
                    o.usage.total(),
                    check.note
                )
            }
            Err(error) => {
                failures += 1;
                format!("{:<12} {:<6} {error}", scenario.name, "ERROR")
            }
        };
        rows.push(row);
    }
    println!(
        "{:<12} {:<6} {:<16} {:>5} {:>6} {:>7}  note",
        "scenario", "result", "state", "turns", "tools", "tokens"
    );
    for row in rows {
        println!("{row}");
    }
    let elapsed = started.elapsed();
    println!(
        "{} of {} scenarios behaved as expected in {:.1?}",
        SCENARIOS.len() - failures,
        SCENARIOS.len(),
        Duration::from_millis(u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX))
    );
    if failures == 0 { ExitCode::SUCCESS } else { ExitCode::FAILURE }
}
