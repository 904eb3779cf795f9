//! Calls that wait on something outside the agent: a status poll, a read of a background
//! process's output, a shell command that sleeps before it checks.
//!
//! Repeating such a call is what waiting looks like, so its repetition is not a loop the ladder
//! should hand to a human: a poll whose output does not move, or only adds the same line
//! ("still running"), leads to a nudge at most, and the run's wall-clock limit ends the wait.
//! Tools listed in `polling_tools` are left out of loop detection altogether (B2); this
//! recognises the common shapes without configuration, from the call alone:
//!
//! - a tool whose name says so: a word `status`, `poll`, `wait`, `await` or `sleep`
//!   (`get_job_status`, `wait_for_deploy`), or an output reader of a process (`BashOutput`,
//!   `TaskOutput`, `read_terminal_output`);
//! - a shell command that waits: `sleep N` or `wait` as a command
//!   (`sleep 5 && curl -s localhost:8000/health`). Only the command actually run is read: the
//!   string (or list of strings) under a `command`, `cmd`, `commands`, `script` or
//!   `keystrokes` key, without the text a command writes to a file (a here-document's body,
//!   SWE-agent's `edit` body), so a file whose content holds a line `sleep 5` is no wait;
//! - an empty `command`, `cmd` or `chars` argument: how OpenHands and Codex read more output of
//!   a command still running.
//!
//! The arguments are parsed only when their raw text holds `sleep` or `wait` at all.

use std::sync::OnceLock;

use memchr::memmem::Finder;

/// Words of a tool name that make it a poll.
const POLL_WORDS: &[&str] = &["status", "poll", "wait", "await", "sleep"];
/// Words that, followed by `output`, name a process whose output the tool reads.
const PROCESS_WORDS: &[&str] = &["bash", "shell", "task", "process", "job", "command", "terminal"];
/// Argument keys (quoted) whose empty value asks a running command for more output.
const MORE_OUTPUT_KEYS: &[&[u8]] = &[b"\"command\"", b"\"cmd\"", b"\"chars\""];

/// True when the call waits on something outside the agent (see the module docs).
///
/// ```
/// use looprail_guardrails::is_waiting_call;
///
/// assert!(is_waiting_call("get_job_status", r#"{"job": 7}"#));
/// assert!(is_waiting_call("BashOutput", r#"{"bash_id": "b1"}"#));
/// assert!(is_waiting_call("bash", r#"{"command": "sleep 30 && kubectl get pods"}"#));
/// assert!(is_waiting_call("write_stdin", r#"{"session_id": 3, "chars": ""}"#));
/// assert!(!is_waiting_call("bash", r#"{"command": "git status"}"#));
/// assert!(!is_waiting_call("edit", r#"{"command": "edit 3:3\n    Thread.sleep(100);\nend_of_edit"}"#));
/// ```
pub fn is_waiting_call(tool: &str, raw_arguments: &str) -> bool {
    name_says_poll(tool) || command_waits(raw_arguments) || asks_for_more_output(raw_arguments)
}

/// Keys whose string value (or list of strings) is a command the tool runs.
const COMMAND_KEYS: &[&str] = &["command", "cmd", "commands", "script", "keystrokes"];

/// True when the command the arguments run waits. Arguments that are not a JSON object are
/// read as the command itself.
fn command_waits(raw: &str) -> bool {
    let finders = finders();
    if finders.sleep.find(raw.as_bytes()).is_none() && finders.wait.find(raw.as_bytes()).is_none() {
        return false;
    }
    let Ok(serde_json::Value::Object(arguments)) = serde_json::from_str::<serde_json::Value>(raw) else {
        return arguments_wait(raw);
    };
    let mut commands = Vec::new();
    for key in COMMAND_KEYS {
        match arguments.get(*key) {
            Some(serde_json::Value::String(command)) => commands.push(command.as_str()),
            Some(serde_json::Value::Array(parts)) => commands.extend(parts.iter().filter_map(|p| p.as_str())),
            _ => {}
        }
    }
    commands.into_iter().any(|command| arguments_wait(&without_file_content(command)))
}

