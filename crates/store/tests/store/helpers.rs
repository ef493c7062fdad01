//! The per-backend harness: a fresh database per test (a temp SQLite file, or a PostgreSQL
//! database created through `SCALESET_TEST_DATABASE_URL` and dropped afterwards), and the
//! `store_tests!` macro that instantiates every test once per backend.

use std::sync::Arc;
use std::time::Duration;

use diesel::{Connection as _, PgConnection, RunQueryDsl as _};
use scaleset_store::{
    DatabaseUrl, DieselStore, EncryptionKey, Keyring, ManualClock, StoreOptions, Timestamp,
};

/// The variable naming the PostgreSQL server (an admin URL; tests create their own
/// databases through it).
pub(crate) const PG_VAR: &str = "SCALESET_TEST_DATABASE_URL";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Backend {
    Sqlite,
    Postgres,
}

/// One test's own database. Dropping it removes the database.
pub(crate) struct TestDb {
    pub(crate) backend: Backend,
    pub(crate) url: DatabaseUrl,
    pub(crate) clock: ManualClock,
    /// The SQLite file, when the backend is SQLite.
    pub(crate) sqlite_path: Option<std::path::PathBuf>,
    _dir: Option<tempfile::TempDir>,
    _pg: Option<PgDatabase>,
}

/// The key every test seals with unless it says otherwise.
pub(crate) fn test_key(id: &str, byte: u8) -> EncryptionKey {
    EncryptionKey::from_bytes(id, &[byte; 32]).expect("a 32-byte key")
}

impl TestDb {
    /// A fresh database, or `None` (after saying why) when the PostgreSQL half is skipped.
    pub(crate) async fn create(backend: Backend, test: &str) -> Option<Self> {
        let clock = ManualClock::new(Timestamp::from_unix_millis(1_800_000_000_000));
        match backend {
            Backend::Sqlite => {
                let dir = tempfile::tempdir().expect("temp dir");
                let path = dir.path().join("scaleset.db");
                let url = DatabaseUrl::parse(&format!("sqlite://{}", path.display()))
                    .expect("sqlite url");
                Some(Self {
                    backend,
                    url,
                    clock,
                    sqlite_path: Some(path),
                    _dir: Some(dir),
                    _pg: None,
                })
            }
            Backend::Postgres => {
                let Some(admin) = std::env::var_os(PG_VAR) else {
                    skip_postgres(test);
                    return None;
                };
                let admin = admin
                    .into_string()
                    .expect("SCALESET_TEST_DATABASE_URL is UTF-8");
                let pg = tokio::task::spawn_blocking(move || PgDatabase::create(&admin))
                    .await
                    .expect("create database task");
                let url = DatabaseUrl::parse(&pg.url).expect("postgres url");
                Some(Self {
                    backend,
                    url,
                    clock,
                    sqlite_path: None,
                    _dir: None,
                    _pg: Some(pg),
                })
            }
        }
    }

    /// Options with the test key, the manual clock and short timeouts.
    pub(crate) fn options(&self) -> StoreOptions {
        self.options_with(Keyring::new(test_key("k1", 1)))
    }

    pub(crate) fn options_with(&self, keyring: Keyring) -> StoreOptions {
        StoreOptions::new(self.url.clone(), keyring)
            .pool_size(4)
            .busy_timeout(Duration::from_secs(20))
            .connect_timeout(Duration::from_secs(20))
            .clock(Arc::new(self.clock.clone()))
    }

    /// Opens a store (its own pool: a second call stands for a second process).
    pub(crate) async fn open(&self) -> DieselStore {
        DieselStore::open(self.options())
            .await
            .expect("open the store")
    }
}

/// The variable that turns a skipped PostgreSQL half into a failure (`.ci/run` sets it), so a CI
/// that lost its database variable cannot pass with half the suite silently not run.
pub(crate) const REQUIRE_PG_VAR: &str = "SCALESET_REQUIRE_POSTGRES";

