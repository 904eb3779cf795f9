//! Many processes opening one fresh store at once (issue 14): every open succeeds and the
//! schema is applied exactly once.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use looprail_journal::SqliteStore;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_first_opens_all_succeed_and_migrate_once() {
    let dir = tempfile::tempdir().unwrap();
    for round in 0..10 {
        let path = dir.path().join(format!("race-{round}.db"));
        // Separate pools are separate connections, locked against each other exactly as
        // separate processes are.
        let opens: Vec<_> = (0..6)
            .map(|_| {
                let path = path.clone();
                tokio::spawn(async move { SqliteStore::open(&path).await })
            })
            .collect();
        let mut stores = Vec::new();
        for open in opens {
            stores.push(open.await.unwrap().unwrap_or_else(|e| panic!("round {round}: {e}")));
        }
        let versions: Vec<(i64,)> =
            sqlx::query_as("SELECT version FROM schema_version").fetch_all(stores[0].pool()).await.unwrap();
        let expected: Vec<(i64,)> = (1..=looprail_journal::SCHEMA_VERSION).map(|v| (v,)).collect();
        assert_eq!(versions, expected, "round {round}: each migration is recorded once");
    }
}
