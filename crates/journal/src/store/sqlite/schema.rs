//! The schema, versioned: each migration runs once, in order, at open. A database newer than
//! this build is refused with [`JournalError::SchemaTooNew`].

use sqlx::{Row, SqlitePool};

use crate::error::JournalError;

/// The migrations, oldest first; the version of a database is how many it has applied.
const MIGRATIONS: &[&str] = &[
    // 1: runs, messages, checkpoints, the tool-call envelope, journals.
    "CREATE TABLE runs (
        run_id TEXT PRIMARY KEY,
        lane TEXT NOT NULL,
        parent_run_id TEXT,
        depth INTEGER NOT NULL DEFAULT 0,
        input TEXT NOT NULL,
        status TEXT NOT NULL,
        seq INTEGER NOT NULL,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL,
        heartbeat_at INTEGER,
        cancel_requested_at INTEGER,
        resume_available INTEGER NOT NULL DEFAULT 0,
        persisted_messages INTEGER NOT NULL DEFAULT 0,
        last_message_hash TEXT
     );
     CREATE INDEX runs_by_lane ON runs (lane, status, seq);
     CREATE TABLE messages (
        run_id TEXT NOT NULL,
        idx INTEGER NOT NULL,
        body TEXT NOT NULL,
        PRIMARY KEY (run_id, idx)
     );
     CREATE TABLE checkpoints (
        run_id TEXT NOT NULL,
        seq INTEGER NOT NULL,
        kind TEXT NOT NULL,
        header TEXT NOT NULL,
        message_count INTEGER NOT NULL,
        created_at INTEGER NOT NULL,
        PRIMARY KEY (run_id, seq)
     );
     CREATE TABLE tool_calls (
        run_id TEXT NOT NULL,
        tool_call_id TEXT NOT NULL,
        tool TEXT NOT NULL,
        arguments TEXT NOT NULL,
        started_at INTEGER NOT NULL,
        completed_at INTEGER,
        result TEXT,
        PRIMARY KEY (run_id, tool_call_id)
     );
     CREATE TABLE journals (
        conversation TEXT PRIMARY KEY,
        body TEXT NOT NULL,
        updated_at INTEGER NOT NULL
     );",
    // 2: what executes a run, stored by its submitter (JSON).
    "ALTER TABLE runs ADD COLUMN recipe TEXT;",
    // 3: who holds a run, how often it was taken over, how often each call was started, and
    // one active run per lane enforced by the database itself.
    "ALTER TABLE runs ADD COLUMN worker TEXT;
     ALTER TABLE runs ADD COLUMN takeovers INTEGER NOT NULL DEFAULT 0;
     ALTER TABLE tool_calls ADD COLUMN attempts INTEGER NOT NULL DEFAULT 1;
     CREATE UNIQUE INDEX runs_one_active_per_lane ON runs (lane)
        WHERE status IN ('running', 'waiting_on_human', 'interrupted');",
];

/// The newest SQLite schema version this build knows.
pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// The highest applied version, read through `executor`.
async fn applied<'e>(executor: impl sqlx::SqliteExecutor<'e>, busy_ms: u64) -> Result<i64, JournalError> {
    let row = sqlx::query("SELECT MAX(version) AS v FROM schema_version")
        .fetch_one(executor)
        .await
        .map_err(|e| JournalError::from_sqlx(e, busy_ms))?;
    let current: Option<i64> = row.try_get("v").map_err(|e| JournalError::corrupt("schema_version", e))?;
    Ok(current.unwrap_or(0))
}

/// Applies the missing migrations in one write transaction.
///
/// Safe when several processes open a fresh store at once: everything, the version table's
/// creation included, happens after taking the write lock (`BEGIN IMMEDIATE`, which waits out
/// the busy timeout), so the second opener finds the first one's work done. (sqlx's own
/// migrator takes no lock on SQLite, so it would race here.)
pub(crate) async fn migrate(pool: &SqlitePool, busy_ms: u64) -> Result<(), JournalError> {
    let db = |e: sqlx::Error| JournalError::from_sqlx(e, busy_ms);
    // The common case, an up-to-date store, needs no write lock (readers keep working while
    // another process writes).
    match applied(pool, busy_ms).await {
        Ok(current) if current == SCHEMA_VERSION => return Ok(()),
        Ok(current) if current > SCHEMA_VERSION => {
            return Err(JournalError::SchemaTooNew { found: current, known: SCHEMA_VERSION });
        }
        _ => {} // older, or no version table yet
    }
    let mut tx = pool.begin_with("BEGIN IMMEDIATE").await.map_err(db)?;
    sqlx::query("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
        .execute(&mut *tx)
        .await
        .map_err(db)?;
    let current = applied(&mut *tx, busy_ms).await?;
    if current > SCHEMA_VERSION {
        return Err(JournalError::SchemaTooNew { found: current, known: SCHEMA_VERSION });
    }
    if current == SCHEMA_VERSION {
        return Ok(()); // dropping the transaction releases the lock
    }
    for (index, migration) in MIGRATIONS.iter().enumerate().skip(current as usize) {
        sqlx::raw_sql(*migration).execute(&mut *tx).await.map_err(db)?;
        sqlx::query("INSERT INTO schema_version (version) VALUES (?)")
            .bind(index as i64 + 1)
            .execute(&mut *tx)
            .await
            .map_err(db)?;
    }
    tx.commit().await.map_err(db)
}