/// Says, once per test binary and past libtest's output capture, that the PostgreSQL half is
/// skipped; panics instead when [`REQUIRE_PG_VAR`] is `1`.
fn skip_postgres(test: &str) {
    use std::io::Write as _;
    static SAID: std::sync::Once = std::sync::Once::new();
    if std::env::var_os(REQUIRE_PG_VAR).is_some_and(|v| v == "1") {
        panic!(
            "{test}: {REQUIRE_PG_VAR}=1 but {PG_VAR} is unset, so the PostgreSQL half cannot run; \
             set {PG_VAR} (e.g. postgres://postgres@127.0.0.1:5432/test)"
        );
    }
    SAID.call_once(|| {
        // Written to the process's stderr directly: `eprintln!` inside a test is captured and
        // shown only for failures, and a skip must be seen when the suite passes.
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED: the PostgreSQL half of the store tests (they pass without running): {PG_VAR} \
             is unset; set it to e.g. postgres://postgres@127.0.0.1:5432/test to run them (CI does)"
        );
    });
}

/// A PostgreSQL database made for one test, dropped (with any connections left) on drop,
/// also when the test panics.
struct PgDatabase {
    admin: String,
    name: String,
    url: String,
}

impl PgDatabase {
    fn create(admin: &str) -> Self {
        let shown = DatabaseUrl::parse(admin).map_or_else(|_| admin.to_owned(), |u| u.redacted());
        let mut conn = PgConnection::establish(admin).unwrap_or_else(|e| {
            panic!(
                "{PG_VAR} is set but PostgreSQL at {shown} is unreachable: {e}\n\
                 start PostgreSQL there, or unset {PG_VAR} to skip the PostgreSQL half"
            )
        });
        let name = format!("scaleset_test_{}", uuid::Uuid::new_v4().simple());
        diesel::sql_query(format!("CREATE DATABASE {name}"))
            .execute(&mut conn)
            .unwrap_or_else(|e| panic!("cannot create test database {name}: {e}"));
        let mut url = url::Url::parse(admin).expect("SCALESET_TEST_DATABASE_URL is a URL");
        url.set_path(&format!("/{name}"));
        Self {
            admin: admin.to_owned(),
            name,
            url: url.to_string(),
        }
    }
}

impl Drop for PgDatabase {
    fn drop(&mut self) {
        let dropped = PgConnection::establish(&self.admin).and_then(|mut conn| {
            diesel::sql_query(format!(
                "DROP DATABASE IF EXISTS {} WITH (FORCE)",
                self.name
            ))
            .execute(&mut conn)
            .map_err(|e| diesel::ConnectionError::BadConnection(e.to_string()))
        });
        if let Err(e) = dropped {
            eprintln!("could not drop test database {}: {e}", self.name);
        }
    }
}

/// Runs `test` against a fresh database of `backend` (or reports the skip).
pub(crate) async fn run<F, Fut>(backend: Backend, name: &str, test: F)
where
    F: FnOnce(TestDb) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    if let Some(db) = TestDb::create(backend, name).await {
        test(db).await;
    }
}

/// Declares `mod <test> { sqlite(), postgres() }` for each named `async fn <test>(TestDb)`
/// in the calling module.
macro_rules! store_tests {
    ($($name:ident),+ $(,)?) => {
        $(
            mod $name {
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn sqlite() {
                    $crate::helpers::run($crate::helpers::Backend::Sqlite, stringify!($name), super::$name).await;
                }

                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn postgres() {
                    $crate::helpers::run($crate::helpers::Backend::Postgres, stringify!($name), super::$name).await;
                }
            }
        )+
    };
}
pub(crate) use store_tests;

