//! The SQLite store's write-ahead log stays bounded under a stream of journal writes (a
//! gateway's saves), although the connection that writes them never checkpoints it itself.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::temp_db;
use looprail_journal::RunStore as _;
use looprail_journal::SqliteStore;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_write_ahead_log_is_checkpointed_beside_the_journal_writes() {
    let path = temp_db("wal");
    let store = SqliteStore::open(&path).await.unwrap();
    let body = serde_json::json!({ "history": "x".repeat(4_000) });
    let writes = 3_000;
    for i in 0..writes {
        store.save_journal(&format!("conversation-{}", i % 50), &body).await.unwrap();
        if i % 500 == 499 {
            // Checkpoints run beside the writes: give the last one its turn.
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    }
    let wal = path.with_extension("db-wal");
    let size = std::fs::metadata(&wal).map(|m| m.len()).unwrap_or(0);
    // Unchecked, 3,000 writes of a 4 KB document leave a log of about 36 MB; checkpointed, it
    // starts over once a checkpoint catches up, and is checkpointed by the writer at 4,000
    // pages (16 MB) when the writes leave no pause.
    assert!(size < 20 << 20, "the log grew to {size} bytes");
    for i in 0..50 {
        assert_eq!(store.load_journal(&format!("conversation-{i}")).await.unwrap(), Some(body.clone()));
    }
}
