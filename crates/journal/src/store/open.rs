//! Choosing a backend from where the store is: a file path (SQLite, the embedded default) or
//! a `postgres://` URL.

use std::path::PathBuf;

use super::api::SharedStore;
use super::postgres::PostgresStore;
use super::sqlite::SqliteStore;
use crate::error::JournalError;

/// Where a run store lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreLocation {
    /// A SQLite file.
    Sqlite(PathBuf),
    /// A PostgreSQL database, by URL (`postgres://user@host:port/db`, `postgresql://…`).
    Postgres(String),
}

impl StoreLocation {
    /// Reads a location: a `postgres://` or `postgresql://` URL, a `sqlite:` URL, or a path.
    pub fn parse(text: &str) -> Result<Self, JournalError> {
        let text = text.trim();
        if text.is_empty() {
            return Err(JournalError::BadLocation(String::new()));
        }
        if text.starts_with("postgres://") || text.starts_with("postgresql://") {
            return Ok(Self::Postgres(text.to_owned()));
        }
        if let Some(path) = text.strip_prefix("sqlite://").or_else(|| text.strip_prefix("sqlite:")) {
            return Ok(Self::Sqlite(PathBuf::from(path)));
        }
        if text.contains("://") {
            return Err(JournalError::BadLocation(text.to_owned()));
        }
        Ok(Self::Sqlite(PathBuf::from(text)))
    }

    /// The location with any password in a URL masked, for messages and logs.
    pub fn display(&self) -> String {
        match self {
            Self::Sqlite(path) => path.display().to_string(),
            Self::Postgres(url) => mask_password(url),
        }
    }
}

/// `postgres://user:secret@host/db` → `postgres://user:***@host/db`.
fn mask_password(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else { return url.to_owned() };
    let Some((credentials, host)) = rest.rsplit_once('@') else { return url.to_owned() };
    match credentials.split_once(':') {
        Some((user, _)) => format!("{scheme}://{user}:***@{host}"),
        None => url.to_owned(),
    }
}

/// Opens the store at `location` (migrating it), claiming runs as `worker` when given.
/// `must_exist`: a SQLite file that is not there is [`JournalError::NoStore`] instead of a new
/// empty store (for commands that read or change existing runs).
pub async fn open(
    location: &StoreLocation,
    must_exist: bool,
    worker: Option<&str>,
) -> Result<SharedStore, JournalError> {
    Ok(match location {
        StoreLocation::Sqlite(path) => {
            let store = if must_exist {
                SqliteStore::open_existing(path).await?
            } else {
                SqliteStore::open(path).await?
            };
            match worker {
                Some(name) => std::sync::Arc::new(store.with_worker(name)),
                None => std::sync::Arc::new(store),
            }
        }
        StoreLocation::Postgres(url) => {
            let store = PostgresStore::connect(url).await?;
            match worker {
                Some(name) => std::sync::Arc::new(store.with_worker(name)),
                None => std::sync::Arc::new(store),
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locations_are_told_apart_and_passwords_masked() {
        assert_eq!(StoreLocation::parse("runs.db").unwrap(), StoreLocation::Sqlite("runs.db".into()));
        assert_eq!(
            StoreLocation::parse("sqlite:/tmp/r.db").unwrap(),
            StoreLocation::Sqlite("/tmp/r.db".into())
        );
        let pg = StoreLocation::parse("postgres://u:pw@h:5432/db").unwrap();
        assert_eq!(pg, StoreLocation::Postgres("postgres://u:pw@h:5432/db".into()));
        assert_eq!(pg.display(), "postgres://u:***@h:5432/db");
        assert!(matches!(StoreLocation::parse("mysql://h/db"), Err(JournalError::BadLocation(_))));
        assert!(StoreLocation::parse("  ").is_err());
    }
}