/// A PAT credential named `name`.
pub(crate) fn pat(name: &str, token: &str) -> scaleset_store::NewCredentials {
    scaleset_store::NewCredentials {
        name: name.to_owned(),
        endpoint: scaleset_store::Endpoint::github_com(),
        auth: scaleset_store::Auth::Pat {
            token: scaleset_store::SecretString::from(token),
        },
    }
}

/// A spec named `name` in runner group `group`.
pub(crate) fn spec(name: &str, group: &str) -> scaleset_store::ScaleSetSpec {
    scaleset_store::ScaleSetSpec {
        name: name.to_owned(),
        runner_group: scaleset_store::RunnerGroup {
            name: group.to_owned(),
            id: Some(1),
        },
        labels: vec!["linux".to_owned(), "x64".to_owned()],
        disable_update: false,
        provider: "fake".to_owned(),
        image: "ubuntu-24.04".to_owned(),
        flavor: "small".to_owned(),
        min_idle: 1,
        max_runners: 0,
        bootstrap_timeout: Duration::from_secs(600),
        runner_prefix: name.to_owned(),
        extra_specs: serde_json::json!({"disk": 20}),
        enabled: true,
        adoption_policy: scaleset_store::AdoptionPolicy::Owned,
        repair: false,
    }
}

/// Credentials, an organization and one scale set `name` in group `Default`.
pub(crate) async fn scale_set(
    store: &dyn scaleset_store::Store,
    name: &str,
) -> scaleset_store::ScaleSet {
    let credentials = store
        .create_credentials(pat(&format!("creds-{name}"), "ghp_fixture"))
        .await
        .expect("create credentials");
    let entity = store
        .create_entity(scaleset_store::NewEntity {
            kind: scaleset_store::EntityKind::Organization {
                name: format!("org-{name}"),
            },
            credentials_id: credentials.id,
        })
        .await
        .expect("create entity");
    store
        .create_scale_set(scaleset_store::NewScaleSet {
            entity_id: entity.id,
            spec: spec(name, "Default"),
        })
        .await
        .expect("create scale set")
}

/// Takes the lease of `scale_set` for `holder`, which must succeed.
pub(crate) async fn lease(
    store: &dyn scaleset_store::Store,
    scale_set: scaleset_store::ScaleSetId,
    holder: &str,
) -> scaleset_store::Lease {
    match store
        .acquire_lease(scale_set, holder, Duration::from_secs(30))
        .await
        .expect("acquire lease")
    {
        scaleset_store::Acquisition::Acquired(lease) => lease,
        other => panic!("expected to acquire the lease, got {other:?}"),
    }
}

/// Runs raw SQL on the test database (standing for a hand edit or a newer version), through
/// a connection of its own.
pub(crate) async fn raw_sql(db: &TestDb, sql: &str) {
    let sql = sql.to_owned();
    let url = db.url.clone();
    tokio::task::spawn_blocking(move || match &url {
        DatabaseUrl::Sqlite { path } => {
            let mut conn = diesel::SqliteConnection::establish(path).expect("open sqlite");
            diesel::sql_query(&sql).execute(&mut conn).expect("raw sql");
        }
        DatabaseUrl::Postgres { url } => {
            let mut conn = PgConnection::establish(url).expect("connect postgres");
            diesel::sql_query(&sql).execute(&mut conn).expect("raw sql");
        }
        other => panic!("unexpected database url {other}"),
    })
    .await
    .expect("raw sql task");
}

#[derive(diesel::QueryableByName)]
struct Count {
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    n: i64,
}

/// Runs a `SELECT COUNT(*) AS n …` on the test database through a connection of its own.
pub(crate) async fn count_rows(db: &TestDb, sql: &str) -> i64 {
    let sql = sql.to_owned();
    let url = db.url.clone();
    tokio::task::spawn_blocking(move || {
        let rows: Vec<Count> = match &url {
            DatabaseUrl::Sqlite { path } => {
                let mut conn = diesel::SqliteConnection::establish(path).expect("open sqlite");
                diesel::sql_query(&sql).load(&mut conn).expect("count")
            }
            DatabaseUrl::Postgres { url } => {
                let mut conn = PgConnection::establish(url).expect("connect postgres");
                diesel::sql_query(&sql).load(&mut conn).expect("count")
            }
            other => panic!("unexpected database url {other}"),
        };
        rows.first().map(|c| c.n).expect("one row")
    })
    .await
    .expect("count task")
}

