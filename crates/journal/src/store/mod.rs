//! The run store: one trait ([`RunStore`]), two backends ([`SqliteStore`], embedded, and
//! [`PostgresStore`], for many workers), chosen at run time by [`open`] from a path or a
//! `postgres://` URL.

mod api;
mod common;
mod delegate;
mod open;
mod postgres;
mod sqlite;
mod types;

pub use api::{Checkpoints, MAX_TAKEOVERS, RunStore, SharedStore, default_worker_name};
pub use open::{StoreLocation, open};
pub use postgres::PostgresStore;
pub use postgres::schema::SCHEMA_VERSION as POSTGRES_SCHEMA_VERSION;
pub use sqlite::SqliteStore;
pub use sqlite::schema::SCHEMA_VERSION;
pub use types::{JournalSwap, ReconcileReport, RunRow, RunSpec, RunStatus, Submitted, ToolCallRow, now_ms};

impl From<SqliteStore> for SharedStore {
    fn from(store: SqliteStore) -> Self {
        std::sync::Arc::new(store)
    }
}

impl From<PostgresStore> for SharedStore {
    fn from(store: PostgresStore) -> Self {
        std::sync::Arc::new(store)
    }
}
