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

/// Appends `messages` to conversation `id`'s file under `dir` (created when missing).
pub fn append(dir: &Path, id: &str, messages: &[Message]) -> std::io::Result<()> {
    if messages.is_empty() {
        return Ok(());
    }
    std::fs::create_dir_all(dir)?;
    let mut text = String::new();
    for line in messages.iter().flat_map(to_openai) {
        text.push_str(&line.to_string());
        text.push('\n');
    }
    std::fs::OpenOptions::new().create(true).append(true).open(file_for(dir, id))?.write_all(text.as_bytes())
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
}
