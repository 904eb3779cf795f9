//! [`RunStore`](crate::RunStore) for [`PostgresStore`]: each operation is the backend's own method.

use super::*;

crate::store::delegate::delegate_run_store!(PostgresStore, "postgres");
