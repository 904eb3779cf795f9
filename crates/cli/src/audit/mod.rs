//! `looprail audit`: replay recorded agent runs offline through the same guard and context
//! stack a live run uses (B5), and report where it would have intervened and what it saves.

mod load;
mod report;
mod simulate;

use std::path::PathBuf;
use std::time::Instant;

use looprail::LooprailConfig;

pub use report::AuditReport;

/// Audits every run found under `paths`. A file that cannot be read is reported in the
/// report's `errors` and the audit goes on; it fails only when no run at all could be read.
pub fn audit(paths: &[PathBuf], config: &LooprailConfig, progress: bool) -> Result<AuditReport, String> {
    let (files, mut errors) = load::collect(paths);
    let started = Instant::now();
    let mut runs = Vec::with_capacity(files.len());
    for (n, file) in files.iter().enumerate() {
        if progress && files.len() >= 20 && (n % 25 == 0 || n + 1 == files.len()) {
            let done = (n + 1) * 30 / files.len();
            eprint!("\r[{}{}] {}/{}", "#".repeat(done), " ".repeat(30 - done), n + 1, files.len());
        }
        match load::read(file) {
            Ok(messages) => runs.push(simulate::run(file, messages, config)),
            Err(error) => errors.push((file.clone(), error)),
        }
    }
    if progress && files.len() >= 20 {
        eprintln!();
    }
    if runs.is_empty() {
        return Err(match errors.first() {
            Some((path, error)) if errors.len() == 1 => {
                format!("no run could be read: {} ({error})", path.display())
            }
            Some(_) => {
                format!("no run could be read: {} files failed, the first: {}", errors.len(), errors[0].1)
            }
            None => "no .json or .jsonl run files found under the given paths".to_owned(),
        });
    }
    Ok(AuditReport::new(runs, errors, started.elapsed()))
}
