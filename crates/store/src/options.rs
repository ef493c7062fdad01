//! What opening a store needs: the validated [`DatabaseUrl`] and the [`StoreOptions`]
//! (keyring, pool size, busy timeout, retention, controller id, clock).

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use uuid::Uuid;

use crate::clock::{Clock, SystemClock};
use crate::error::{Error, Result};
use crate::keyring::Keyring;

/// Where the database is.
///
/// Accepted forms: `sqlite://<path>` or `sqlite:<path>` (so `sqlite:///var/lib/scaleset/db`
/// is absolute and `sqlite://scaleset.db` relative), and `postgres://…` or `postgresql://…`
/// (any libpq connection URL).
#[derive(Clone, PartialEq, Eq)]
pub enum DatabaseUrl {
    /// An SQLite database file (created if missing; its directory must exist).
    Sqlite {
        /// The file path.
        path: String,
    },
    /// A PostgreSQL connection URL.
    Postgres {
        /// The URL, as given to libpq.
        url: String,
    },
}

impl DatabaseUrl {
    /// Parses one of the accepted forms.
    pub fn parse(text: &str) -> Result<Self> {
        let text = text.trim();
        if let Some(rest) = text.strip_prefix("sqlite:") {
            let path = rest.strip_prefix("//").unwrap_or(rest);
            if path.is_empty() || path == ":memory:" {
                return Err(Error::Config {
                    reason: format!(
                        "{text:?} names no database file; use sqlite://<path> \
                         (in-memory databases are not shared between pooled connections)"
                    ),
                });
            }
            return Ok(Self::Sqlite {
                path: path.to_owned(),
            });
        }
        if text.starts_with("postgres://") || text.starts_with("postgresql://") {
            return Ok(Self::Postgres {
                url: text.to_owned(),
            });
        }
        Err(Error::Config {
            reason: format!(
                "unknown database URL {:?}; use sqlite://<path> or postgres://user@host:port/db",
                Self::redact(text)
            ),
        })
    }

    /// `"sqlite"` or `"postgres"`.
    pub fn backend(&self) -> &'static str {
        match self {
            Self::Sqlite { .. } => "sqlite",
            Self::Postgres { .. } => "postgres",
        }
    }

    /// The URL with any password replaced by `***`, for messages and logs.
    pub fn redacted(&self) -> String {
        match self {
            Self::Sqlite { path } => format!("sqlite://{path}"),
            Self::Postgres { url } => Self::redact(url),
        }
    }

    /// Replaces the password in the user info and in a `password=` query parameter (libpq
    /// accepts both) by `***`.
    fn redact(url: &str) -> String {
        let Some((scheme, rest)) = url.split_once("://") else {
            return url.to_owned();
        };
        let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
        let (authority, tail) = rest.split_at(authority_end);
        let authority = match authority.rsplit_once('@') {
            Some((userinfo, host)) => match userinfo.split_once(':') {
                Some((user, _password)) => format!("{user}:***@{host}"),
                None => authority.to_owned(),
            },
            None => authority.to_owned(),
        };
        let tail = match tail.split_once('?') {
            Some((path, query)) => {
                let params: Vec<&str> = query
                    .split('&')
                    .map(|param| match param.split_once('=') {
                        Some(("password", _)) => "password=***",
                        _ => param,
                    })
                    .collect();
                format!("{path}?{}", params.join("&"))
            }
            None => tail.to_owned(),
        };
        format!("{scheme}://{authority}{tail}")
    }
}

impl fmt::Debug for DatabaseUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.redacted())
    }
}

impl fmt::Display for DatabaseUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.redacted())
    }
}

impl FromStr for DatabaseUrl {
    type Err = Error;

    fn from_str(text: &str) -> Result<Self> {
        Self::parse(text)
    }
}

