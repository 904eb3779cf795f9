//! The two backends as the suite opens them: "another process" is another store opened on the
//! same file or database, under another worker name.

use std::sync::Arc;

use looprail_journal::{PostgresStore, SharedStore, SqliteStore};

/// Where a test's store lives.
#[derive(Debug, Clone)]
pub enum Backend {
    /// A fresh SQLite file (removed when the last copy of this is dropped).
    Sqlite(Arc<crate::common::TempDb>),
    /// A fresh database on the test server.
    Postgres(String),
}

impl Backend {
    /// A fresh SQLite file for `test`.
    pub fn sqlite(test: &str) -> Self {
        Backend::Sqlite(Arc::new(crate::common::temp_db(test)))
    }

    /// A fresh database on the test server; `None` when PostgreSQL is not installed here
    /// (never under CI).
    pub async fn postgres(test: &str) -> Option<Self> {
        let server = looprail_testkit_postgres::server_or_skip(test)?;
        Some(Backend::Postgres(server.fresh_database().await))
    }

    /// A store claiming runs as worker `name`.
    pub async fn open_as(&self, name: &str) -> SharedStore {
        match self {
            Backend::Sqlite(path) => SqliteStore::open(path).await.unwrap().with_worker(name).into(),
            Backend::Postgres(url) => PostgresStore::connect(url).await.unwrap().with_worker(name).into(),
        }
    }

    /// A store claiming runs as worker `w1`.
    pub async fn open(&self) -> SharedStore {
        self.open_as("w1").await
    }
}
