//! Shared helpers for the end-to-end scenario tests in `tests/tests/`: drive a run while
//! recording its events and state changes, and a tool that takes (virtual) time.
//!
//! It also compiles the code blocks of the README and of `docs/` as doc-tests, so the guide
//! cannot drift from the code.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use looprail_loop_core::prelude::*;
use looprail_loop_core::tool::{ToolContext, ToolOutput};

/// Everything a scenario asserts on.
#[derive(Debug)]
pub struct Recorded {
    /// How the run ended.
    pub outcome: Outcome,
    /// Every event, in order.
    pub events: Vec<Event>,
}

impl Recorded {
    /// The run's states in order, starting with `Running`.
    pub fn states(&self) -> Vec<RunState> {
        let mut states = vec![RunState::Running];
        states.extend(self.events.iter().filter_map(|e| match e {
            Event::StateChanged { to, .. } => Some(*to),
            _ => None,
        }));
        states
    }

    /// The stable names of the events, in order.
    pub fn names(&self) -> Vec<&'static str> {
        self.events.iter().map(Event::name).collect()
    }

    /// How many events have this name.
    pub fn count(&self, name: &str) -> usize {
        self.events.iter().filter(|e| e.name() == name).count()
    }
}

/// A sink that keeps every event, and the shared list it fills.
pub fn collector() -> (EventSink, Arc<Mutex<Vec<Event>>>) {
    let events = Arc::new(Mutex::new(Vec::new()));
    let sink_events = Arc::clone(&events);
    let sink = EventSink::new(move |e| {
        if let Ok(mut list) = sink_events.lock() {
            list.push(e.clone());
        }
    });
    (sink, events)
}

/// Drives `run` with `driver` (its event sink is replaced by a collector).
pub async fn drive(run: &mut Run, driver: Driver) -> Recorded {
    let (sink, events) = collector();
    let driver = driver.with_events(sink);
    let outcome = match driver.drive(run).await {
        Ok(outcome) => outcome,
        Err(err) => panic!("driver failed: {err}"),
    };
    let events = events.lock().map(|e| e.clone()).unwrap_or_default();
    Recorded { outcome, events }
}

/// A tool that sleeps for a fixed time (virtual time under `start_paused`) and answers "done".
#[derive(Debug, Clone)]
pub struct SlowTool {
    name: String,
    delay: Duration,
}

impl SlowTool {
    /// A tool called `name` that takes `delay`.
    pub fn new(name: &str, delay: Duration) -> Self {
        Self { name: name.to_owned(), delay }
    }
}

#[async_trait]
impl Tool for SlowTool {
    fn definition(&self) -> ToolDefinition {
        ToolDefinition::new(self.name.clone(), "takes a while", serde_json::json!({"type": "object"}))
    }

    fn idempotent(&self) -> bool {
        true
    }

    async fn call(&self, _args: serde_json::Value, _cx: ToolContext) -> Result<ToolOutput, ToolError> {
        tokio::time::sleep(self.delay).await;
        Ok("done".into())
    }
}

#[doc = include_str!("../../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;

#[doc = include_str!("../../docs/quickstart/library.md")]
#[cfg(doctest)]
pub struct LibraryQuickStartDoctests;

#[doc = include_str!("../../docs/loop-engine.md")]
#[cfg(doctest)]
pub struct LoopEngineGuideDoctests;

/// Recorded runs from `../shared/trajectories` (development data beside the repository).
pub mod trajectories {
    use std::path::{Path, PathBuf};

    use looprail_loop_core::message::Message;
    use looprail_loop_core::transcript::from_openai_messages;

    /// One recorded run.
    #[derive(Debug)]
    pub struct Recording {
        /// Its file.
        pub path: PathBuf,
        /// The conversation.
        pub messages: Vec<Message>,
        /// The run's `meta` object.
        pub meta: serde_json::Value,
    }

    impl Recording {
        /// True when the agent finished by itself: SWE-agent's `submitted`, OpenHands'
        /// `self_finished` (it called `finish`), and every tau-bench run (a conversation that
        /// ended normally).
        pub fn self_finished(&self) -> bool {
            let status = self.meta.get("exit_status").and_then(|s| s.as_str());
            let flag = self.meta.get("self_finished").and_then(serde_json::Value::as_bool);
            status == Some("submitted")
                || flag == Some(true)
                || self.path.to_string_lossy().contains("tau-bench")
        }

        /// True when the benchmark judged the run a success: `resolved` (SWE-bench sets) or a
        /// reward of 1 (tau-bench).
        pub fn resolved(&self) -> bool {
            let resolved = self.meta.get("resolved").and_then(serde_json::Value::as_bool);
            let reward = self.meta.get("reward").and_then(serde_json::Value::as_f64);
            resolved == Some(true) || reward == Some(1.0)
        }
    }

    /// The shared trajectories folder, or `None` (with a note on stderr) when it is absent, as
    /// in a user's clone. Under CI (the `CI` environment variable set) the folder is always
    /// there, so its absence panics instead of skipping silently.
    pub fn root() -> Option<PathBuf> {
        shared_dir("trajectories")
    }

