//! Finding and reading recorded runs.

use std::path::{Path, PathBuf};

use crate::formats::{FoundRun, read_runs};

/// Files larger than this are reported, not read (a log of this size is not one agent run).
pub const MAX_FILE_BYTES: u64 = 256 * 1024 * 1024;

/// Every `.json` / `.jsonl` / `.traj` regular file under `paths` (and every conversation the
/// OpenHands agent SDK persisted, a directory each), sorted, and the paths that could not
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

/// True for a conversation the OpenHands agent SDK persisted: a directory holding
/// `base_state.json` and an `events` directory (links not followed).
fn is_sdk_conversation(dir: &Path) -> bool {
    let kind = |name: &str| std::fs::symlink_metadata(dir.join(name)).map(|m| m.file_type()).ok();
    kind("base_state.json").is_some_and(|t| t.is_file()) && kind("events").is_some_and(|t| t.is_dir())
}

fn walk(dir: &Path, files: &mut Vec<PathBuf>, errors: &mut Vec<(PathBuf, String)>) {
    // One run, whose events are files of their own: read as one, not as a file each.
    if is_sdk_conversation(dir) {
        files.push(dir.to_path_buf());
        return;
    }
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
            && !is_sidecar(&path)
        {
            files.push(path);
        }
    }
}

/// Whether `path` is the metadata beside a log of the same name (`X.meta.json` next to
/// `X.jsonl`: Claude Code's `agent-<id>.meta.json` holds a sub-agent's type, no conversation).
fn is_sidecar(path: &Path) -> bool {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default();
    name.strip_suffix(".meta.json").is_some_and(|stem| path.with_file_name(format!("{stem}.jsonl")).is_file())
}

/// `text` without a last line cut short: a JSONL log still being written (a live Claude Code
/// session, an evaluation's `output.jsonl`) ends in a partial line, one that is not JSON with no
/// newline after it. Only JSONL is cut (its first line is a whole JSON value); a document, or a
/// bad line followed by a newline, is left for the readers to report.
fn complete_lines(text: &str) -> (&str, bool) {
    let is_json = |line: &str| serde_json::from_str::<serde::de::IgnoredAny>(line).is_ok();
    if text.ends_with('\n') {
        return (text, false);
    }
    let Some(cut) = text.rfind('\n') else { return (text, false) };
    let last = &text[cut + 1..];
    if last.trim().is_empty() || is_json(last) {
        return (text, false);
    }
    match text.lines().find(|line| !line.trim().is_empty()) {
        Some(first) if is_json(first) => (&text[..=cut], true),
        _ => (text, false),
    }
}

/// The events of a persisted SDK conversation, in their order: `events/event-<index>-<id>.json`,
/// regular files only, at most [`MAX_FILE_BYTES`] in all.
fn read_events(dir: &Path) -> Result<Vec<serde_json::Value>, String> {
    let listing =
        std::fs::read_dir(dir.join("events")).map_err(|e| format!("events cannot be listed: {e}"))?;
    let mut numbered = Vec::new();
    for entry in listing.filter_map(Result::ok) {
        let name = entry.file_name().to_string_lossy().into_owned();
        let index = name
            .strip_prefix("event-")
            .and_then(|rest| rest.split('-').next())
            .and_then(|i| i.parse::<u64>().ok());
        if let (Some(index), true) =
            (index, entry.file_type().is_ok_and(|t| t.is_file()) && name.ends_with(".json"))
        {
            let size = entry.metadata().map_or(0, |m| m.len());
            numbered.push((index, entry.path(), size));
        }
    }
    // The limit holds before anything is read.
    if numbered.iter().map(|(_, _, size)| size).sum::<u64>() > MAX_FILE_BYTES {
        return Err(format!("its events pass the {} MiB limit", MAX_FILE_BYTES >> 20));
    }
    numbered.sort();
    let mut events = Vec::with_capacity(numbered.len());
    for (_, path, _) in numbered {
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let text = std::fs::read_to_string(&path).map_err(|e| format!("{name} cannot be read: {e}"))?;
        events.push(serde_json::from_str(&text).map_err(|e| format!("{name} is not JSON: {e}"))?);
    }
    Ok(events)
}

/// Reads the runs of one file, in any supported format, with a note when its last line was cut
/// short and left out; or of a persisted SDK conversation's directory. Errors and notes do not
/// repeat the path: the report lists each with it.
pub fn read(path: &Path) -> Result<(Vec<FoundRun>, Option<String>), String> {
    let meta = std::fs::metadata(path).map_err(|e| format!("cannot be read: {e}"))?;
    if meta.is_dir() && is_sdk_conversation(path) {
        let events = read_events(path)?;
        return Ok((crate::formats::read_sdk_events(&events)?, None));
    }
    if !meta.is_file() {
        return Err("not a regular file".to_owned());
    }
    if meta.len() > MAX_FILE_BYTES {
        return Err(format!("{} MiB, over the {} MiB limit", meta.len() >> 20, MAX_FILE_BYTES >> 20));
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
            .map_err(|e| format!("cannot be read: {e}"))?;
        let not_utf8 = |e: std::str::Utf8Error| format!("not UTF-8 ({e})");
        let text = match std::str::from_utf8(&buffer) {
            Ok(text) => text,
            // A log being written may stop inside a character: its whole part is read (and its
            // cut last line left out below).
            Err(e) if e.error_len().is_none() => {
                std::str::from_utf8(&buffer[..e.valid_up_to()]).map_err(not_utf8)?
            }
            Err(e) => return Err(not_utf8(e)),
        };
        // A byte-order mark (editors on Windows write one) is no JSON: it is skipped.
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let (text, cut) = complete_lines(text);
        let file = read_runs(text)?;
        let mut notes: Vec<String> = file.left_out.iter().map(|why| format!("left out {why}")).collect();
        if let Some(first) = file.skipped_lines.first() {
            let n = file.skipped_lines.len();
            notes.push(format!(
                "{n} line{} not JSON, skipped (the first: line {first}); the runs are read from the others",
                if n == 1 { " is" } else { "s are" }
            ));
        }
        if cut {
            notes.push(
                "the last line is incomplete (is the log still being written?); the runs before it are audited"
                    .to_owned(),
            );
        }
        Ok((file.runs, (!notes.is_empty()).then(|| notes.join("; "))))
    })
}

#[cfg(test)]
mod tests {
    use super::complete_lines;

    #[test]
    fn only_a_partial_last_line_of_jsonl_is_cut() {
        let live = "{\"type\":\"user\"}\n{\"type\":\"assistant\"}\n{\"type\":\"ass";
        assert_eq!(complete_lines(live), ("{\"type\":\"user\"}\n{\"type\":\"assistant\"}\n", true));
        // Whole lines, with or without the final newline, stay.
        for whole in ["{\"a\":1}\n{\"b\":2}\n", "{\"a\":1}\n{\"b\":2}", "{\"a\":1}"] {
            assert_eq!(complete_lines(whole), (whole, false));
        }
        // A bad line that ends in a newline is damage, not a write in progress: the reader says so.
        let damaged = "{\"a\":1}\n{\"b\n";
        assert_eq!(complete_lines(damaged), (damaged, false));
        // A pretty-printed document is no JSONL, even when it is cut short.
        let document = "{\n  \"messages\": [\n    {\"role\": \"user\"";
        assert_eq!(complete_lines(document), (document, false));
    }
}
