//! `search_text`'s walk: symlinks never followed, only regular files read, every cap enforced.

use std::path::PathBuf;

use cap_fs_ext::OpenOptionsSyncExt;
use cap_std::fs::{Dir, OpenOptions};

use crate::access::{Workdir, read_capped};
use crate::error::WorkdirError;

/// What a search found.
pub(crate) struct Found {
    pub lines: Vec<String>,
    /// Why the search stopped early, if it did.
    pub cut: Option<String>,
}

impl Workdir {
    /// Lines containing `pattern` in the regular files under `requested`, as `path:line: text`.
    pub(crate) fn search(&self, requested: &str, pattern: &str) -> Result<Found, WorkdirError> {
        let start = self.open_dir(requested)?;
        let base = PathBuf::from(requested.trim_end_matches('/'));
        let mut found = Found { lines: Vec::new(), cut: None };
        let mut files = 0usize;
        let mut stack: Vec<(Dir, PathBuf)> = vec![(start, base)];
        while let Some((dir, at)) = stack.pop() {
            let Ok(entries) = dir.entries() else { continue };
            let mut entries: Vec<_> = entries.filter_map(Result::ok).collect();
            entries.sort_by_key(|e| std::cmp::Reverse(e.file_name()));
            for entry in entries {
                let Ok(file_type) = entry.file_type() else { continue };
                let shown = at.join(entry.file_name());
                if file_type.is_dir() {
                    if let Ok(sub) = entry.open_dir() {
                        stack.push((sub, shown));
                    }
                    continue;
                }
                // Symlinks, FIFOs, sockets and devices are skipped unopened.
                if !file_type.is_file() {
                    continue;
                }
                files += 1;
                if files > self.limits.max_search_files {
                    found.cut = Some(format!("stopped after {} files", self.limits.max_search_files));
                    return Ok(found);
                }
                let mut options = OpenOptions::new();
                options.read(true).nonblock(true);
                let Ok(file) = entry.open_with(&options) else { continue };
                // The entry may have been swapped since it was listed: judge the handle.
                let Ok(meta) = file.metadata() else { continue };
                if !meta.is_file() {
                    continue;
                }
                let Ok(read) = read_capped(file, meta.len(), self.limits.max_search_bytes) else { continue };
                let shown = shown.strip_prefix(".").unwrap_or(&shown).display().to_string();
                for (n, line) in read.text.lines().enumerate().filter(|(_, l)| l.contains(pattern)) {
                    found.lines.push(format!("{shown}:{}: {}", n + 1, line.trim()));
                    if found.lines.len() >= self.limits.max_matches {
                        found.cut = Some(format!("first {} matches", self.limits.max_matches));
                        return Ok(found);
                    }
                }
            }
        }
        Ok(found)
    }
}
