//! Run journals (F35), one per conversation.

use sqlx::Row;

use super::*;
use looprail_loop_core::json_text::json_text;

/// The most documents written by one statement (SQLite binds at most 32,766 values).
const SAVED_IN_ONE_STATEMENT: usize = 300;

impl SqliteStore {
    /// The journal of a conversation, as stored JSON.
    pub(super) async fn load_journal(
        &self,
        conversation: &str,
    ) -> Result<Option<serde_json::Value>, JournalError> {
        let row = sqlx::query("SELECT body FROM journals WHERE conversation = ?")
            .bind(conversation)
            .fetch_optional(&self.pool)
            .await
            .map_err(self.db())?;
        row.map(|r| {
            let body: String = r.try_get("body").map_err(|e| JournalError::corrupt("journals", e))?;
            serde_json::from_str(&body).map_err(|e| JournalError::corrupt("journals", e))
        })
        .transpose()
    }

    /// Stores the journal of a conversation.
    pub(super) async fn save_journal(
        &self,
        conversation: &str,
        body: &serde_json::Value,
    ) -> Result<(), JournalError> {
        sqlx::query(
            "INSERT INTO journals (conversation, body, updated_at) VALUES (?, ?, ?)
             ON CONFLICT (conversation) DO UPDATE SET body = excluded.body, updated_at = excluded.updated_at",
        )
        .bind(conversation)
        .bind(json_text(body))
        .bind(now_ms())
        .execute(&mut *self.journal_writer().await?)
        .await
        .map_err(self.db())?;
        Ok(())
    }

    /// Stores `body` only while the stored document is `expected` (see `RunStore::swap_journal`).
    pub(super) async fn swap_journal(
        &self,
        key: &str,
        expected: Option<&serde_json::Value>,
        body: &serde_json::Value,
    ) -> Result<bool, JournalError> {
        self.swap_journal_on(&mut *self.journal_writer().await?, key, expected, body).await
    }