/// `command` without the lines it writes to files: the bodies of here-documents (`<<EOF` …
/// `EOF`) and of SWE-agent's `edit` (… `end_of_edit`).
fn without_file_content(command: &str) -> String {
    let mut kept = String::with_capacity(command.len());
    let mut until: Option<String> = None;
    for (n, line) in command.lines().enumerate() {
        if let Some(end) = &until {
            if line.trim() == end {
                until = None;
            }
            continue;
        }
        kept.push_str(line);
        kept.push('\n');
        if n == 0 && line.trim_start().starts_with("edit ") {
            until = Some("end_of_edit".to_owned());
        } else if let Some(word) = here_document(line) {
            until = Some(word);
        }
    }
    kept
}

/// The delimiter of a here-document the line starts (`<<EOF`, `<<-'EOF'`, `<< "END"`).
fn here_document(line: &str) -> Option<String> {
    let at = line.find("<<")?;
    let rest = line[at + 2..].trim_start_matches('-').trim_start();
    if rest.starts_with('<') {
        return None; // a here-string (`<<<`), no body
    }
    let word: String = rest
        .trim_start_matches(['\'', '"'])
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect();
    (!word.is_empty()).then_some(word)
}

/// The words of a tool name, split at non-letters and at lower-to-upper steps (compared
/// without regard to case).
fn name_words(tool: &str) -> impl Iterator<Item = &str> {
    let bytes = tool.as_bytes();
    let mut start = 0;
    let mut i = 0;
    std::iter::from_fn(move || {
        while i <= bytes.len() {
            let at = i;
            i += 1;
            let boundary = at == bytes.len()
                || !bytes[at].is_ascii_alphabetic()
                || (bytes[at].is_ascii_uppercase() && at > 0 && bytes[at - 1].is_ascii_lowercase());
            if !boundary {
                continue;
            }
            let word = &tool[start..at];
            start = if at < bytes.len() && bytes[at].is_ascii_alphabetic() { at } else { at + 1 };
            if !word.is_empty() {
                return Some(word);
            }
        }
        None
    })
}

fn name_says_poll(tool: &str) -> bool {
    let is = |word: &str, list: &[&str]| list.iter().any(|w| w.eq_ignore_ascii_case(word));
    let mut previous: Option<&str> = None;
    for word in name_words(tool) {
        if is(word, POLL_WORDS)
            || (word.eq_ignore_ascii_case("output") && previous.is_some_and(|p| is(p, PROCESS_WORDS)))
        {
            return true;
        }
        previous = Some(word);
    }
    false
}

/// True when the byte before `at` ends a shell command (or starts the text or a JSON string):
/// the start of a line (`\n`, also as the JSON escape), `;`, `&`, `|`, `(`, a quote, or spaces
/// after one of these.
fn starts_command(text: &[u8], at: usize) -> bool {
    let mut i = at;
    while i > 0 && text[i - 1] == b' ' {
        i -= 1;
    }
    if i == 0 {
        return true;
    }
    match text[i - 1] {
        b';' | b'&' | b'|' | b'(' | b'"' | b'\'' | b'\n' | b'`' => true,
        // `\n` spelled as a JSON escape.
        b'n' => i >= 2 && text[i - 2] == b'\\',
        _ => false,
    }
}

/// The searchers, built once.
struct Finders {
    sleep: Finder<'static>,
    wait: Finder<'static>,
    empty: Finder<'static>,
    keys: Vec<Finder<'static>>,
}

fn finders() -> &'static Finders {
    static FINDERS: OnceLock<Finders> = OnceLock::new();
    FINDERS.get_or_init(|| Finders {
        sleep: Finder::new("sleep"),
        wait: Finder::new("wait"),
        empty: Finder::new("\"\""),
        keys: MORE_OUTPUT_KEYS.iter().map(|key| Finder::new(*key)).collect(),
    })
}

