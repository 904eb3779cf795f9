//! [`RunStore`](crate::RunStore) for [`SqliteStore`]: each operation is the backend's own method.

use super::*;

crate::store::delegate::delegate_run_store!(SqliteStore, "sqlite");