    /// `../shared/<name>` beside the repository, with [`root`]'s rule for its absence.
    pub fn shared_dir(name: &str) -> Option<PathBuf> {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared").join(name);
        if dir.is_dir() {
            return Some(dir);
        }
        assert!(
            std::env::var_os("CI").is_none(),
            "{} is missing under CI: recorded-data tests must not pass silently",
            dir.display()
        );
        eprintln!("skipped: {} is absent (it ships beside the repository, not in it)", dir.display());
        None
    }

    /// Loads every `*.json` run under `dir`, sorted by path.
    pub fn load_dir(dir: &Path) -> Vec<Recording> {
        let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
            .map(|entries| entries.filter_map(|e| e.ok().map(|e| e.path())).collect())
            .unwrap_or_default();
        paths.retain(|p| p.extension().is_some_and(|e| e == "json"));
        paths.sort();
        paths.into_iter().filter_map(|path| load(&path)).collect()
    }

    /// Loads one `{"messages": [...], "meta": {...}}` file.
    pub fn load(path: &Path) -> Option<Recording> {
        let text = std::fs::read_to_string(path).ok()?;
        let value: serde_json::Value = serde_json::from_str(&text).ok()?;
        let messages = from_openai_messages(value.get("messages")?.as_array()?).ok()?;
        let meta = value.get("meta").cloned().unwrap_or_default();
        Some(Recording { path: path.to_path_buf(), messages, meta })
    }
}

#[doc = include_str!("../../docs/guardrails.md")]
#[cfg(doctest)]
pub struct GuardrailsGuideDoctests;

#[doc = include_str!("../../docs/rag-dedup.md")]
#[cfg(doctest)]
pub struct RagDedupGuideDoctests;

#[doc = include_str!("../../docs/providers.md")]
#[cfg(doctest)]
pub struct ProvidersGuideDoctests;

#[doc = include_str!("../../docs/retry.md")]
#[cfg(doctest)]
pub struct RetryGuideDoctests;

#[doc = include_str!("../../docs/compaction.md")]
#[cfg(doctest)]
pub struct CompactionGuideDoctests;

#[doc = include_str!("../../docs/journal.md")]
#[cfg(doctest)]
pub struct JournalGuideDoctests;

#[doc = include_str!("../../docs/concepts.md")]
#[cfg(doctest)]
pub struct ConceptsGuideDoctests;

#[doc = include_str!("../../docs/property-testing.md")]
#[cfg(doctest)]
pub struct PropertyTestingGuideDoctests;

#[doc = include_str!("../../docs/cli.md")]
#[cfg(doctest)]
pub struct CliGuideDoctests;

#[doc = include_str!("../../docs/operations.md")]
#[cfg(doctest)]
pub struct OperationsGuideDoctests;

/// The development trajectories as the steps a host reports to an in-process guard, each with
/// what `looprail audit` reports of it: the cases the guard's conformance tests (Rust, Python,
/// Node) replay.
pub mod host_steps {
    use std::path::{Path, PathBuf};
    use std::sync::Arc;

    use looprail::LooprailConfig;
    use looprail::compaction::{MemoCounter, TiktokenCounter};
    use looprail::core::context::TokenCounter;
    use looprail::guardrails::replay::ReplayEvent;
    use looprail_audit::steps::{HostStep, steps};

    /// One recorded run.
    pub struct Case {
        /// Its file (`#id` for one of several runs in a file).
        pub name: String,
        /// What a host reports, in order.
        pub steps: Vec<HostStep>,
        /// The audit's events.
        pub events: Vec<ReplayEvent>,
        /// The audit's stop reason.
        pub stop: Option<String>,
    }

    impl Case {
        /// The case as one JSON line: `{"name", "steps", "events", "stop"}`.
        pub fn to_json_line(&self) -> String {
            serde_json::json!({"name": self.name, "steps": self.steps, "events": self.events, "stop": self.stop})
                .to_string()
        }
    }

    /// Every run of every set under `root`, audited with `config`.
    pub fn cases(root: &Path, config: &LooprailConfig) -> Vec<Case> {
        let counter = Arc::new(MemoCounter::new(Arc::new(TiktokenCounter::default())));
        let mut sets: Vec<PathBuf> = std::fs::read_dir(root)
            .map(|e| e.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.is_dir()).collect())
            .unwrap_or_default();
        sets.sort();
        let mut cases = Vec::new();
        for set in sets {
            let mut files: Vec<PathBuf> = std::fs::read_dir(&set)
                .map(|e| e.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.is_file()).collect())
                .unwrap_or_default();
            files.sort();
            for file in files {
                let Ok((found, _)) = looprail_audit::load::read(&file) else { continue };
                for run in found {
                    let name = match &run.id {
                        Some(id) => format!("{}#{id}", file.display()),
                        None => file.display().to_string(),
                    };
                    let expected = looprail_audit::simulate::run(
                        &name,
                        run.messages.clone(),
                        run.logged_peak,
                        &run.timeline,
                        config,
                        &counter,
                    );
                    let mut messages = run.messages;
                    config.audit.error_patterns.classify(&mut messages);
                    let tokens: Vec<u64> = messages.iter().map(|m| counter.count_message(m)).collect();
                    cases.push(Case {
                        name,
                        steps: steps(&messages, &tokens, &run.timeline),
                        events: expected.events,
                        stop: expected.stop_reason,
                    });
                }
            }
        }
        cases
    }
}
