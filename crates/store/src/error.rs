//! The store's one error type, and the predicates callers branch on.

use std::time::Duration;

/// Everything a store operation can fail with.
///
/// Callers branch on the predicates ([`Error::is_not_found`], [`Error::is_conflict`],
/// [`Error::is_stale`], [`Error::is_lease_lost`]) or on [`Error::class`], never on the message.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The row asked for does not exist.
    #[error("{entity} {key} not found")]
    NotFound {
        /// The kind of row (`"scale set"`, `"credentials"`, …).
        entity: &'static str,
        /// The key that was looked up.
        key: String,
    },
    /// A uniqueness or reference constraint refused the write (a duplicate name, or a row
    /// still referenced by others).
    #[error("{entity} conflicts with an existing row: {detail}")]
    Conflict {
        /// The kind of row written.
        entity: &'static str,
        /// What the database reported (constraint and columns).
        detail: String,
    },
    /// Optimistic concurrency: the row changed since it was read. Nothing was written;
    /// re-read and retry.
    #[error(
        "scale set {id} changed since it was read (expected generation {expected}); re-read and retry"
    )]
    Stale {
        /// The scale set's id.
        id: String,
        /// The generation the caller read.
        expected: i64,
    },
    /// The fencing token carried by a write is no longer the lease's current token: another
    /// holder took the lease over. Stop serving the scale set.
    #[error(
        "lease on scale set {scale_set} lost: token {token} held by {holder} is no longer current"
    )]
    LeaseLost {
        /// The scale set whose lease was lost.
        scale_set: String,
        /// The holder named in the stale lease.
        holder: String,
        /// The stale fencing token.
        token: i64,
    },
    /// An instance status move that the transition table forbids.
    #[error("instance {instance} cannot move from {from} to {to}")]
    InvalidTransition {
        /// The instance name.
        instance: String,
        /// Its current status.
        from: crate::InstanceStatus,
        /// The status asked for.
        to: crate::InstanceStatus,
    },
    /// The database belongs to another controller: refuse to start.
    #[error(
        "the database belongs to controller {stored}, but this controller is configured as \
         {configured}; point it at its own database or set controller_id = \"{stored}\""
    )]
    ControllerMismatch {
        /// The controller id recorded in the database.
        stored: uuid::Uuid,
        /// The controller id from the configuration.
        configured: uuid::Uuid,
    },
    /// Encrypting or decrypting a secret failed (wrong or missing key, tampered ciphertext).
    #[error("cannot {operation} {what}: {reason}")]
    Crypto {
        /// `"encrypt"` or `"decrypt"`.
        operation: &'static str,
        /// Which secret (e.g. `credentials "main" secret`).
        what: String,
        /// Why, and what to do.
        reason: String,
    },
    /// A row holds a value this version cannot read (unknown enum text, bad JSON, a
    /// negative count). The database was edited by hand or by a newer version.
    #[error("corrupt row in {table} ({key}), column {column}: {reason}")]
    Corrupt {
        /// The table.
        table: &'static str,
        /// The row's key.
        key: String,
        /// The column.
        column: &'static str,
        /// What is wrong with the value.
        reason: String,
    },
    /// The caller passed a value the store cannot hold (e.g. a count above `i64::MAX`).
    #[error("invalid {field}: {reason}")]
    Invalid {
        /// The field.
        field: &'static str,
        /// Why it is refused.
        reason: String,
    },
    /// The configuration for the store is unusable (e.g. an unknown URL scheme).
    #[error("invalid database configuration: {reason}")]
    Config {
        /// What is wrong and the accepted forms.
        reason: String,
    },
    /// Applying the embedded migrations failed.
    #[error("cannot migrate the {backend} database")]
    Migration {
        /// `"sqlite"` or `"postgres"`.
        backend: &'static str,
        /// The migration harness error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// Connecting to the database failed.
    #[error("cannot connect to the {backend} database {target}")]
    Connect {
        /// `"sqlite"` or `"postgres"`.
        backend: &'static str,
        /// The path or the URL with any password removed.
        target: String,
        /// The driver's error.
        #[source]
        source: diesel::ConnectionError,
    },
    /// No pooled connection became free in time.
    #[error("no database connection available within {timeout:?}")]
    Pool {
        /// The pool's checkout timeout.
        timeout: Duration,
        /// The pool's error.
        #[source]
        source: diesel::r2d2::PoolError,
    },
    /// Any other database error.
    #[error("database error during {operation}")]
    Backend {
        /// What the store was doing.
        operation: &'static str,
        /// The driver's error.
        #[source]
        source: diesel::result::Error,
    },
    /// The database refuses writes: its disk is full (SQLite's "database or disk is full",
    /// PostgreSQL's `disk_full`) or it is read-only (PostgreSQL's `read_only_sql_transaction`,
    /// e.g. a standby after a failover went wrong). An outage the operator ends by freeing
    /// space (or making the database writable); nothing was written, and the same call succeeds
    /// once it is over.
    #[error(
        "the database {database} refuses writes ({operation}): its disk is full or it is \
         read-only; free space on the database's disk (PostgreSQL: or point the URL at a \
         writable primary), and writes resume without a restart"
    )]
    Unwritable {
        /// The database, password redacted.
        database: String,
        /// What the store was doing.
        operation: &'static str,
        /// The driver's error.
        #[source]
        source: diesel::result::Error,
    },
    /// The blocking task running the database call panicked or was cancelled.
    #[error("the database task for {operation} did not complete")]
    Task {
        /// What the store was doing.
        operation: &'static str,
        /// The join error.
        #[source]
        source: tokio::task::JoinError,
    },
}

