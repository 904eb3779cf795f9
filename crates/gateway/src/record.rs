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

/// Appends `messages` to conversation `id`'s file under `dir` (the file, and `dir`, created when
/// missing). Blocking file I/O: the gateway runs it on a recording thread of its own.
pub fn append(dir: &Path, id: &str, messages: &[Message]) -> std::io::Result<()> {
    if messages.is_empty() {
        return Ok(());
    }
    let mut text = Vec::new();
    for line in messages.iter().flat_map(to_openai) {
        serde_json::to_writer(&mut text, &line)?;
        text.push(b'\n');
    }
    let path = file_for(dir, id);
    let open = || std::fs::OpenOptions::new().create(true).append(true).open(&path);
    let mut file = match open() {
        Ok(file) => file,
        // The directory is made on the first append (or again, when removed meanwhile), not
        // looked up on every one.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            std::fs::create_dir_all(dir)?;
            open()?
        }
        Err(e) => return Err(e),
    };
    file.write_all(&text)
}

/// The gateway's recorder: one thread appending every conversation's recording in turn, off the
/// async workers. Creating a file can cost the filesystem long (ext4 searching its inode
/// bitmaps took 0.4–0.8 ms of CPU per new file on the development VM), time in which a worker
/// would serve no request. One thread, not a blocking-pool task per append: files created side
/// by side in one directory contend in the filesystem, and on the peers bench a task per append
/// cost 0.05 ms more CPU per request at load and 6–15 % of the highest rate.
#[derive(Debug)]
pub(crate) struct Recorder {
    jobs: std::sync::mpsc::Sender<Job>,
}

/// One append, and where its outcome goes.
#[derive(Debug)]
struct Job {
    id: String,
    messages: Vec<Message>,
    done: tokio::sync::oneshot::Sender<std::io::Result<()>>,
}

impl Recorder {
    /// Starts the thread recording under `dir`; it ends once the recorder is dropped and the
    /// appends already sent are written.
    pub(crate) fn start(dir: PathBuf) -> std::io::Result<Self> {
        let (jobs, queue) = std::sync::mpsc::channel::<Job>();
        std::thread::Builder::new().name("looprail-record".into()).spawn(move || {
            for job in queue {
                // A request that stopped waiting still gets its append.
                let _ = job.done.send(append(&dir, &job.id, &job.messages));
            }
        })?;
        Ok(Self { jobs })
    }

    /// Appends `messages` to conversation `id`'s recording (see [`append`]); returns once they
    /// are written.
    pub(crate) async fn append(&self, id: String, messages: Vec<Message>) -> std::io::Result<()> {
        if messages.is_empty() {
            return Ok(());
        }
        let stopped = || std::io::Error::other("the recording thread has stopped");
        let (done, outcome) = tokio::sync::oneshot::channel();
        self.jobs.send(Job { id, messages, done }).map_err(|_| stopped())?;
        outcome.await.map_err(|_| stopped())?
    }
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

    #[tokio::test]
    async fn appends_make_the_directory_when_it_is_missing_and_keep_every_line() {
        let root = tempfile::tempdir().expect("temporary directory");
        let dir = root.path().join("records");
        let said = |text: &str| vec![Message::user(text)];
        let recorder = Recorder::start(dir.clone()).expect("recording thread");
        recorder.append("c".into(), said("one")).await.expect("first append");
        recorder.append("c".into(), said("two")).await.expect("second append");
        let lines = std::fs::read_to_string(file_for(&dir, "c")).expect("recording");
        assert!(lines.contains("one") && lines.ends_with("\"two\",\"role\":\"user\"}\n"), "{lines}");
        std::fs::remove_dir_all(&dir).expect("directory removed");
        recorder.append("c".into(), said("three")).await.expect("append after removal");
        let lines = std::fs::read_to_string(file_for(&dir, "c")).expect("recording");
        assert_eq!(lines, "{\"content\":\"three\",\"role\":\"user\"}\n");
        append(&dir, "c", &said("four")).expect("append");
        let lines = std::fs::read_to_string(file_for(&dir, "c")).expect("recording");
        assert_eq!(lines.lines().count(), 2, "{lines}");
    }
}
