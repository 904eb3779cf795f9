//! `looprail hook status`: where looprail's hooks are installed, what they run, and whether they
//! answer.
//!
//! For each agent and settings file (the project's and the user's), the distinct commands or
//! URLs of looprail's entries, then a dry event sent to each the way the agent would send it: a
//! `SessionEnd` of a session of its own, which every hook answers and which changes nothing. A
//! command runs through `sh -c` with the event on stdin; a URL gets it in a POST (plain
//! `http://` only: an `https://` gateway is listed, not probed).

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

use crate::agents::Agent;
use crate::install::{Scope, entries, is_ours, settings_path};

/// How long a dry event may take.
const PROBE_TIMEOUT: Duration = Duration::from_secs(10);

/// What one of looprail's entries runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Installed {
    /// A command line.
    Command(String),
    /// A gateway's hook endpoint, with its headers (values may name environment variables).
    Http {
        /// The URL.
        url: String,
        /// The headers the agent sends.
        headers: Vec<(String, String)>,
    },
}

impl std::fmt::Display for Installed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Installed::Command(command) => write!(f, "command {command}"),
            Installed::Http { url, .. } => write!(f, "http {url}"),
        }
    }
}

/// One settings file's state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileState {
    /// No such file, or no looprail entry in it.
    NotInstalled,
    /// The file does not read as JSON settings.
    Unreadable(String),
    /// looprail's entries, each target once.
    Installed(Vec<Installed>),
}

/// The state of `agent`'s settings file for `scope`.
pub fn installed(agent: Agent, scope: &Scope) -> (PathBuf, FileState) {
    let path = settings_path(agent, scope);
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return (path, FileState::NotInstalled),
        Err(e) => return (path, FileState::Unreadable(e.to_string())),
    };
    let settings: Value = match serde_json::from_str(&text) {
        Ok(settings) => settings,
        Err(e) => return (path, FileState::Unreadable(format!("not JSON: {e}"))),
    };
    let mut found: Vec<Installed> = Vec::new();
    for hook in entries(&settings, agent).into_iter().filter(|hook| is_ours(hook, agent)) {
        let target = match hook.get("url").and_then(Value::as_str) {
            Some(url) => Installed::Http {
                url: url.to_owned(),
                headers: hook
                    .get("headers")
                    .and_then(Value::as_object)
                    .into_iter()
                    .flatten()
                    .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
                    .collect(),
            },
            None => {
                let command = hook.get("command").or_else(|| hook.get("bash")).and_then(Value::as_str);
                Installed::Command(command.unwrap_or_default().to_owned())
            }
        };
        if !found.contains(&target) {
            found.push(target);
        }
    }
    let state = if found.is_empty() { FileState::NotInstalled } else { FileState::Installed(found) };
    (path, state)
}

/// The dry event for `agent`: its session's end, for a session of the probe's own.
pub fn dry_event(agent: Agent) -> Value {
    let session = format!("looprail-status-{}", std::process::id());
    match agent {
        Agent::GeminiCli => json!({"session_id": session, "hook_event_name": "SessionEnd",
            "transcript_path": "", "cwd": "/", "timestamp": "", "reason": "exit"}),
        // Codex sends no session end of its own; its hook reads one as Claude Code's.
        Agent::ClaudeCode | Agent::QwenCode | Agent::Codex => json!({"session_id": session,
            "hook_event_name": "SessionEnd", "transcript_path": "", "cwd": "/", "reason": "other"}),
        Agent::Copilot => json!({"session_id": session, "hook_event_name": "SessionEnd",
            "timestamp": "", "cwd": "/", "reason": "complete"}),
    }
}

/// Sends `agent`'s dry event to `target`: `Ok` with what answered, or why it did not.
pub fn probe(agent: Agent, target: &Installed, cwd: &Path) -> Result<String, String> {
    let event = dry_event(agent).to_string();
    match target {
        Installed::Command(command) => {
            let mut child = Command::new("sh")
                .args(["-c", command])
                .current_dir(cwd)
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .map_err(|e| format!("cannot run sh: {e}"))?;
            if let Some(mut stdin) = child.stdin.take() {
                let _ = stdin.write_all(event.as_bytes());
            }
            let out = child.wait_with_output().map_err(|e| e.to_string())?;
            match out.status.code() {
                Some(0) => Ok("answers".to_owned()),
                code => {
                    let said = String::from_utf8_lossy(&out.stderr);
                    let line = said.lines().next().unwrap_or("no message");
                    Err(format!("exit {}: {line}", code.map_or("by signal".to_owned(), |c| c.to_string())))
                }
            }
        }
        Installed::Http { url, headers } => post(url, headers, &event),
    }
}

/// A POST over plain HTTP/1.1: the status line's answer.
fn post(url: &str, headers: &[(String, String)], body: &str) -> Result<String, String> {
    let Some(rest) = url.strip_prefix("http://") else {
        return Ok("not probed (https)".to_owned());
    };
    let (authority, path) =
        rest.split_once('/').map_or((rest, "/".to_owned()), |(a, p)| (a, format!("/{p}")));
    let address = if authority.contains(':') { authority.to_owned() } else { format!("{authority}:80") };
    let socket = std::net::ToSocketAddrs::to_socket_addrs(&address)
        .map_err(|e| format!("{address}: {e}"))?
        .next()
        .ok_or_else(|| format!("{address}: no address"))?;
    let mut stream = std::net::TcpStream::connect_timeout(&socket, PROBE_TIMEOUT)
        .map_err(|e| format!("cannot reach {authority}: {e}"))?;
    let _ = stream.set_read_timeout(Some(PROBE_TIMEOUT));
    let mut request = format!(
        "POST {path} HTTP/1.1\r\nHost: {authority}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    for (name, value) in headers {
        request.push_str(&format!("{name}: {}\r\n", interpolate(value)));
    }
    request.push_str("\r\n");
    request.push_str(body);
    stream.write_all(request.as_bytes()).map_err(|e| e.to_string())?;
    let mut answer = Vec::new();
    let _ = stream.take(4096).read_to_end(&mut answer);
    let text = String::from_utf8_lossy(&answer);
    let status = text.lines().next().unwrap_or_default().split(' ').nth(1).unwrap_or_default().to_owned();
    match status.as_str() {
        "200" => Ok("answers".to_owned()),
        "" => Err("no HTTP answer".to_owned()),
        other => Err(format!("HTTP {other}")),
    }
}

/// `${NAME}` and `$NAME` replaced by the environment's values, as the agents do for headers.
fn interpolate(value: &str) -> String {
    let mut out = String::new();
    let mut rest = value;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        let (name, tail) = match after.strip_prefix('{').and_then(|a| a.split_once('}')) {
            Some((name, tail)) => (name, tail),
            None => {
                let end =
                    after.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(after.len());
                (&after[..end], &after[end..])
            }
        };
        out.push_str(&std::env::var(name).unwrap_or_default());
        rest = tail;
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_read_their_variables_as_the_agents_do() {
        let path = std::env::var("PATH").unwrap_or_default();
        assert_eq!(interpolate("a ${PATH} b"), format!("a {path} b"));
        assert_eq!(interpolate("a $PATH"), format!("a {path}"));
        assert_eq!(interpolate("Bearer ${LOOPRAIL_STATUS_TEST_UNSET}"), "Bearer ");
        assert_eq!(interpolate("plain"), "plain");
    }
}