/// Runs one SQL batch on a raw connection.
type RawExec = Box<dyn FnMut(&str) -> Result<(), String> + Send>;

/// A write transaction on a raw connection of its own, held open (with its locks) until
/// [`HeldTransaction::commit`]; dropped without commit, it rolls back. Stands for another
/// process caught in the middle of a write.
pub(crate) struct HeldTransaction {
    commit: std::sync::mpsc::Sender<()>,
    thread: std::thread::JoinHandle<Result<(), String>>,
}

impl HeldTransaction {
    /// Begins (`BEGIN IMMEDIATE` on SQLite) and runs `sql`; returns once `sql` ran.
    pub(crate) async fn begin(db: &TestDb, sql: &str) -> Self {
        let (ran_tx, ran_rx) = tokio::sync::oneshot::channel();
        let (commit, commit_rx) = std::sync::mpsc::channel::<()>();
        let (url, statement) = (db.url.clone(), sql.to_owned());
        let thread = std::thread::spawn(move || -> Result<(), String> {
            let mut conn: RawExec = match &url {
                DatabaseUrl::Sqlite { path } => {
                    let mut c =
                        diesel::SqliteConnection::establish(path).map_err(|e| e.to_string())?;
                    Box::new(move |sql| {
                        diesel::connection::SimpleConnection::batch_execute(&mut c, sql)
                            .map_err(|e| e.to_string())
                    })
                }
                DatabaseUrl::Postgres { url } => {
                    let mut c = PgConnection::establish(url).map_err(|e| e.to_string())?;
                    Box::new(move |sql| {
                        diesel::connection::SimpleConnection::batch_execute(&mut c, sql)
                            .map_err(|e| e.to_string())
                    })
                }
                other => return Err(format!("unexpected database url {other}")),
            };
            let begin = if matches!(url, DatabaseUrl::Sqlite { .. }) {
                "BEGIN IMMEDIATE"
            } else {
                "BEGIN"
            };
            let ran = conn(begin).and_then(|()| conn(&statement));
            let failed = ran.is_err();
            let _ = ran_tx.send(ran);
            if failed {
                return Ok(());
            }
            // No commit signal (the test failed and dropped us): drop the connection, which
            // rolls back.
            match commit_rx.recv() {
                Ok(()) => conn("COMMIT"),
                Err(_) => Ok(()),
            }
        });
        let ran = ran_rx.await.expect("held transaction thread");
        if let Err(e) = ran {
            panic!("held transaction failed to run {sql:?}: {e}");
        }
        Self { commit, thread }
    }

    /// Commits, releasing the locks.
    pub(crate) async fn commit(self) {
        self.commit.send(()).expect("held transaction thread alive");
        let thread = self.thread;
        let committed = tokio::task::spawn_blocking(move || thread.join().expect("no panic"))
            .await
            .expect("join task");
        assert_eq!(committed, Ok(()), "the held transaction commits");
    }
}

/// On PostgreSQL: polls (bounded, about ten seconds) until some session of the test database
/// waits on a lock, and says whether one did; stops early, with `false`, once `finished`
/// says the operation expected to wait has completed without waiting.
pub(crate) async fn lock_waiter_seen(db: &TestDb, finished: impl Fn() -> bool) -> bool {
    let sql = "SELECT COUNT(*) AS n FROM pg_stat_activity \
               WHERE datname = current_database() AND wait_event_type = 'Lock'";
    for _ in 0..500 {
        if count_rows(db, sql).await > 0 {
            return true;
        }
        if finished() {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    false
}
