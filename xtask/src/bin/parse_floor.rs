//! The audit benchmark's floor (`cargo xtask bench audit`): read every `.json` file under a
//! directory and parse it into a JSON tree, on two threads taking the next file as they finish
//! one (the files differ in size by a hundredfold), and nothing more. Built with the release
//! profile like the `looprail` binary it is compared with: in xtask's own (dev) build serde_json
//! is unoptimised and the floor came out six times too slow.
//!
//! Usage: `parse-floor DIR`; prints the number of files parsed.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

fn main() -> std::process::ExitCode {
    let Some(root) = std::env::args_os().nth(1) else {
        eprintln!("usage: parse-floor DIR");
        return std::process::ExitCode::FAILURE;
    };
    let files = json_files(Path::new(&root));
    match parse_all(&files) {
        Ok(()) => {
            println!("{} files parsed", files.len());
            std::process::ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// Every `.json` file under `dir` (links not followed), sorted.
fn json_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            match entry.file_type() {
                Ok(t) if t.is_dir() => pending.push(path),
                Ok(t) if t.is_file() && path.extension().is_some_and(|e| e == "json") => files.push(path),
                _ => {}
            }
        }
    }
    files.sort();
    files
}

fn parse_all(files: &[PathBuf]) -> Result<(), String> {
    let next = AtomicUsize::new(0);
    std::thread::scope(|scope| {
        let workers: Vec<_> = (0..2)
            .map(|_| {
                scope.spawn(|| -> Result<(), String> {
                    while let Some(file) = files.get(next.fetch_add(1, Ordering::Relaxed)) {
                        let text = std::fs::read(file).map_err(|e| format!("{}: {e}", file.display()))?;
                        let doc: serde_json::Value =
                            serde_json::from_slice(&text).map_err(|e| format!("{}: {e}", file.display()))?;
                        std::hint::black_box(doc);
                    }
                    Ok(())
                })
            })
            .collect();
        workers.into_iter().try_for_each(|w| w.join().map_err(|_| "a parsing thread panicked".to_owned())?)
    })
}