/// `sleep N` or `wait` used as a shell command somewhere in the raw arguments.
fn arguments_wait(raw: &str) -> bool {
    let text = raw.as_bytes();
    let command_at =
        |finder: &'static Finder<'static>| finder.find_iter(text).filter(move |&at| starts_command(text, at));
    let sleeps = command_at(&finders().sleep).any(|at| {
        let rest = &text[at + "sleep".len()..];
        let spaces = rest.iter().take_while(|b| **b == b' ').count();
        spaces > 0 && rest.get(spaces).is_some_and(|b| b.is_ascii_digit() || *b == b'$')
    });
    sleeps
        || command_at(&finders().wait).any(|at| {
            // `wait` alone, or `wait $pid` / `wait %1` / `wait 123`.
            match text.get(at + "wait".len()..) {
                None | Some([]) => true,
                Some([b' ', next, ..]) => matches!(next, b'$' | b'%' | b';' | b'&' | b'0'..=b'9'),
                Some([next, ..]) => matches!(next, b';' | b'&' | b'|' | b')' | b'"' | b'\\' | b'\n'),
            }
        })
}

/// `"command": ""` (or `cmd`, `chars`): a request for more output of a running command.
fn asks_for_more_output(raw: &str) -> bool {
    let text = raw.as_bytes();
    let finders = finders();
    if finders.empty.find(text).is_none() {
        return false;
    }
    finders.keys.iter().any(|key| {
        key.find_iter(text).any(|at| {
            let rest = &text[at + key.needle().len()..];
            let rest = rest.trim_ascii_start();
            rest.strip_prefix(b":").is_some_and(|value| value.trim_ascii_start().starts_with(b"\"\""))
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_names_split_into_words() {
        let words = |name| name_words(name).collect::<Vec<_>>();
        assert_eq!(words("getJobStatus"), ["get", "Job", "Status"]);
        assert_eq!(words("read_terminal_output"), ["read", "terminal", "output"]);
        assert_eq!(words("BashOutput"), ["Bash", "Output"]);
        assert_eq!(words("__x9y"), ["x", "y"]);
        assert!(words("").is_empty());
    }

    #[test]
    fn tool_names_that_poll() {
        for name in
            ["get_job_status", "checkStatus", "poll", "wait_for_deploy", "TaskOutput", "read_terminal_output"]
        {
            assert!(is_waiting_call(name, "{}"), "{name}");
        }
        for name in
            ["get_reservation_details", "str_replace_editor", "statusbar_render", "write_output", "Bash"]
        {
            assert!(!is_waiting_call(name, "{}"), "{name}");
        }
    }

    #[test]
    fn shell_commands_that_wait() {
        for args in [
            r#"{"command": "sleep 2 && curl -s http://localhost:5000/"}"#,
            r#"{"command": "python serve.py & sleep 5; curl localhost"}"#,
            r#"{"command": "make build &\nwait"}"#,
            r#"{"command": "./job.sh & wait $!"}"#,
            r#"{"command": ["bash", "-lc", "sleep 10 && tail -n 5 build.log"]}"#,
            r#"{"command": "cd /repo\nsleep $DELAY"}"#,
            r#"{"command": "", "is_input": "false"}"#,
            r#"{"cmd": "sleep 3; cat out.log"}"#,
            r#"{"keystrokes": "sleep 20\n", "duration": 21}"#,
            r#"{"command": "cat > run.sh <<'EOF'\necho hi\nEOF\nsleep 2 && ./run.sh"}"#,
            "sleep 5 && make",
        ] {
            assert!(is_waiting_call("execute_bash", args), "{args}");
        }
        for args in [
            r#"{"command": "git status"}"#,
            r#"{"command": "grep -rn 'sleep(2)' src"}"#,
            r#"{"command": "edit 5:5\n    time.sleep(2)\nend_of_edit"}"#,
            r#"{"path": "notes.md", "file_text": "please wait for the review"}"#,
            r#"{"command": "ls -F"}"#,
            r#"{"command": "echo asleep 3"}"#,
            // File content, not the command run.
            r##"{"command": "create", "path": "poll.sh", "file_text": "#!/bin/sh\nsleep 5\nwait\n"}"##,
            r#"{"path": "job.sh", "content": "while true; do\n  sleep 5\ndone\n"}"#,
            r#"{"command": "cat > poll.sh <<EOF\nsleep 5\nwait\nEOF\nchmod +x poll.sh"}"#,
            r#"{"command": "edit 3:3\nsleep 5\nend_of_edit"}"#,
        ] {
            assert!(!is_waiting_call("execute_bash", args), "{args}");
        }
    }
}
