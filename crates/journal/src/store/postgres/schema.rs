//! The PostgreSQL schema, versioned like SQLite's: each migration runs once, in order; a
//! transaction-scoped advisory lock makes concurrent first starts wait for each other.

use sqlx::{PgPool, Row};

use super::db;
use crate::error::JournalError;

/// The migrations, oldest first.
const MIGRATIONS: &[&str] = &[
    // 1: the schema of SQLite's version 3, in PostgreSQL's types.
    "CREATE TABLE runs (
        run_id TEXT PRIMARY KEY,
        lane TEXT NOT NULL,
        parent_run_id TEXT,
        depth BIGINT NOT NULL DEFAULT 0,
        input TEXT NOT NULL,
        status TEXT NOT NULL,
        seq BIGSERIAL NOT NULL,
        created_at BIGINT NOT NULL,
        updated_at BIGINT NOT NULL,
        heartbeat_at BIGINT,
        cancel_requested_at BIGINT,
        resume_available BIGINT NOT NULL DEFAULT 0,
        persisted_messages BIGINT NOT NULL DEFAULT 0,
        last_message_hash TEXT,
        recipe TEXT,
        worker TEXT,
        takeovers BIGINT NOT NULL DEFAULT 0
     );
     CREATE INDEX runs_by_lane ON runs (lane, status, seq);
     CREATE INDEX runs_by_status ON runs (status, heartbeat_at);
     CREATE UNIQUE INDEX runs_one_active_per_lane ON runs (lane)
        WHERE status IN ('running', 'waiting_on_human', 'interrupted');
     CREATE TABLE messages (
        run_id TEXT NOT NULL,
        idx BIGINT NOT NULL,
        body TEXT NOT NULL,
        PRIMARY KEY (run_id, idx)
     );
     CREATE TABLE checkpoints (
        run_id TEXT NOT NULL,
        seq BIGINT NOT NULL,
        kind TEXT NOT NULL,
        header TEXT NOT NULL,
        message_count BIGINT NOT NULL,
        created_at BIGINT NOT NULL,
        PRIMARY KEY (run_id, seq)
     );
     CREATE TABLE tool_calls (
        run_id TEXT NOT NULL,
        tool_call_id TEXT NOT NULL,
        tool TEXT NOT NULL,
        arguments TEXT NOT NULL,
        started_at BIGINT NOT NULL,
        completed_at BIGINT,
        result TEXT,
        attempts BIGINT NOT NULL DEFAULT 1,
        PRIMARY KEY (run_id, tool_call_id)
     );
     CREATE TABLE journals (
        conversation TEXT PRIMARY KEY,
        body TEXT NOT NULL,
        updated_at BIGINT NOT NULL
     );",
];

/// The newest PostgreSQL schema version this build knows.
pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// An arbitrary constant naming the migration lock.
const MIGRATION_LOCK: i64 = 0x6c6f_6f70_7261_696c; // "looprail"

/// Applies the missing migrations in one transaction holding the migration lock.
pub(super) async fn migrate(pool: &PgPool) -> Result<(), JournalError> {
    let mut tx = pool.begin().await.map_err(db)?;
    sqlx::query("SELECT pg_advisory_xact_lock($1)")
        .bind(MIGRATION_LOCK)
        .execute(&mut *tx)
        .await
        .map_err(db)?;
    sqlx::query("CREATE TABLE IF NOT EXISTS schema_version (version BIGINT NOT NULL)")
        .execute(&mut *tx)
        .await
        .map_err(db)?;
    let row =
        sqlx::query("SELECT MAX(version) AS v FROM schema_version").fetch_one(&mut *tx).await.map_err(db)?;
    let current: i64 = row
        .try_get::<Option<i64>, _>("v")
        .map_err(|e| JournalError::corrupt("schema_version", e))?
        .unwrap_or(0);
    if current > SCHEMA_VERSION {
        return Err(JournalError::SchemaTooNew { found: current, known: SCHEMA_VERSION });
    }
    for (index, migration) in MIGRATIONS.iter().enumerate().skip(current as usize) {
        sqlx::raw_sql(*migration).execute(&mut *tx).await.map_err(db)?;
        sqlx::query("INSERT INTO schema_version (version) VALUES ($1)")
            .bind(index as i64 + 1)
            .execute(&mut *tx)
            .await
            .map_err(db)?;
    }
    tx.commit().await.map_err(db)
}
