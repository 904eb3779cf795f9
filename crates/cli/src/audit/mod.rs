//! `looprail audit`: replay recorded agent runs offline through the same guard and context
//! stack a live run uses (B5), and report where it would have intervened and what it saves.

mod formats;
pub mod html;
mod load;
mod report;
mod simulate;

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
                        simulate::run(&name, run.messages, run.logged_peak, config, &counter)
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
    Ok(AuditReport::new(runs, errors, started.elapsed()))
}
