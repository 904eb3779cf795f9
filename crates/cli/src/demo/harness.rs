//! What every demo scenario shares: the check it returns, and a scripted run driven with
//! live progress on stderr.

use std::sync::Arc;

use looprail_loop_core::config::LoopConfig;
use looprail_loop_core::prelude::*;
use looprail_loop_core::testkit::{RecordingTool, ScriptedProvider};

use crate::progress::stderr_sink;

pub(super) struct Scenario {
    pub(super) name: &'static str,
    pub(super) what: &'static str,
    pub(super) run: fn(bool) -> Result<Check, String>,
}

/// What a scenario observed and whether that is what it expected.
pub(super) struct Check {
    pub(super) outcome: Outcome,
    pub(super) ok: bool,
    pub(super) note: String,
}

pub(super) fn runtime() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_current_thread().enable_time().build().map_err(|e| e.to_string())
}

pub(super) fn drive(
    name: &'static str,
    quiet: bool,
    config: LoopConfig,
    provider: ScriptedProvider,
    tools: ToolSet,
    configure: impl FnOnce(Driver) -> Driver,
) -> Result<(Outcome, Run), String> {
    drive_with_guards(name, quiet, config, provider, tools, Vec::new(), configure)
}

pub(super) fn drive_with_guards(
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

pub(super) fn search_tool() -> RecordingTool {
    RecordingTool::new("search_flights").idempotent(true).output("TAP 1234: 89 EUR; Ryanair 55: 64 EUR")
}