/// How the caller should treat an error (the driver's policy input).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorClass {
    /// Transient: retry with backoff (pool exhaustion, a dropped connection, a stale read).
    Retryable,
    /// The request is refused as it stands (not found, conflict, invalid move, lost lease).
    Refusal,
    /// Operator action is needed (wrong database, wrong key, corrupt rows, bad config).
    Fatal,
}

impl Error {
    /// The row does not exist.
    pub fn is_not_found(&self) -> bool {
        matches!(self, Self::NotFound { .. })
    }

    /// A uniqueness or reference constraint refused the write.
    pub fn is_conflict(&self) -> bool {
        matches!(self, Self::Conflict { .. })
    }

    /// The generation did not match: re-read and retry.
    pub fn is_stale(&self) -> bool {
        matches!(self, Self::Stale { .. })
    }

    /// The caller's lease is gone: stop serving the scale set.
    pub fn is_lease_lost(&self) -> bool {
        matches!(self, Self::LeaseLost { .. })
    }

    /// A secret could not be opened: the key that sealed it is missing or another one under
    /// its id, or the ciphertext was tampered with.
    pub fn is_crypto(&self) -> bool {
        matches!(self, Self::Crypto { .. })
    }

    /// The database refuses writes (a full disk, a read-only database): an outage, not a bug
    /// ([`Error::Unwritable`]).
    pub fn is_unwritable(&self) -> bool {
        matches!(self, Self::Unwritable { .. })
    }

    /// The classification the driver uses for retry policy.
    pub fn class(&self) -> ErrorClass {
        match self {
            Self::Stale { .. }
            | Self::Pool { .. }
            | Self::Task { .. }
            | Self::Unwritable { .. } => ErrorClass::Retryable,
            Self::Backend { source, .. } => match source {
                diesel::result::Error::DatabaseError(
                    diesel::result::DatabaseErrorKind::SerializationFailure
                    | diesel::result::DatabaseErrorKind::ClosedConnection,
                    _,
                )
                | diesel::result::Error::BrokenTransactionManager => ErrorClass::Retryable,
                diesel::result::Error::DatabaseError(_, info)
                    if is_lock_contention(info.message()) =>
                {
                    ErrorClass::Retryable
                }
                _ => ErrorClass::Fatal,
            },
            Self::NotFound { .. }
            | Self::Conflict { .. }
            | Self::LeaseLost { .. }
            | Self::InvalidTransition { .. }
            | Self::Invalid { .. } => ErrorClass::Refusal,
            Self::ControllerMismatch { .. }
            | Self::Crypto { .. }
            | Self::Corrupt { .. }
            | Self::Config { .. }
            | Self::Migration { .. }
            | Self::Connect { .. } => ErrorClass::Fatal,
        }
    }

