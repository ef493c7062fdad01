//! Connections: the [`DbConnection`] enum over both backends, the r2d2 [`Connector`] that
//! opens and configures them (SQLite pragmas per connection), and the embedded migrations.

use std::time::Duration;

use diesel::connection::SimpleConnection as _;
use diesel::r2d2::R2D2Connection as _;
use diesel::{Connection as _, PgConnection, RunQueryDsl as _, SqliteConnection};
use diesel_migrations::{EmbeddedMigrations, MigrationHarness as _, embed_migrations};

use crate::error::{Error, Result};
use crate::options::{DatabaseUrl, SqliteSync};

const SQLITE_MIGRATIONS: EmbeddedMigrations = embed_migrations!("migrations/sqlite");
const POSTGRES_MIGRATIONS: EmbeddedMigrations = embed_migrations!("migrations/postgres");

/// Key of the PostgreSQL advisory lock held while migrating, so that workers starting
/// together do not race to apply the same migration ("scaleset" in ASCII).
const MIGRATION_LOCK: i64 = 0x7363_616c_6573_6574;

/// A connection to either backend; queries written once run on both.
#[derive(diesel::MultiConnection)]
pub(crate) enum DbConnection {
    /// PostgreSQL.
    Postgres(PgConnection),
    /// SQLite.
    Sqlite(SqliteConnection),
}

/// Opens and configures connections for the pool.
#[derive(Debug, Clone)]
pub(crate) struct Connector {
    url: DatabaseUrl,
    busy_timeout: Duration,
    sync: SqliteSync,
}

impl Connector {
    pub(crate) fn new(url: DatabaseUrl, busy_timeout: Duration, sync: SqliteSync) -> Self {
        Self {
            url,
            busy_timeout,
            sync,
        }
    }

    /// Opens one configured connection.
    #[allow(
        clippy::disallowed_methods,
        reason = "SQLite's journal-mode switch is retried until busy_timeout: it gives no handle to wait on"
    )]
    pub(crate) fn connect(&self) -> Result<DbConnection> {
        match &self.url {
            DatabaseUrl::Sqlite { path } => {
                let connect_error = |source| Error::Connect {
                    backend: "sqlite",
                    target: path.clone(),
                    source,
                };
                let mut conn = SqliteConnection::establish(path).map_err(connect_error)?;
                // busy_timeout first, so that switching to WAL waits for other connections.
                // synchronous: see `SqliteSync` (NORMAL survives a process crash, FULL also
                // power loss).
                let pragmas = format!(
                    "PRAGMA busy_timeout = {}; PRAGMA foreign_keys = ON; \
                     PRAGMA journal_mode = WAL; PRAGMA synchronous = {};",
                    self.busy_timeout.as_millis(),
                    self.sync.as_str()
                );
                // Switching a new file to WAL can answer "database is locked" at once, without
                // waiting on busy_timeout, while another process switches it too (SQLite does
                // not wait where waiting could deadlock): processes starting together on a
                // fresh file then failed. Retried until busy_timeout, which bounds it.
                let deadline = std::time::Instant::now() + self.busy_timeout;
                loop {
                    match conn.batch_execute(&pragmas) {
                        Ok(()) => break,
                        Err(e) if is_locked(&e) && std::time::Instant::now() < deadline => {
                            std::thread::sleep(Duration::from_millis(10));
                        }
                        Err(e) => {
                            return Err(connect_error(
                                diesel::ConnectionError::CouldntSetupConfiguration(e),
                            ));
                        }
                    }
                }
                Ok(DbConnection::Sqlite(conn))
            }
            DatabaseUrl::Postgres { url } => PgConnection::establish(url)
                .map(DbConnection::Postgres)
                .map_err(|source| Error::Connect {
                    backend: "postgres",
                    target: self.url.redacted(),
                    source,
                }),
        }
    }
}

/// SQLite's `SQLITE_BUSY` ("database is locked"), as diesel reports it.
fn is_locked(error: &diesel::result::Error) -> bool {
    matches!(error, diesel::result::Error::DatabaseError(_, info) if info.message().contains("database is locked"))
}

