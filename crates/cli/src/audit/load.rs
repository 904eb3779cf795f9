//! Finding and reading recorded runs.

use std::path::{Path, PathBuf};

use super::formats::{FoundRun, read_runs};

/// Files larger than this are reported, not read (a log of this size is not one agent run).
pub const MAX_FILE_BYTES: u64 = 256 * 1024 * 1024;

/// Every `.json` / `.jsonl` / `.traj` regular file under `paths`, sorted, and the paths that could not
/// be walked with why. Directories are walked without following symlinks (no loops, no file
/// counted twice); FIFOs, sockets and devices are skipped. A path given by name is taken as
/// given if it is a regular file (or a link to one).
pub fn collect(paths: &[PathBuf]) -> (Vec<PathBuf>, Vec<(PathBuf, String)>) {
    let mut files = Vec::new();
    let mut errors = Vec::new();
    for path in paths {
        match std::fs::metadata(path) {
            Ok(meta) if meta.is_dir() => walk(path, &mut files, &mut errors),
            Ok(meta) if meta.is_file() => files.push(path.clone()),
            Ok(_) => errors.push((path.clone(), "not a regular file (a FIFO, socket or device)".to_owned())),
            Err(e) => errors.push((path.clone(), format!("cannot be read: {e}"))),
        }
    }
    files.sort();
    files.dedup();
    (files, errors)
}

fn walk(dir: &Path, files: &mut Vec<PathBuf>, errors: &mut Vec<(PathBuf, String)>) {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) => return errors.push((dir.to_path_buf(), format!("cannot be listed: {e}"))),
    };
    for entry in entries.filter_map(Result::ok) {
        let path = entry.path();
        // The entry's own type: a symlink is not followed, into a directory or anywhere.
        let Ok(file_type) = entry.file_type() else { continue };
        if file_type.is_dir() {
            walk(&path, files, errors);
        } else if file_type.is_file()
            && path.extension().is_some_and(|e| e == "json" || e == "jsonl" || e == "traj")
        {
            files.push(path);
        }
    }
}

/// Reads the runs of one file, in any supported format.
pub fn read(path: &Path) -> Result<Vec<FoundRun>, String> {
    let meta = std::fs::metadata(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    if !meta.is_file() {
        return Err(format!("{} is not a regular file", path.display()));
    }
    if meta.len() > MAX_FILE_BYTES {
        return Err(format!(
            "{} is {} MiB, over the {} MiB limit",
            path.display(),
            meta.len() >> 20,
            MAX_FILE_BYTES >> 20
        ));
    }
    // One buffer per thread, kept between files: a fresh one per file cost a page fault per
    // 4 KB read.
    thread_local! {
        static BUFFER: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    BUFFER.with(|buffer| {
        let mut buffer = buffer.borrow_mut();
        buffer.clear();
        std::fs::File::open(path)
            .and_then(|mut file| std::io::Read::read_to_end(&mut file, &mut buffer))
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let text = std::str::from_utf8(&buffer)
            .map_err(|e| format!("cannot read {}: not UTF-8 ({e})", path.display()))?;
        read_runs(text).map_err(|e| format!("{}: {e}", path.display()))
    })
}