    /// Maps a diesel error from a write: constraint violations become [`Error::Conflict`].
    pub(crate) fn write(
        entity: &'static str,
        operation: &'static str,
    ) -> impl FnOnce(diesel::result::Error) -> Self {
        move |source| match source {
            diesel::result::Error::DatabaseError(
                kind @ (diesel::result::DatabaseErrorKind::UniqueViolation
                | diesel::result::DatabaseErrorKind::ForeignKeyViolation),
                info,
            ) => {
                let what = match kind {
                    diesel::result::DatabaseErrorKind::UniqueViolation => "duplicate",
                    _ => "reference",
                };
                let constraint = info
                    .constraint_name()
                    .map(|c| format!(" ({c})"))
                    .unwrap_or_default();
                Self::Conflict {
                    entity,
                    detail: format!("{what}{constraint}: {}", info.message()),
                }
            }
            source => Self::Backend { operation, source },
        }
    }

    /// Maps a diesel error from a read or a write without constraints of interest.
    pub(crate) fn backend(operation: &'static str) -> impl FnOnce(diesel::result::Error) -> Self {
        move |source| Self::Backend { operation, source }
    }
}

/// Whether a driver error says the database cannot take writes: PostgreSQL's
/// `read_only_sql_transaction` (SQLSTATE 25006, which diesel reports as its own kind), or a full
/// disk, which diesel reports as `DatabaseErrorKind::Unknown`, so by its message: SQLite's
/// `SQLITE_FULL` ("database or disk is full") and PostgreSQL's `disk_full` (SQLSTATE 53100,
/// "could not extend file …: No space left on device"; the server's English defaults, as for
/// [`is_lock_contention`]).
pub(crate) fn refuses_writes(source: &diesel::result::Error) -> bool {
    const MARKERS: [&str; 3] = [
        "database or disk is full",
        "no space left on device",
        "could not extend file",
    ];
    match source {
        diesel::result::Error::DatabaseError(
            diesel::result::DatabaseErrorKind::ReadOnlyTransaction,
            _,
        ) => true,
        diesel::result::Error::DatabaseError(_, info) => {
            let message = info.message().to_ascii_lowercase();
            MARKERS.iter().any(|marker| message.contains(marker))
        }
        _ => false,
    }
}

/// Whether a database error's message reports lock contention that a retry resolves: a
/// PostgreSQL deadlock victim (SQLSTATE 40P01) or lock timeout (55P03), or SQLite's busy/locked
/// after the busy timeout ran out.
///
/// diesel reports these as `DatabaseErrorKind::Unknown` and does not expose the SQLSTATE, so the
/// message is the only signal; this is the one place it is read. The PostgreSQL texts are the
/// server's English defaults (`lc_messages`); under another locale these stay `Fatal`, which is
/// the safe side (the operator sees them).
fn is_lock_contention(message: &str) -> bool {
    const MARKERS: [&str; 4] = [
        "deadlock detected",
        "could not obtain lock",
        "database is locked",
        "database is busy",
    ];
    let message = message.to_ascii_lowercase();
    MARKERS.iter().any(|marker| message.contains(marker))
}

/// The store's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The whole chain of an error on one line (`outer: cause: root cause`), for state reasons,
/// logs and API messages. The one copy: the API, control and the demo all use it (the store is
/// the lowest crate all three depend on).
pub fn chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod chain_tests {
    use super::chain;

    #[derive(Debug)]
    struct Layer(&'static str, Option<Box<Self>>);

    impl std::fmt::Display for Layer {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str(self.0)
        }
    }

    impl std::error::Error for Layer {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            self.1.as_deref().map(|l| l as _)
        }
    }

    #[test]
    fn a_chain_names_every_cause_outermost_first() {
        let root = Layer("connection refused", None);
        let middle = Layer("reading the scale set", Some(Box::new(root)));
        let outer = Layer("scale set task failed", Some(Box::new(middle)));
        assert_eq!(
            chain(&outer),
            "scale set task failed: reading the scale set: connection refused"
        );
        assert_eq!(chain(&Layer("alone", None)), "alone");
    }
}
