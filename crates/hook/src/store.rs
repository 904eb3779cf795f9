//! Each session's state in a SQLite file, safe for hook processes running at once: an event is
//! read, decided and written inside one write transaction (`BEGIN IMMEDIATE`), so two hooks of
//! one session never lose each other's update, and other sessions wait only for that.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};

use crate::HookError;
use crate::session::SessionState;

/// Sessions untouched for this long are removed when a session starts.
pub const FORGET_AFTER: Duration = Duration::from_secs(14 * 24 * 3600);

/// The session store.
#[derive(Debug)]
pub struct SessionStore {
    conn: Connection,
    path: PathBuf,
    /// Where an unreadable store file was moved when this one started afresh.
    pub moved_aside: Option<PathBuf>,
    /// A session whose stored state no longer read, and started afresh: why.
    pub session_reset: Option<String>,
}

/// The per-user default: `$XDG_STATE_HOME/looprail/hooks.db`, else
/// `~/.local/state/looprail/hooks.db`; `None` without a home directory.
pub fn default_path() -> Option<PathBuf> {
    let state =
        std::env::var_os("XDG_STATE_HOME").filter(|v| !v.is_empty()).map(PathBuf::from).or_else(|| {
            std::env::var_os("HOME").filter(|v| !v.is_empty()).map(|h| Path::new(&h).join(".local/state"))
        })?;
    Some(state.join("looprail").join("hooks.db"))
}

impl SessionStore {
    /// Opens (or creates) the store at `path`, creating its directory (private to the user). A
    /// file that is not a readable database (left damaged by a crash of the machine: the store
    /// does not sync to disk, see below) is moved aside, not deleted, and the store starts
    /// afresh ([`SessionStore::moved_aside`] says where it went). Damage found later, when a
    /// session is read or written, is handled the same way ([`SessionStore::with_session`]).
    pub fn open(path: &Path) -> Result<Self, HookError> {
        match Self::open_as_is(path) {
            Err(HookError::Store(why)) if path.is_file() && unreadable(&why) => Self::start_afresh(path),
            other => other,
        }
    }

    /// Moves the damaged file at `path` aside and opens a fresh store there.
    fn start_afresh(path: &Path) -> Result<Self, HookError> {
        let aside = path.with_extension(format!("db.unreadable-{}", std::process::id()));
        std::fs::rename(path, &aside).map_err(|e| HookError::Store(format!("{}: {e}", path.display())))?;
        for suffix in ["-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
        }
        let mut store = Self::open_as_is(path)?;
        store.moved_aside = Some(aside);
        Ok(store)
    }

