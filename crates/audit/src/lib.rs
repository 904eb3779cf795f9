//! Replays recorded agent runs offline through the same guard, budget and context stack a
//! live looprail run uses, and reports where it would have acted and what it would
//! have saved: tune your settings on the logs you already have before you ship them.
//!
//! The flow of one audited log:
//!
//! 1. [`load`] finds the run files under the paths given (`.json`, `.jsonl`, `.traj`, and
//!    OpenHands SDK conversations, a directory each);
//! 2. [`formats`] reads each file into runs of looprail messages: one [`LogFormat`] per agent or
//!    framework (Claude Code, Codex, SWE-agent, OpenHands, mini-swe-agent, τ-bench, Gemini,
//!    LangChain, the Vercel AI SDK, OpenAI and Anthropic message logs), tried in turn;
//! 3. [`simulate`] replays each run through the loop's limits and the guardrails and measures
//!    its context with and without compaction;
//! 4. [`report`] gathers the results ([`AuditReport`], serde data: `looprail audit --json`),
//!    which [`render::table`] and [`render::html`] draw.
//!
//! ```
//! use looprail::LooprailConfig;
//!
//! let dir = std::env::temp_dir().join(format!("looprail-audit-doc-{}", std::process::id()));
//! std::fs::create_dir_all(&dir)?;
//! let call = r#"{"role": "assistant", "tool_calls": [{"id": "ID", "type": "function", "function": {"name": "bash", "arguments": "{\"command\": \"make\"}"}}]}"#;
//! let mut log = vec![r#"{"role": "user", "content": "fix the build"}"#.to_owned()];
//! for i in 0..10 {
//!     log.push(call.replace("ID", &format!("c{i}")));
//!     log.push(format!(r#"{{"role": "tool", "tool_call_id": "c{i}", "content": "Error: make failed"}}"#));
//! }
//! std::fs::write(dir.join("run.jsonl"), log.join("\n"))?;
//!
//! let report = looprail_audit::audit(&[dir.clone()], &LooprailConfig::default(), false)?;
//! assert_eq!(report.summary.runs, 1);
//! // The same failing call again and again: handed to a human at its 7th call.
//! assert_eq!(report.runs[0].stop_reason.as_deref(), Some("ask_human"));
//! assert_eq!(report.runs[0].stopped_at, Some(6));
//! println!("{}", looprail_audit::render::table::render(&report));
//! std::fs::remove_dir_all(&dir)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod formats;
pub mod load;
pub mod render;
pub mod report;
pub mod run_report;
pub mod sets;
pub mod shape;
pub mod simulate;
pub mod steps;

pub use formats::LogFormat;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use looprail::LooprailConfig;
use looprail::compaction::{MemoCounter, TiktokenCounter};
use rayon::prelude::*;

pub use report::AuditReport;
use report::{FileError, RunReport};

/// One file's audited runs, with a note when part of it was left out; or why it could not be read.
type FileResult = Result<(Vec<RunReport>, Option<String>), String>;

/// Audits every run found under `paths`. A file that cannot be read is reported in the
/// report's `errors` and the audit goes on; it fails only when no run at all could be read.
pub fn audit(paths: &[PathBuf], config: &LooprailConfig, progress: bool) -> Result<AuditReport, String> {
    // The vocabulary's tables are built while the files are listed.
    std::thread::spawn(|| {
        TiktokenCounter::default();
    });
    let (files, unlisted) = load::collect(paths);
    let unread = |path: &std::path::Path, error: String, read_in_part: bool| FileError {
        path: path.display().to_string(),
        error,
        read_in_part,
    };
    let mut errors: Vec<FileError> = unlisted.into_iter().map(|(path, e)| unread(&path, e, false)).collect();
    let started = Instant::now();
    let done = AtomicUsize::new(0);
    // One cache for the whole audit: each distinct message (a scaffold's system prompt, a
    // file read by many runs) is BPE-counted once, whichever run meets it first.
    let counter = Arc::new(MemoCounter::new(Arc::new(TiktokenCounter::default())));
    // Files are replayed in parallel; results come back in the files' order.
    let results: Vec<FileResult> = files
        .par_iter()
        .map(|file| {
            // A file holding several runs names each `path#id`.
            let result = load::read(file).map(|(runs, note)| {
                let runs = runs
                    .into_iter()
                    .map(|run| {
                        let name = match &run.id {
                            Some(id) => format!("{}#{id}", file.display()),
                            None => file.display().to_string(),
                        };
                        simulate::run(&name, run.messages, run.logged_peak, &run.timeline, config, &counter)
                    })
                    .collect();
                (runs, note)
            });
            let n = done.fetch_add(1, Ordering::Relaxed) + 1;
            if progress && files.len() >= 20 && (n.is_multiple_of(25) || n == files.len()) {
                let bar = n * 30 / files.len();
                eprint!("\r[{}{}] {}/{}", "#".repeat(bar), " ".repeat(30 - bar), n, files.len());
            }
            result
        })
        .collect();
    let mut runs = Vec::with_capacity(files.len());
    for (file, result) in files.iter().zip(results) {
        match result {
            Ok((found, note)) => {
                runs.extend(found);
                // A file audited in part is also listed, so that nothing is left out silently.
                if let Some(note) = note {
                    errors.push(unread(file, note, true));
                }
            }
            Err(error) => errors.push(unread(file, error, false)),
        }
    }
    if progress && files.len() >= 20 {
        eprintln!();
    }
    if runs.is_empty() {
        return Err(match errors.first() {
            Some(first) if errors.len() == 1 => {
                format!("no run could be read: {} ({})", first.path, first.error)
            }
            Some(first) => format!(
                "no run could be read: {} files failed, the first: {} ({})",
                errors.len(),
                first.path,
                first.error
            ),
            None if files.is_empty() => "no .json or .jsonl run files found under the given paths".to_owned(),
            // Files read whole that hold no agent run (Claude Code's own compaction calls).
            None => format!(
                "no agent run in the {} file{} read",
                files.len(),
                if files.len() == 1 { "" } else { "s" }
            ),
        });
    }
    Ok(AuditReport::new(runs, errors, started.elapsed(), paths))
}