impl diesel::r2d2::ManageConnection for Connector {
    type Connection = DbConnection;
    type Error = Error;

    fn connect(&self) -> Result<DbConnection> {
        Self::connect(self)
    }

    fn is_valid(&self, conn: &mut DbConnection) -> Result<()> {
        conn.ping().map_err(Error::backend("ping"))
    }

    fn has_broken(&self, conn: &mut DbConnection) -> bool {
        conn.is_broken()
    }
}

/// Logs pool connection failures (the caller gets the timeout error).
#[derive(Debug)]
pub(crate) struct LogErrors;

impl diesel::r2d2::HandleError<Error> for LogErrors {
    fn handle_error(&self, error: Error) {
        tracing::warn!(error = %error, "database connection failed");
    }
}

/// Applies the embedded migrations that are not applied yet.
pub(crate) fn migrate(conn: &mut DbConnection) -> Result<()> {
    match conn {
        DbConnection::Sqlite(c) => c
            .immediate_transaction(|c| c.run_pending_migrations(SQLITE_MIGRATIONS).map(|_| ()))
            .map_err(|source| Error::Migration {
                backend: "sqlite",
                source,
            }),
        DbConnection::Postgres(c) => {
            diesel::sql_query(format!("SELECT pg_advisory_lock({MIGRATION_LOCK})"))
                .execute(c)
                .map_err(Error::backend("lock for migration"))?;
            let applied = c
                .run_pending_migrations(POSTGRES_MIGRATIONS)
                .map(|_| ())
                .map_err(|source| Error::Migration {
                    backend: "postgres",
                    source,
                });
            let unlocked =
                diesel::sql_query(format!("SELECT pg_advisory_unlock({MIGRATION_LOCK})"))
                    .execute(c)
                    .map_err(Error::backend("unlock after migration"));
            applied.and(unlocked.map(|_| ()))
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use diesel::migration::{Migration as _, MigrationSource};

    use super::*;

    /// diesel keys a migration by the version before its name: two directories with one
    /// version are one migration, and the other is never applied (two branches once both
    /// added `2026-12-03-000000_*`, and the second table was missing).
    fn versions_are_unique(migrations: &EmbeddedMigrations) {
        let all = MigrationSource::<diesel::sqlite::Sqlite>::migrations(migrations)
            .expect("embedded migrations");
        let mut seen = BTreeSet::new();
        for migration in &all {
            let version = migration.name().version().to_string();
            assert!(
                seen.insert(version.clone()),
                "migration version {version} is used twice"
            );
        }
        assert!(all.len() >= 3, "the migrations were not found");
    }

    fn synchronous_of(sync: SqliteSync) -> i32 {
        #[derive(diesel::QueryableByName)]
        struct Mode {
            #[diesel(sql_type = diesel::sql_types::Integer)]
            synchronous: i32,
        }
        let dir = tempfile::tempdir().expect("temporary directory");
        let path = dir.path().join("sync.db").display().to_string();
        let connector = Connector::new(DatabaseUrl::Sqlite { path }, Duration::from_secs(1), sync);
        let DbConnection::Sqlite(mut conn) = connector.connect().expect("connect") else {
            panic!("an SQLite URL opened another backend");
        };
        diesel::sql_query("PRAGMA synchronous")
            .get_result::<Mode>(&mut conn)
            .expect("read the pragma")
            .synchronous
    }

    /// Every pooled connection runs with the configured mode (SQLite's own default is FULL,
    /// so a connection that skipped the pragma would show 2 for NORMAL).
    #[test]
    fn each_sqlite_connection_sets_the_configured_synchronous_mode() {
        assert_eq!(synchronous_of(SqliteSync::Normal), 1, "NORMAL");
        assert_eq!(synchronous_of(SqliteSync::Full), 2, "FULL");
        assert_eq!(SqliteSync::default(), SqliteSync::Normal);
    }

    #[test]
    fn every_migration_has_its_own_version() {
        versions_are_unique(&SQLITE_MIGRATIONS);
        versions_are_unique(&POSTGRES_MIGRATIONS);
    }
}
