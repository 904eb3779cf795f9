//! Finding and reading recorded runs.

use std::path::{Path, PathBuf};

use looprail::core::message::Message;
use looprail::core::transcript::read_log;

/// Every `.json` / `.jsonl` file under `paths` (files are taken as given), sorted.
pub fn collect(paths: &[PathBuf]) -> Result<Vec<PathBuf>, String> {
    let mut files = Vec::new();
    for path in paths {
        if path.is_dir() {
            walk(path, &mut files).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        } else if path.is_file() {
            files.push(path.clone());
        } else {
            return Err(format!("{} does not exist", path.display()));
        }
    }
    files.sort();
    Ok(files)
}

fn walk(dir: &Path, files: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            walk(&path, files)?;
        } else if path.extension().is_some_and(|e| e == "json" || e == "jsonl") {
            files.push(path);
        }
    }
    Ok(())
}

/// Reads one run in any supported format.
pub fn read(path: &Path) -> Result<Vec<Message>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    read_log(&text).map(|(_, messages)| messages).map_err(|e| format!("{}: {e}", path.display()))
}
