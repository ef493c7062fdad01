//! [`DieselStore`]: the one diesel implementation of every store trait, over SQLite or
//! PostgreSQL. Owns opening (connect, migrate, bind the controller id), running each
//! operation on a pooled connection in `spawn_blocking`, and the row conversions shared by
//! the per-aggregate impls in the submodules.
//!
//! A lookup by a unique key reads its row with `get_result`, not `first`: `first` adds a
//! bound `LIMIT ?`, and SQLite (3.53, built with STAT4) marks a statement whose LIMIT is a
//! bound parameter to be prepared again after every bind, so each such call parsed its SQL
//! anew despite diesel's statement cache: a fifth of the worker's instructions per job
//! (`docs/benchmarks.md`, issue 35: throughput). `first` stays only where the LIMIT is needed
//! (the newest of several rows), off the per-job path; a test below keeps it so.

mod api_token;
mod connection;
mod controller;
mod credentials;
mod entity;
mod event;
mod instance;
mod instance_access;
mod instance_job;
mod lease;
mod runner_downloads;
mod scale_set;
mod schema;
mod worker;

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use diesel::connection::{AnsiTransactionManager, TransactionManager};
use diesel::r2d2::Pool;
use uuid::Uuid;

use crate::clock::{Clock, Timestamp};
use crate::controller::{ControllerBinding, ControllerStore as _};
use crate::error::{Error, Result};
use crate::keyring::Keyring;
use crate::options::{DatabaseUrl, StoreOptions};

use self::connection::{Connector, DbConnection};

/// The diesel store over SQLite or PostgreSQL. Cheap to clone (clones share the pool).
///
/// Open it with [`DieselStore::open`]; it implements every store trait, so it can be held as
/// an `Arc<dyn` [`crate::Store`]`>`.
#[derive(Clone)]
pub struct DieselStore {
    pool: Pool<Connector>,
    ctx: Arc<Context>,
    binding: ControllerBinding,
}

/// What every operation may need besides the connection.
#[derive(Debug)]
struct Context {
    keyring: Arc<Keyring>,
    clock: Arc<dyn Clock>,
    event_retention: u32,
    pool_timeout: Duration,
    url: DatabaseUrl,
    /// Whether the last write the database refused has not been followed by one it took.
    unwritable: AtomicBool,
}

impl fmt::Debug for DieselStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DieselStore")
            .field("url", &self.ctx.url)
            .field("pool", &self.pool.state())
            .field("controller", &self.binding)
            .finish_non_exhaustive()
    }
}

impl DieselStore {
    /// Connects, applies the embedded migrations (idempotent; serialized between processes
    /// on PostgreSQL by an advisory lock), builds the pool and binds the controller id
    /// (see [`crate::ControllerStore::bind_controller`]): a database that belongs to another
    /// controller is [`Error::ControllerMismatch`].
    pub async fn open(options: StoreOptions) -> Result<Self> {
        let connector = Connector::new(
            options.url.clone(),
            options.busy_timeout,
            options.sqlite_sync,
        );
        let migrate_with = connector.clone();
        let span = tracing::Span::current();
        tokio::task::spawn_blocking(move || {
            let _entered = span.enter();
            let mut conn = migrate_with.connect()?;
            connection::migrate(&mut conn)
        })
        .await
        .map_err(|source| Error::Task {
            operation: "migrate",
            source,
        })??;

        // A PostgreSQL connection can die under the pool (a server restart, a dropped TCP
        // connection), so it is pinged on every check-out; an SQLite connection is a file
        // handle that cannot, and its ping was a statement of its own on every store call.
        let ping = !matches!(options.url, DatabaseUrl::Sqlite { .. });
        let pool = Pool::builder()
            .max_size(options.pool_size)
            .min_idle(Some(0))
            .connection_timeout(options.connect_timeout)
            .test_on_check_out(ping)
            .error_handler(Box::new(connection::LogErrors))
            .build_unchecked(connector);
        let mut store = Self {
            pool,
            ctx: Arc::new(Context {
                keyring: options.keyring,
                clock: options.clock,
                event_retention: options.event_retention,
                pool_timeout: options.connect_timeout,
                url: options.url,
                unwritable: AtomicBool::new(false),
            }),
            // Replaced below, before the store is returned.
            binding: ControllerBinding::Generated(Uuid::nil()),
        };
        let binding = store.bind_controller(options.controller_id).await?;
        match binding {
            ControllerBinding::Generated(id) => tracing::warn!(
                controller_id = %id,
                "no controller_id configured: generated one; pin it in the configuration"
            ),
            ControllerBinding::Stored(id) => tracing::warn!(
                controller_id = %id,
                "no controller_id configured: using the one in the database; pin it in the configuration"
            ),
            ControllerBinding::Matched(_) | ControllerBinding::Adopted(_) => {
                tracing::info!(controller_id = %binding.id(), "store opened");
            }
        }
        store.binding = binding;
        Ok(store)
    }

