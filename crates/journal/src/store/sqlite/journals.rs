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
}
