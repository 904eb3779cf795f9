//! One hook invocation from end to end: the event read, the session's state loaded, the
//! answer decided and written, the state stored. It fails open: whatever goes wrong on
//! looprail's side (an event it cannot read, a store it cannot open), the agent's call goes on
//! and the user reads one line saying why.

use std::path::Path;

use crate::agents::Agent;
use crate::event::{Answer, EventKind};
use crate::session::Hook;
use crate::store::{FORGET_AFTER, SessionStore};

/// What the hook process prints and how it exits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    /// For stdout (may be empty).
    pub stdout: String,
    /// One line for stderr, when looprail's side failed.
    pub stderr: Option<String>,
    /// The exit code: 0, or 1 when looprail's side failed (both agents then go on and show the
    /// line to the user).
    pub exit_code: u8,
    /// The answer given (`Allow` when looprail's side failed).
    pub answer: Answer,
}

/// Answers the hook event `input` from `agent`, with session state in the store at `store`.
pub fn respond(agent: Agent, input: &[u8], store: &Path, hook: &Hook, now_ms: i64) -> Response {
    match decide(agent, input, store, hook, now_ms) {
        Ok((kind, answer, notice)) => {
            let stderr = notice.map(|notice| format!("looprail hook: {notice}"));
            Response { stdout: agent.render(&kind, &answer), stderr, exit_code: 0, answer }
        }
        Err(error) => Response {
            stdout: agent.render(&EventKind::Other(String::new()), &Answer::Allow),
            stderr: Some(format!("looprail hook: {error}; the call goes on unguarded")),
            exit_code: 1,
            answer: Answer::Allow,
        },
    }
}

fn decide(
    agent: Agent,
    input: &[u8],
    store: &Path,
    hook: &Hook,
    now_ms: i64,
) -> Result<(EventKind, Answer, Option<String>), crate::HookError> {
    let event = agent.parse(input)?;
    if let EventKind::Other(_) = event.kind {
        // Nothing to keep: the store is not even opened.
        return Ok((event.kind, Answer::Allow, None));
    }
    let mut sessions = SessionStore::open(store)?;
    // What the user is told besides the answer: a store moved aside, a session started afresh.
    let notice = |sessions: &mut SessionStore| {
        let aside = sessions
            .moved_aside
            .take()
            .map(|aside| format!("the session store was unreadable; moved aside to {}", aside.display()));
        let notes: Vec<String> = aside.into_iter().chain(sessions.session_reset.take()).collect();
        (!notes.is_empty()).then(|| notes.join("; "))
    };
    match &event.kind {
        EventKind::SessionEnd => {
            sessions.forget(agent.name(), &event.session)?;
            return Ok((event.kind, Answer::Allow, notice(&mut sessions)));
        }
        EventKind::SessionStart => {
            let horizon = i64::try_from(FORGET_AFTER.as_millis()).unwrap_or(i64::MAX);
            sessions.sweep(now_ms.saturating_sub(horizon))?;
        }
        _ => {}
    }
    let answer = sessions.with_session(agent.name(), &event.session, now_ms, |state| {
        hook.handle(state, &event.kind, now_ms)
    })?;
    Ok((event.kind, answer, notice(&mut sessions)))
}