    /// How the controller id was bound when the store was opened.
    pub fn controller_binding(&self) -> ControllerBinding {
        self.binding
    }

    /// The database the store was opened on (password redacted when displayed).
    pub fn url(&self) -> &DatabaseUrl {
        &self.ctx.url
    }

    /// Runs `f` on a pooled connection in `spawn_blocking`, in a `store{operation}` span
    /// whose parent is the caller's span. A write the database refuses (a full disk, a
    /// read-only database) comes back as [`Error::Unwritable`], and is noted for
    /// [`crate::ControllerStore::check_writes`].
    async fn run<T, F>(&self, operation: &'static str, f: F) -> Result<T>
    where
        F: FnOnce(&mut DbConnection, &Context) -> Result<T> + Send + 'static,
        T: Send + 'static,
    {
        let pool = self.pool.clone();
        let ctx = Arc::clone(&self.ctx);
        let span = tracing::debug_span!("store", operation);
        let result = tokio::task::spawn_blocking(move || {
            let _entered = span.enter();
            let mut conn = pool.get().map_err(|source| Error::Pool {
                timeout: ctx.pool_timeout,
                source,
            })?;
            f(&mut conn, &ctx)
        })
        .await
        .map_err(|source| Error::Task { operation, source })?;
        match result {
            Err(Error::Backend { operation, source }) if crate::error::refuses_writes(&source) => {
                let error = Error::Unwritable {
                    database: self.ctx.url.redacted(),
                    operation,
                    source,
                };
                self.ctx.writes_refused(&error);
                Err(error)
            }
            result => result,
        }
    }
}

impl Context {
    fn now(&self) -> Timestamp {
        self.clock.now()
    }

    /// Notes a refused write; warns when writes start failing (once, not per write).
    fn writes_refused(&self, error: &Error) {
        if !self.unwritable.swap(true, Ordering::SeqCst) {
            tracing::warn!(
                database = %self.url,
                error = %crate::error::chain(error),
                "the database refuses writes: requests that write answer 503 and /readyz is not \
                 ready until a write succeeds again"
            );
        }
    }

    /// Notes a write the database took; says so when writes had been failing.
    fn writes_taken(&self) {
        if self.unwritable.swap(false, Ordering::SeqCst) {
            tracing::info!(database = %self.url, "the database takes writes again");
        }
    }

