//! One writer per SQLite file. SQLite has no leases between machines worth the name (a file
//! on a network share locks unreliably), so every process that runs the control loop on an
//! SQLite database first takes an exclusive lock on `<database file>.worker-lock` and holds it
//! for its whole life; the kernel drops it when the process dies, even by `kill -9`. On
//! PostgreSQL there is nothing to take: the leases coordinate any number of workers.

use std::fs::{File, OpenOptions, TryLockError};

use crate::options::DatabaseUrl;

/// The held lock; dropping it releases the file for the next process.
#[derive(Debug)]
pub struct WriterLock {
    _file: File,
}

/// Why the lock was not taken.
#[derive(Debug, thiserror::Error)]
pub enum WriterLockError {
    /// Another live process holds it.
    #[error("another process already serves the SQLite database {database} (it holds {lock})")]
    Held {
        /// The database file.
        database: String,
        /// The lock file.
        lock: String,
    },
    /// The lock file cannot be opened or locked (its directory is missing or read-only, say).
    #[error("cannot open or lock the lock file {lock}: {source}")]
    Io {
        /// The lock file.
        lock: String,
        /// What the system said.
        #[source]
        source: std::io::Error,
    },
}

impl WriterLock {
    /// Takes the lock of the SQLite database `url` names without waiting; `None` for
    /// PostgreSQL, which needs none.
    ///
    /// # Errors
    ///
    /// [`WriterLockError::Held`] while another process holds it, [`WriterLockError::Io`]
    /// when the lock file cannot be opened or locked.
    pub fn acquire(url: &DatabaseUrl) -> Result<Option<Self>, WriterLockError> {
        let DatabaseUrl::Sqlite { path } = url else {
            return Ok(None);
        };
        let lock = format!("{path}.worker-lock");
        let io = |source| WriterLockError::Io {
            lock: lock.clone(),
            source,
        };
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock)
            .map_err(io)?;
        match file.try_lock() {
            Ok(()) => Ok(Some(Self { _file: file })),
            Err(TryLockError::WouldBlock) => Err(WriterLockError::Held {
                database: path.clone(),
                lock,
            }),
            Err(TryLockError::Error(source)) => Err(io(source)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_writer_is_refused_until_the_first_lets_go() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db.sqlite").display().to_string();
        let url = DatabaseUrl::Sqlite { path: path.clone() };
        let first = WriterLock::acquire(&url).unwrap();
        assert!(first.is_some());
        match WriterLock::acquire(&url) {
            Err(WriterLockError::Held { database, lock }) => {
                assert_eq!(database, path);
                assert_eq!(lock, format!("{path}.worker-lock"));
            }
            other => panic!("expected Held, got {other:?}"),
        }
        drop(first);
        assert!(WriterLock::acquire(&url).unwrap().is_some());
    }

    #[test]
    fn postgres_takes_no_lock() {
        let url = DatabaseUrl::Postgres {
            url: "postgres://localhost/x".to_owned(),
        };
        assert!(WriterLock::acquire(&url).unwrap().is_none());
    }

    #[test]
    fn a_missing_directory_is_an_io_error_naming_the_lock_file() {
        let url = DatabaseUrl::Sqlite {
            path: "/nonexistent-scaleset-dir/db.sqlite".to_owned(),
        };
        match WriterLock::acquire(&url) {
            Err(e @ WriterLockError::Io { .. }) => {
                assert!(
                    e.to_string()
                        .contains("/nonexistent-scaleset-dir/db.sqlite.worker-lock")
                );
            }
            other => panic!("expected Io, got {other:?}"),
        }
    }
}
