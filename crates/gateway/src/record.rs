//! Conversations recorded for `looprail audit`: one JSONL file per conversation, one OpenAI
//! chat message per line, appended as the conversation grows (O(new messages) per request).

use std::io::Write;
use std::path::{Path, PathBuf};

use looprail_loop_core::message::{Message, Role};
use serde_json::{Value, json};

/// The file of conversation `id` under `dir`: the id with anything but letters, digits, `-`
/// and `_` replaced, so a client-chosen id can never name a path outside `dir`.
pub fn file_for(dir: &Path, id: &str) -> PathBuf {
    let name: String =
        id.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '_' }).collect();
    dir.join(format!("{name}.jsonl"))
}

/// A message as an OpenAI chat message (what the audit's transcript reader reads).
pub fn to_openai(message: &Message) -> Vec<Value> {
    match message.role {
        Role::Tool => message
            .tool_results()
            .map(|r| json!({ "role": "tool", "tool_call_id": r.call_id, "content": r.content }))
            .collect(),
        Role::Assistant => {
            let calls: Vec<Value> = message
                .tool_calls()
                .map(|c| json!({ "id": c.id, "type": "function", "function": { "name": c.name, "arguments": c.arguments } }))
                .collect();
            let mut out = json!({ "role": "assistant", "content": message.joined_text() });
            if !calls.is_empty() {
                out["tool_calls"] = Value::Array(calls);
            }
            vec![out]
        }
        Role::System => {
            vec![json!({ "role": "system", "content": message.joined_text().unwrap_or_default() })]
        }
        Role::User => vec![json!({ "role": "user", "content": message.joined_text().unwrap_or_default() })],
    }
}

/// `messages` as the lines of a recording: one OpenAI chat message per line, each ended by a
/// newline (what [`append`] writes).
pub fn lines<'a>(messages: impl IntoIterator<Item = &'a Message>) -> std::io::Result<Vec<u8>> {
    let mut text = Vec::new();
    for line in messages.into_iter().flat_map(to_openai) {
        serde_json::to_writer(&mut text, &line)?;
        text.push(b'\n');
    }
    Ok(text)
}

/// Opens `path` under `dir` for appending, creating it (and `dir`) when missing.
pub(crate) fn open_appending(dir: &Path, path: &Path) -> std::io::Result<std::fs::File> {
    let open = || std::fs::OpenOptions::new().create(true).append(true).open(path);
    match open() {
        Ok(file) => Ok(file),
        // The directory is made on the first append (or again, when removed meanwhile), not
        // looked up on every one.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            std::fs::create_dir_all(dir)?;
            open()
        }
        Err(e) => Err(e),
    }
}

/// Appends `messages` to conversation `id`'s file under `dir` (the file, and `dir`, created when
/// missing). Blocking file I/O; the gateway itself appends through a recorder that keeps its
/// conversations' files open.
pub fn append(dir: &Path, id: &str, messages: &[Message]) -> std::io::Result<()> {
    if messages.is_empty() {
        return Ok(());
    }
    let text = lines(messages)?;
    open_appending(dir, &file_for(dir, id))?.write_all(&text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_client_chosen_id_stays_inside_the_directory() {
        let dir = Path::new("/var/logs");
        assert_eq!(file_for(dir, "../../etc/passwd"), Path::new("/var/logs/______etc_passwd.jsonl"));
        assert_eq!(file_for(dir, "gw-00ab"), Path::new("/var/logs/gw-00ab.jsonl"));
    }

    #[test]
    fn appends_make_the_directory_when_it_is_missing_and_keep_every_line() {
        let root = tempfile::tempdir().expect("temporary directory");
        let dir = root.path().join("records");
        let said = |text: &str| vec![Message::user(text)];
        append(&dir, "c", &said("one")).expect("first append");
        append(&dir, "c", &said("two")).expect("second append");
        let lines = std::fs::read_to_string(file_for(&dir, "c")).expect("recording");
        assert_eq!(
            lines,
            "{\"content\":\"one\",\"role\":\"user\"}\n{\"content\":\"two\",\"role\":\"user\"}\n"
        );
        std::fs::remove_dir_all(&dir).expect("directory removed");
        append(&dir, "c", &said("three")).expect("append after removal");
        let lines = std::fs::read_to_string(file_for(&dir, "c")).expect("recording");
        assert_eq!(lines, "{\"content\":\"three\",\"role\":\"user\"}\n");
    }
}