    async fn swap_journal_on<'c>(
        &self,
        executor: impl sqlx::SqliteExecutor<'c>,
        key: &str,
        expected: Option<&serde_json::Value>,
        body: &serde_json::Value,
    ) -> Result<bool, JournalError> {
        let done = match expected {
            None => sqlx::query(
                "INSERT INTO journals (conversation, body, updated_at) VALUES (?, ?, ?)
                 ON CONFLICT (conversation) DO NOTHING",
            )
            .bind(key)
            .bind(json_text(body))
            .bind(now_ms()),
            Some(expected) => sqlx::query(
                "UPDATE journals SET body = ?, updated_at = ? WHERE conversation = ? AND body = ?",
            )
            .bind(json_text(body))
            .bind(now_ms())
            .bind(key)
            .bind(json_text(expected)),
        };
        let done = done.execute(executor).await.map_err(self.db())?;
        Ok(done.rows_affected() == 1)
    }

    /// Swaps `key` and stores `entries` in one statement (see
    /// `RunStore::swap_journal_saving`): every row is an upsert, the state's row guarded by its
    /// expected document (no document: `journals.body = NULL` is never true).
    pub(super) async fn swap_journal_saving(
        &self,
        key: &str,
        expected: Option<&serde_json::Value>,
        body: &serde_json::Value,
        entries: &[(String, serde_json::Value)],
    ) -> Result<bool, JournalError> {
        if entries.len() >= SAVED_IN_ONE_STATEMENT {
            self.save_journals(entries).await?;
            return self.swap_journal(key, expected, body).await;
        }
        let mut writer = self.journal_writer().await?;
        self.swap_saving_on(&mut *writer, &JournalSwap { key, expected, body, entries }).await
    }

    /// Several swaps with their entries in one transaction (one commit for all; see
    /// `RunStore::swap_journals_saving`).
    pub(super) async fn swap_journals_saving(
        &self,
        swaps: &[JournalSwap<'_>],
    ) -> Result<Vec<bool>, JournalError> {
        if let [swap] = swaps {
            return Ok(vec![
                self.swap_journal_saving(swap.key, swap.expected, swap.body, swap.entries).await?,
            ]);
        }
        let mut writer = self.journal_writer().await?;
        let mut tx =
            sqlx::Connection::begin_with(&mut *writer, "BEGIN IMMEDIATE").await.map_err(self.db())?;
        let mut done = Vec::with_capacity(swaps.len());
        for swap in swaps {
            let swapped = if swap.entries.len() >= SAVED_IN_ONE_STATEMENT {
                for chunk in swap.entries.chunks(SAVED_IN_ONE_STATEMENT) {
                    self.upsert_journals(&mut *tx, chunk, now_ms()).await?;
                }
                self.swap_journal_on(&mut *tx, swap.key, swap.expected, swap.body).await?
            } else {
                self.swap_saving_on(&mut *tx, swap).await?
            };
            done.push(swapped);
        }
        tx.commit().await.map_err(self.db())?;
        Ok(done)
    }

    /// One swap with fewer entries than one statement holds, as one statement.
    async fn swap_saving_on<'c>(
        &self,
        executor: impl sqlx::SqliteExecutor<'c>,
        swap: &JournalSwap<'_>,
    ) -> Result<bool, JournalError> {
        let JournalSwap { key, expected, body, entries } = *swap;
        // Only placeholders are spliced in; the values are bound.
        let rows = vec!["(?, ?, ?)"; entries.len() + 1].join(", ");
        let sql = format!(
            "INSERT INTO journals (conversation, body, updated_at) VALUES {rows}
             ON CONFLICT (conversation) DO UPDATE SET body = excluded.body, updated_at = excluded.updated_at
             WHERE journals.conversation <> ? OR journals.body = ?"
        );
        let now = now_ms();
        let mut query = sqlx::query(sqlx::AssertSqlSafe(sql)).bind(key).bind(json_text(body)).bind(now);
        for (entry, document) in entries {
            query = query.bind(entry).bind(json_text(document)).bind(now);
        }
        let query = query.bind(key).bind(expected.map(json_text));
        let done = query.execute(executor).await.map_err(self.db())?;
        Ok(done.rows_affected() == entries.len() as u64 + 1)
    }

    pub(super) async fn load_journals(
        &self,
        keys: &[String],
    ) -> Result<Vec<(String, serde_json::Value)>, JournalError> {
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        // Only placeholders are spliced in; the keys are bound.
        let marks = vec!["?"; keys.len()].join(", ");
        let sql = format!("SELECT conversation, body FROM journals WHERE conversation IN ({marks})");
        let mut query = sqlx::query(sqlx::AssertSqlSafe(sql));
        for key in keys {
            query = query.bind(key);
        }
        let rows = query.fetch_all(&self.pool).await.map_err(self.db())?;
        rows.iter()
            .map(|r| {
                let key: String =
                    r.try_get("conversation").map_err(|e| JournalError::corrupt("journals", e))?;
                let body: String = r.try_get("body").map_err(|e| JournalError::corrupt("journals", e))?;
                Ok((key, serde_json::from_str(&body).map_err(|e| JournalError::corrupt("journals", e))?))
            })
            .collect()
    }

    pub(super) async fn save_journals(
        &self,
        entries: &[(String, serde_json::Value)],
    ) -> Result<(), JournalError> {
        // One statement is atomic by itself and costs one round trip to the connection's
        // thread, where a transaction costs four; batches past SQLite's bound-value limit go in
        // chunks inside one transaction.
        const CHUNK: usize = SAVED_IN_ONE_STATEMENT;
        if entries.is_empty() {
            return Ok(());
        }
        let now = now_ms();
        if entries.len() <= CHUNK {
            return self.upsert_journals(&mut *self.journal_writer().await?, entries, now).await;
        }
        let mut writer = self.journal_writer().await?;
        let mut tx =
            sqlx::Connection::begin_with(&mut *writer, "BEGIN IMMEDIATE").await.map_err(self.db())?;
        for chunk in entries.chunks(CHUNK) {
            self.upsert_journals(&mut *tx, chunk, now).await?;
        }
        tx.commit().await.map_err(self.db())
    }

    async fn upsert_journals<'c>(
        &self,
        executor: impl sqlx::SqliteExecutor<'c>,
        entries: &[(String, serde_json::Value)],
        now: i64,
    ) -> Result<(), JournalError> {
        // Only placeholders are spliced in; the values are bound.
        let rows = vec!["(?, ?, ?)"; entries.len()].join(", ");
        let sql = format!(
            "INSERT INTO journals (conversation, body, updated_at) VALUES {rows}
             ON CONFLICT (conversation) DO UPDATE SET body = excluded.body, updated_at = excluded.updated_at"
        );
        let mut query = sqlx::query(sqlx::AssertSqlSafe(sql));
        for (key, body) in entries {
            query = query.bind(key).bind(json_text(body)).bind(now);
        }
        query.execute(executor).await.map_err(self.db())?;
        Ok(())
    }
}
