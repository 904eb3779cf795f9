//! Run journals (F35), one per conversation.

use sqlx::Row;

use super::*;

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
        .bind(body.to_string())
        .bind(now_ms())
        .execute(&self.pool)
        .await
        .map_err(self.db())?;
        Ok(())
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
        let mut tx = self.pool.begin_with("BEGIN IMMEDIATE").await.map_err(self.db())?;
        let now = now_ms();
        for (key, body) in entries {
            sqlx::query(
                "INSERT INTO journals (conversation, body, updated_at) VALUES (?, ?, ?)
                 ON CONFLICT (conversation) DO UPDATE SET body = excluded.body, updated_at = excluded.updated_at",
            )
            .bind(key)
            .bind(body.to_string())
            .bind(now)
            .execute(&mut *tx)
            .await
            .map_err(self.db())?;
        }
        tx.commit().await.map_err(self.db())
    }
}