    /// Whether the last refused write has not been followed by a taken one.
    fn writes_failing(&self) -> bool {
        self.unwritable.load(Ordering::SeqCst)
    }
}

/// SQLite writers of this process take turns here before `BEGIN IMMEDIATE` (issue 35, the
/// throughput knee). SQLite runs one writer at a time, and a connection that finds the write
/// lock taken waits in SQLite's busy handler, which sleeps 1, 2, 5, 10, 15, 20, 25… ms between
/// tries however soon the lock is free: with the pool's connections writing at once, jobs
/// queued behind those sleeps. A writer waiting here wakes as soon as the one before it
/// commits. One SQLite store per process is the production case (the worker's SQLite lock);
/// stores of other files in one process (tests) share the turn, which costs them nothing but
/// order. Another process on the same file is still waited for by the busy timeout.
static SQLITE_WRITER: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Runs `f` in a write transaction: `BEGIN IMMEDIATE` on SQLite (the write lock is taken
/// up front, waiting up to the busy timeout, so two read-then-write transactions cannot
/// deadlock), a plain read-committed transaction on PostgreSQL.
fn write_transaction<T>(
    conn: &mut DbConnection,
    operation: &'static str,
    f: impl FnOnce(&mut DbConnection) -> Result<T>,
) -> Result<T> {
    // Poisoning says only that a writer panicked while it had the turn; the turn itself
    // (the mutex guards no data) is as good as ever.
    let _turn = matches!(conn, DbConnection::Sqlite(_)).then(|| {
        SQLITE_WRITER
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    });
    match conn {
        DbConnection::Sqlite(c) => {
            AnsiTransactionManager::begin_transaction_sql(c, "BEGIN IMMEDIATE")
        }
        DbConnection::Postgres(c) => AnsiTransactionManager::begin_transaction(c),
    }
    .map_err(Error::backend(operation))?;
    match f(conn) {
        Ok(value) => {
            match <DbConnection as diesel::Connection>::TransactionManager::commit_transaction(conn)
            {
                Ok(()) => Ok(value),
                Err(source) => {
                    // A failed commit may leave the transaction open; a failed rollback marks the
                    // connection broken and the pool discards it.
                    let _ = <DbConnection as diesel::Connection>::TransactionManager::rollback_transaction(conn);
                    Err(Error::Backend { operation, source })
                }
            }
        }
        Err(error) => {
            let _ = <DbConnection as diesel::Connection>::TransactionManager::rollback_transaction(
                conn,
            );
            Err(error)
        }
    }
}

/// Parses a stored UUID column.
fn parse_uuid(table: &'static str, key: &str, column: &'static str, text: &str) -> Result<Uuid> {
    Uuid::from_str(text).map_err(|e| Error::Corrupt {
        table,
        key: key.to_owned(),
        column,
        reason: format!("{text:?} is not a UUID: {e}"),
    })
}

/// Converts a stored count to `u32`.
fn count_from_db(table: &'static str, key: &str, column: &'static str, value: i64) -> Result<u32> {
    u32::try_from(value).map_err(|_| Error::Corrupt {
        table,
        key: key.to_owned(),
        column,
        reason: format!("{value} is not a count between 0 and {}", u32::MAX),
    })
}

/// Parses a stored enum column.
fn enum_from_db<T>(
    table: &'static str,
    key: &str,
    column: &'static str,
    text: &str,
    parse: impl FnOnce(&str) -> Option<T>,
) -> Result<T> {
    parse(text).ok_or_else(|| Error::Corrupt {
        table,
        key: key.to_owned(),
        column,
        reason: format!("unknown value {text:?} (written by a newer version, or edited by hand)"),
    })
}

/// Parses a stored JSON column.
fn json_from_db<T: serde::de::DeserializeOwned>(
    table: &'static str,
    key: &str,
    column: &'static str,
    text: &str,
) -> Result<T> {
    serde_json::from_str(text).map_err(|e| Error::Corrupt {
        table,
        key: key.to_owned(),
        column,
        reason: format!("invalid JSON: {e}"),
    })
}

/// Converts a duration to whole seconds for storage.
fn secs_to_db(field: &'static str, duration: Duration) -> Result<i64> {
    i64::try_from(duration.as_secs()).map_err(|_| Error::Invalid {
        field,
        reason: format!("{duration:?} is too long"),
    })
}

#[cfg(test)]
mod tests {
    /// The per-job and per-poll paths look rows up by unique key without a bound `LIMIT`
    /// (module documentation); `first` is allowed only where several rows may match.
    #[test]
    fn unique_lookups_bind_no_limit() {
        let files = [
            ("instance.rs", include_str!("database/instance.rs")),
            ("lease.rs", include_str!("database/lease.rs")),
            ("scale_set.rs", include_str!("database/scale_set.rs")),
            (
                "instance_access.rs",
                include_str!("database/instance_access.rs"),
            ),
            ("entity.rs", include_str!("database/entity.rs")),
            ("credentials.rs", include_str!("database/credentials.rs")),
            ("controller.rs", include_str!("database/controller.rs")),
            ("event.rs", include_str!("database/event.rs")),
        ];
        // Several rows may match these: the newest event, the oldest to keep, a token's row
        // among expired ones.
        let allowed = [("event.rs", 2), ("instance_access.rs", 1)];
        for (file, text) in files {
            let found = text
                .lines()
                .filter(|l| l.contains(".first(") || l.contains(".first::<"))
                .count();
            let limit = allowed
                .iter()
                .find(|(f, _)| *f == file)
                .map_or(0, |(_, n)| *n);
            assert!(
                found <= limit,
                "{file}: {found} `.first` lookups (at most {limit}); use `get_result` for a unique key"
            );
        }
    }
}
