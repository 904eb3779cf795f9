//! `looprail audit`: replay recorded agent runs offline through the same guard and context
//! stack a live run uses (B5), and report where it would have intervened and what it saves.

mod load;
mod report;
mod simulate;

use std::path::PathBuf;
use std::time::Instant;

use looprail::LooprailConfig;

pub use report::AuditReport;

/// Audits every run found under `paths`.
pub fn audit(paths: &[PathBuf], config: &LooprailConfig, progress: bool) -> Result<AuditReport, String> {
    let files = load::collect(paths)?;
    let started = Instant::now();
    let mut runs = Vec::with_capacity(files.len());
    for (n, file) in files.iter().enumerate() {
        if progress && files.len() >= 20 && (n % 25 == 0 || n + 1 == files.len()) {
            let done = (n + 1) * 30 / files.len();
            eprint!("\r[{}{}] {}/{}", "#".repeat(done), " ".repeat(30 - done), n + 1, files.len());
        }
        let messages = load::read(file)?;
        runs.push(simulate::run(file, messages, config));
    }
    if progress && files.len() >= 20 {
        eprintln!();
    }
    Ok(AuditReport::new(runs, started.elapsed()))
}