/// When an SQLite commit waits for the disk (the `synchronous` pragma, in WAL mode).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SqliteSync {
    /// `synchronous = NORMAL`, the default: a commit is in the WAL file when it returns, so it
    /// survives a crash of the process; only an OS crash or power loss can lose the last
    /// commits (the WAL is synced at checkpoints, not on every commit). Commits then cost
    /// no fsync each, which is what lets one worker keep up with 100 jobs a second
    /// (`docs/benchmarks.md`); the control loop converges after losing its last writes as it
    /// does after losing the whole database (`docs/operations.md`).
    #[default]
    Normal,
    /// `synchronous = FULL`: every commit waits for an fsync of the WAL, so it survives power
    /// loss too, at a few milliseconds per commit on a virtual disk.
    Full,
}

impl SqliteSync {
    /// The pragma's value.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Normal => "NORMAL",
            Self::Full => "FULL",
        }
    }
}

impl FromStr for SqliteSync {
    type Err = Error;

    fn from_str(text: &str) -> Result<Self> {
        match text.trim().to_ascii_lowercase().as_str() {
            "normal" => Ok(Self::Normal),
            "full" => Ok(Self::Full),
            _ => Err(Error::Config {
                reason: format!(
                    "unknown SQLite synchronous mode {text:?}; use \"normal\" (survives a process \
                     crash) or \"full\" (also survives power loss, slower)"
                ),
            }),
        }
    }
}

/// Everything [`crate::DieselStore::open`] needs. Defaults: pool size 8, busy timeout 5 s,
/// connect timeout 30 s, 200 events per scale set, no configured controller id, the system
/// clock, SQLite `synchronous = NORMAL` ([`SqliteSync`]).
#[derive(Debug, Clone)]
pub struct StoreOptions {
    pub(crate) url: DatabaseUrl,
    pub(crate) keyring: Arc<Keyring>,
    pub(crate) pool_size: u32,
    pub(crate) busy_timeout: Duration,
    pub(crate) connect_timeout: Duration,
    pub(crate) event_retention: u32,
    pub(crate) controller_id: Option<Uuid>,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) sqlite_sync: SqliteSync,
}

impl StoreOptions {
    /// Options for `url`, sealing secrets with `keyring`.
    pub fn new(url: DatabaseUrl, keyring: Keyring) -> Self {
        Self {
            url,
            keyring: Arc::new(keyring),
            pool_size: 8,
            busy_timeout: Duration::from_secs(5),
            connect_timeout: Duration::from_secs(30),
            event_retention: 200,
            controller_id: None,
            clock: Arc::new(SystemClock),
            sqlite_sync: SqliteSync::default(),
        }
    }

    /// The most pooled connections (at least 1). Each PostgreSQL worker process holds up to
    /// this many server connections.
    pub fn pool_size(mut self, size: u32) -> Self {
        self.pool_size = size.max(1);
        self
    }

    /// The most pooled connections, as [`StoreOptions::pool_size`] set them: at most this many
    /// store operations run at once, so the process's blocking pool needs little more
    /// (`scaleset_app::runtime`).
    pub fn configured_pool_size(&self) -> u32 {
        self.pool_size
    }

    /// SQLite: how long a write waits for another writer's lock before failing.
    pub fn busy_timeout(mut self, timeout: Duration) -> Self {
        self.busy_timeout = timeout;
        self
    }

    /// SQLite: when a commit waits for the disk (ignored for PostgreSQL).
    pub fn sqlite_synchronous(mut self, mode: SqliteSync) -> Self {
        self.sqlite_sync = mode;
        self
    }

    /// How long to wait for a pooled connection.
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// How many events each scale set keeps (at least 1).
    pub fn event_retention(mut self, events: u32) -> Self {
        self.event_retention = events.max(1);
        self
    }

    /// The configured controller id, checked against the database on open.
    pub fn controller_id(mut self, id: Option<Uuid>) -> Self {
        self.controller_id = id;
        self
    }

    /// The clock for timestamps and lease expiry.
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// SQLite's commit mode (see [`StoreOptions::sqlite_synchronous`]).
    pub fn sqlite_sync(&self) -> SqliteSync {
        self.sqlite_sync
    }

    /// The database URL.
    pub fn url(&self) -> &DatabaseUrl {
        &self.url
    }
}
