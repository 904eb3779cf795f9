//! looprail's loop guards inside the coding agents people already use: Claude Code, Codex CLI,
//! GitHub Copilot CLI, Gemini CLI and Qwen Code run a command around every tool call (a *hook*:
//! the event as JSON on stdin, a decision as JSON on stdout). `looprail hook <agent>` is that
//! command: each event feeds the same guard stack a looprail run and the gateway use, kept per session in
//! a SQLite file, and the ladder's rungs come back in the agent's own terms: a nudge the model
//! reads with the tool's result, the next identical call denied, the user's permission prompt,
//! the agent stopped. A new prompt from the user starts a new stretch.
//!
//! The pieces: [`agents`] reads and writes each agent's format, [`session`] decides (no I/O),
//! [`store`] keeps each session's state, [`respond`] runs one invocation and fails open, and
//! [`install`] merges the hook entries into the agent's settings.
//!
//! ```
//! use looprail_hook::agents::Agent;
//! use looprail_hook::event::Answer;
//! use looprail_hook::respond::respond;
//! use looprail_hook::session::Hook;
//! use looprail_loop_core::profile::Profile;
//!
//! let dir = tempfile::tempdir()?;
//! let store = dir.path().join("hooks.db");
//! let hook = Hook::new(Profile::CodingAgent.config(), Default::default());
//! let event = |name: &str| format!(r#"{{"session_id": "s1", "hook_event_name": "{name}",
//!     "tool_name": "Bash", "tool_input": {{"command": "make"}},
//!     "tool_response": {{"stdout": "make: *** No rule to make target", "stderr": ""}}}}"#);
//! let mut answers = Vec::new();
//! for _ in 0..10 {
//!     for name in ["PreToolUse", "PostToolUse"] {
//!         let answer = respond(Agent::ClaudeCode, event(name).as_bytes(), &store, &hook, 1_000).answer;
//!         answers.push(answer);
//!     }
//! }
//! // The same failing call again and again: told, then denied.
//! assert!(answers.iter().any(|a| matches!(a, Answer::Tell(_))));
//! let denied = answers.iter().position(|a| matches!(a, Answer::Deny(_))).unwrap();
//! assert!(denied / 2 < 6, "denied by the 6th call");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod agents;
pub mod event;
pub mod install;
pub mod program;
pub mod respond;
pub mod session;
pub mod status;
pub mod store;
mod todos;

/// What can go wrong on looprail's side of a hook.
#[derive(Debug, thiserror::Error)]
pub enum HookError {
    /// The event on stdin is not JSON.
    #[error("the hook event is not JSON: {0}")]
    BadEvent(String),
    /// The event lacks a field every event of its kind has.
    #[error("the hook event has no `{0}`")]
    MissingField(&'static str),
    /// The session store could not be opened, read or written.
    #[error("session store: {0}")]
    Store(String),
    /// The agent's settings file could not be read or written.
    #[error("settings: {0}")]
    Settings(String),
}