    fn open_as_is(path: &Path) -> Result<Self, HookError> {
        let store_error = |e: &dyn std::fmt::Display| HookError::Store(format!("{}: {e}", path.display()));
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty() && !d.exists()) {
            create_private_dir(dir).map_err(|e| store_error(&e))?;
        }
        let conn = Connection::open(path).map_err(|e| store_error(&e))?;
        conn.busy_timeout(Duration::from_secs(5)).map_err(|e| store_error(&e))?;
        // WAL: readers never wait for a writer. No sync to disk: a hook answers within a
        // millisecond on every tool call, and what a crash of the machine can lose is advice
        // (a damaged file is moved aside on the next open).
        // Switching to WAL takes the file's exclusive lock, and SQLite answers "database is
        // locked" at once, with no busy wait, when another process holds it (hooks of parallel
        // tool calls open the store together): the switch is made only when the file is not in
        // WAL yet, and tried again for up to the busy timeout.
        let mode: String =
            conn.query_row("PRAGMA journal_mode", [], |r| r.get(0)).map_err(|e| store_error(&e))?;
        if !mode.eq_ignore_ascii_case("wal") {
            let started = std::time::Instant::now();
            loop {
                match conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get::<_, String>(0)) {
                    Ok(_) => break,
                    Err(e) if busy(&e) && started.elapsed() < Duration::from_secs(5) => {
                        std::thread::sleep(Duration::from_millis(5));
                    }
                    Err(e) => return Err(store_error(&e)),
                }
            }
        }
        conn.execute_batch(
            "PRAGMA synchronous = OFF;
             CREATE TABLE IF NOT EXISTS hook_sessions (
                 agent TEXT NOT NULL, session_id TEXT NOT NULL, state TEXT NOT NULL,
                 updated_ms INTEGER NOT NULL, PRIMARY KEY (agent, session_id));",
        )
        .map_err(|e| store_error(&e))?;
        Ok(Self { conn, path: path.to_owned(), moved_aside: None, session_reset: None })
    }

    /// Runs `decide` on the state of `session` of `agent` (a fresh one when none is stored, or
    /// when the stored one no longer reads: [`SessionStore::session_reset`] then says why),
    /// then stores what it left, all in one transaction. A store file found damaged on the way
    /// is moved aside and the event decided again on a fresh store.
    pub fn with_session<T>(
        &mut self,
        agent: &str,
        session: &str,
        now_ms: i64,
        mut decide: impl FnMut(&mut SessionState) -> T,
    ) -> Result<T, HookError> {
        match self.try_with_session(agent, session, now_ms, &mut decide) {
            Err(HookError::Store(why)) if unreadable(&why) && self.moved_aside.is_none() => {
                let fresh = Self::start_afresh(&self.path)?;
                let session_reset = self.session_reset.take();
                *self = fresh;
                self.session_reset = session_reset;
                self.try_with_session(agent, session, now_ms, &mut decide)
            }
            other => other,
        }
    }

    fn try_with_session<T>(
        &mut self,
        agent: &str,
        session: &str,
        now_ms: i64,
        decide: &mut impl FnMut(&mut SessionState) -> T,
    ) -> Result<T, HookError> {
        let db = |e: rusqlite::Error| HookError::Store(e.to_string());
        let tx = self.conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(db)?;
        let stored: Option<String> = tx
            .query_row(
                "SELECT state FROM hook_sessions WHERE agent = ?1 AND session_id = ?2",
                params![agent, session],
                |row| row.get(0),
            )
            .optional()
            .map_err(db)?;
        let mut state: SessionState = match stored.map(|text| serde_json::from_str(&text)) {
            None => SessionState::default(),
            Some(Ok(state)) => state,
            Some(Err(e)) => {
                self.session_reset = Some(format!(
                    "the stored state of session {session} did not read ({e}); it starts afresh"
                ));
                SessionState::default()
            }
        };
        let answer = decide(&mut state);
        let text = serde_json::to_string(&state).map_err(|e| HookError::Store(e.to_string()))?;
        tx.execute(
            "INSERT INTO hook_sessions (agent, session_id, state, updated_ms) VALUES (?1, ?2, ?3, ?4)
             ON CONFLICT (agent, session_id) DO UPDATE SET state = excluded.state, updated_ms = excluded.updated_ms",
            params![agent, session, text, now_ms],
        )
        .map_err(db)?;
        tx.commit().map_err(db)?;
        Ok(answer)
    }

    /// Removes a session that ended.
    pub fn forget(&self, agent: &str, session: &str) -> Result<(), HookError> {
        self.conn
            .execute(
                "DELETE FROM hook_sessions WHERE agent = ?1 AND session_id = ?2",
                params![agent, session],
            )
            .map(|_| ())
            .map_err(|e| HookError::Store(e.to_string()))
    }

    /// Removes sessions untouched since `before_ms`; how many.
    pub fn sweep(&self, before_ms: i64) -> Result<usize, HookError> {
        self.conn
            .execute("DELETE FROM hook_sessions WHERE updated_ms < ?1", params![before_ms])
            .map_err(|e| HookError::Store(e.to_string()))
    }
}

/// True for SQLite's words for a file that is no database, or a damaged one.
fn unreadable(why: &str) -> bool {
    why.contains("not a database") || why.contains("malformed") || why.contains("corrupt")
}

#[cfg(unix)]
fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)
}

#[cfg(not(unix))]
fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)
}

/// SQLite said the file is busy or locked by another connection.
fn busy(error: &rusqlite::Error) -> bool {
    matches!(
        error.sqlite_error_code(),
        Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
    )
}
