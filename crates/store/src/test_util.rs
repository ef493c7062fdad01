//! The one database harness of scaleset's tests and benches (feature `test-util`, enabled by
//! the dev-dependencies of the crates that test against a store; normal builds do not compile
//! it): a fresh database per test (a temp SQLite file, or a PostgreSQL database created through
//! [`PG_VAR`] and dropped afterwards, also when the test panics), and [`backend_tests!`] that
//! instantiates each test once per backend.
//!
//! Without [`PG_VAR`] the PostgreSQL half of a test passes without running: it says so once per
//! test binary, past libtest's capture, and fails instead when [`REQUIRE_PG_VAR`] is `1` (as
//! `.ci/run` sets it), so a CI that lost its database cannot pass with half the suite not run.
//!
//! Panics are its error handling: it is test code, and a harness that cannot make its database
//! must fail the test that asked, naming what to fix.
//!
//! [`backend_tests!`]: crate::backend_tests

use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use diesel::{Connection as _, PgConnection, RunQueryDsl as _};

use crate::{
    AdoptionPolicy, Auth, CredentialsId, DatabaseUrl, DieselStore, EncryptionKey, Endpoint, Entity,
    EntityKind, Keyring, ManualClock, NewCredentials, NewEntity, ScaleSetSpec, SecretString, Store,
    StoreOptions, Timestamp,
};

/// The variable naming the PostgreSQL server (an admin URL; tests create their own databases
/// through it).
pub const PG_VAR: &str = "SCALESET_TEST_DATABASE_URL";

/// The variable that turns a skipped PostgreSQL half into a failure when it is `1`.
pub const REQUIRE_PG_VAR: &str = "SCALESET_REQUIRE_POSTGRES";

/// The database backend a test runs against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// A temp SQLite file.
    Sqlite,
    /// A database of its own on the server [`PG_VAR`] names.
    Postgres,
}

/// Credentials named `sim` for a simulator (or any GitHub Enterprise Server-shaped host) at
/// `base`, e.g. `http://127.0.0.1:8080`: the REST API under `/api/v3`, a PAT the simulator
/// accepts.
pub fn simulator_credentials(base: &str) -> NewCredentials {
    NewCredentials {
        name: "sim".into(),
        endpoint: Endpoint {
            base_url: base.to_owned(),
            api_base_url: format!("{base}/api/v3"),
            ca_bundle: None,
            system_trust: false,
        },
        auth: Auth::Pat {
            token: SecretString::from("ghp_simulator"),
        },
    }
}

/// The organization `name` reached with `credentials`.
pub fn organization(name: &str, credentials: CredentialsId) -> NewEntity {
    NewEntity {
        kind: EntityKind::Organization {
            name: name.to_owned(),
        },
        credentials_id: credentials,
    }
}

/// Stores `credentials` in `store`, then the organization `name` reached with them: the entity
/// that a test's or bench's scale sets are created under.
pub async fn create_organization(
    store: &dyn Store,
    name: &str,
    credentials: NewCredentials,
) -> Entity {
    let credentials = store
        .create_credentials(credentials)
        .await
        .expect("credentials");
    store
        .create_entity(organization(name, credentials.id))
        .await
        .expect("entity")
}

/// A scale set `name` for the fake provider (image `ubuntu`, flavor `small`): group `Default`
/// with no GitHub id yet, no labels, runner updates disabled, no idle runners, at most 10,
/// bootstrap timeout 10 minutes, enabled, owned, no repair. Tests, benches and examples that
/// need another value say it through the parser, e.g.
/// `spec_with("linux", |raw| raw.max_runners = Some(3))`, so what they rely on stands in them.
///
/// # Panics
///
/// When `name` is no scale-set name (test code: the test names its own scale sets).
pub fn spec(name: &str) -> ScaleSetSpec {
    spec_with(name, |_| {})
}

/// [`spec`] with `change` written over its raw form before it is parsed.
///
/// # Panics
///
/// When the changed spec breaks a rule of [`ScaleSetSpec::parse`], naming the problems.
pub fn spec_with(name: &str, change: impl FnOnce(&mut crate::RawScaleSetSpec)) -> ScaleSetSpec {
    let mut raw = crate::RawScaleSetSpec {
        name: Some(name.to_owned()),
        runner_group: Some("Default".to_owned()),
        disable_update: Some(true),
        provider: Some("fake".to_owned()),
        image: Some("ubuntu".to_owned()),
        flavor: Some("small".to_owned()),
        min_idle: Some(0),
        max_runners: Some(10),
        bootstrap_timeout: Some(Duration::from_secs(600)),
        enabled: Some(true),
        adoption_policy: Some(AdoptionPolicy::Owned),
        repair: Some(false),
        ..crate::RawScaleSetSpec::default()
    };
    change(&mut raw);
    ScaleSetSpec::parse(raw).unwrap_or_else(|problems| panic!("a test spec: {problems:?}"))
}

/// Changes `spec` through the parser ([`ScaleSetSpec::change`]).
///
/// # Panics
///
/// When the changed spec breaks a rule, naming the problems.
pub fn change_spec(spec: &mut ScaleSetSpec, change: impl FnOnce(&mut crate::RawScaleSetSpec)) {
    spec.change(change)
        .unwrap_or_else(|problems| panic!("a test spec change: {problems:?}"));
}

/// One spec every door must refuse, as a door's test feeds it: the fields of a valid base
/// spec (`name = "linux"`, `provider = "fake"`, `max_runners = 4`) with `overrides` written
/// over them, and the problems [`ScaleSetSpec::parse`] reports for it. Each door (the API's
/// create and update, plan/apply, the configuration file, its environment overrides) must
/// answer with exactly these problems.
#[derive(Debug, Clone)]
pub struct BadSpec {
    /// What is wrong, for assertion messages.
    pub what: &'static str,
    /// The fields written over the base spec, as JSON (strings, integers, arrays of strings).
    pub overrides: serde_json::Map<String, serde_json::Value>,
    /// The problems the one parser reports, in field order.
    pub problems: Vec<crate::SpecProblem>,
}

impl BadSpec {
    /// The whole spec as JSON: the base with the overrides written over it.
    pub fn fields(&self) -> serde_json::Map<String, serde_json::Value> {
        let mut fields = bad_spec_base();
        fields.extend(self.overrides.clone());
        fields
    }
}

fn bad_spec_base() -> serde_json::Map<String, serde_json::Value> {
    let serde_json::Value::Object(base) =
        serde_json::json!({"name": "linux", "provider": "fake", "max_runners": 4})
    else {
        unreachable!("an object literal")
    };
    base
}

/// The specs every door must refuse with the same problems (issue 29 item 9): path traversal
/// in the name and the runner prefix, a space, non-ASCII, 150 characters, a label with a
/// comma, labels that differ only in case, a foreign owner label, and counts out of range.
pub fn bad_specs() -> Vec<BadSpec> {
    let cases: Vec<(&'static str, serde_json::Value, &'static [&'static str])> = vec![
        (
            "a name that climbs directories",
            serde_json::json!({"name": "../../../escape"}),
            &["name"],
        ),
        (
            "a runner prefix that climbs directories",
            serde_json::json!({"runner_prefix": "../../../pfx"}),
            &["runner_prefix"],
        ),
        (
            "a name with a space",
            serde_json::json!({"name": "a b"}),
            &["name"],
        ),
        (
            "a name that is not ASCII",
            serde_json::json!({"name": "日本"}),
            &["name"],
        ),
        (
            "a 150-character name",
            serde_json::json!({"name": "a".repeat(150)}),
            &["name"],
        ),
        (
            "a label with a comma",
            serde_json::json!({"labels": ["a,b"]}),
            &["labels[0]"],
        ),
        (
            "labels that differ only in case",
            serde_json::json!({"labels": ["gpu", "GPU"]}),
            &["labels[1]"],
        ),
        (
            "a foreign owner label",
            serde_json::json!({"labels": ["linux", "scaleset-owner-0123456789abcdef0123456789abcdef"]}),
            &["labels[1]"],
        ),
        (
            "max_runners 0",
            serde_json::json!({"max_runners": 0}),
            &["max_runners"],
        ),
        (
            "max_runners above the limit",
            serde_json::json!({"max_runners": 20_000}),
            &["max_runners"],
        ),
        (
            "more idle runners than max_runners",
            serde_json::json!({"min_idle": 5}),
            &["min_idle"],
        ),
        (
            "several problems at once",
            serde_json::json!({"name": "a b", "labels": ["x", "X"], "max_runners": 0, "runner_prefix": "a/b"}),
            &["name", "labels[1]", "max_runners", "runner_prefix"],
        ),
    ];
    cases
        .into_iter()
        .map(|(what, overrides, fields)| {
            let serde_json::Value::Object(overrides) = overrides else {
                unreachable!("object literals")
            };
            let mut case = BadSpec {
                what,
                overrides,
                problems: Vec::new(),
            };
            case.problems = match ScaleSetSpec::parse(raw_spec(&case.fields())) {
                Ok(_) => panic!("bad spec {what:?} parses"),
                Err(problems) => problems,
            };
            let got: Vec<&str> = case.problems.iter().map(|p| p.field.as_str()).collect();
            assert_eq!(got, fields, "the problems of bad spec {what:?}");
            case
        })
        .collect()
}

/// A raw spec from JSON fields named as in the API and the configuration file.
fn raw_spec(fields: &serde_json::Map<String, serde_json::Value>) -> crate::RawScaleSetSpec {
    let text = |key: &str| fields.get(key).and_then(|v| v.as_str()).map(str::to_owned);
    crate::RawScaleSetSpec {
        name: text("name"),
        provider: text("provider"),
        runner_prefix: text("runner_prefix"),
        labels: fields
            .get("labels")
            .and_then(|v| v.as_array())
            .map(|a| {
                a.iter()
                    .filter_map(|l| l.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default(),
        max_runners: fields
            .get("max_runners")
            .and_then(serde_json::Value::as_i64),
        min_idle: fields.get("min_idle").and_then(serde_json::Value::as_i64),
        ..crate::RawScaleSetSpec::default()
    }
}

/// The key tests seal with unless they say otherwise.
pub fn test_key(id: &str, byte: u8) -> EncryptionKey {
    EncryptionKey::from_bytes(id, &[byte; 32]).expect("a 32-byte key")
}

/// One test's own database. Dropping it removes the database.
pub struct TestDb {
    /// Its backend.
    pub backend: Backend,
    /// Where it is.
    pub url: DatabaseUrl,
    /// A manual clock at a fixed start, used by [`TestDb::options`].
    pub clock: ManualClock,
    /// The SQLite file, when the backend is SQLite.
    pub sqlite_path: Option<PathBuf>,
    _dir: Option<tempfile::TempDir>,
    _pg: Option<PgDatabase>,
}

impl TestDb {
    /// A fresh database, or `None` (after saying why, see the module) when the PostgreSQL half
    /// is skipped.
    pub async fn create(backend: Backend, test: &str) -> Option<Self> {
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
                let admin = postgres_admin(test)?;
                let pg = tokio::task::spawn_blocking(move || PgDatabase::create(PG_VAR, &admin))
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

    /// Another fresh, empty database on the same backend (a wiped database).
    pub async fn another(&self, test: &str) -> Self {
        Self::create(self.backend, test)
            .await
            .expect("the backend of an existing database is available")
    }

    /// Options with [`test_key`] `k1`, the manual clock and short timeouts.
    pub fn options(&self) -> StoreOptions {
        self.options_with(Keyring::new(test_key("k1", 1)))
    }

    /// [`TestDb::options`] with another keyring.
    pub fn options_with(&self, keyring: Keyring) -> StoreOptions {
        StoreOptions::new(self.url.clone(), keyring)
            .pool_size(4)
            .busy_timeout(Duration::from_secs(20))
            .connect_timeout(Duration::from_secs(20))
            .clock(Arc::new(self.clock.clone()))
    }

    /// Opens a store (its own pool: a second call stands for a second process).
    pub async fn open(&self) -> DieselStore {
        DieselStore::open(self.options())
            .await
            .expect("open the store")
    }
}

/// Runs `test` against a fresh database of `backend` (or reports the skip).
pub async fn run<F, Fut>(backend: Backend, name: &str, test: F)
where
    F: FnOnce(TestDb) -> Fut,
    Fut: Future<Output = ()>,
{
    if let Some(db) = TestDb::create(backend, name).await {
        test(db).await;
    }
}

/// Runs `test` with `backend` when it is available (or reports the skip), for tests that make
/// their own databases.
pub async fn run_on_backend<F, Fut>(backend: Backend, name: &str, test: F)
where
    F: FnOnce(Backend) -> Fut,
    Fut: Future<Output = ()>,
{
    if TestDb::create(backend, name).await.is_some() {
        test(backend).await;
    }
}

/// Declares `mod <test> { sqlite(), postgres() }` (multi-threaded tokio tests) for each named
/// `async fn <test>(TestDb)` of the calling module; `run = path;` first names another runner
/// with [`run`]'s signature (e.g. [`run_on_backend`] for `async fn <test>(Backend)`).
#[macro_export]
macro_rules! backend_tests {
    (run = $run:path; $($name:ident),+ $(,)?) => {
        $(
            mod $name {
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn sqlite() {
                    $run($crate::test_util::Backend::Sqlite, stringify!($name), super::$name).await;
                }

                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn postgres() {
                    $run($crate::test_util::Backend::Postgres, stringify!($name), super::$name).await;
                }
            }
        )+
    };
    ($($name:ident),+ $(,)?) => {
        $crate::backend_tests!(run = $crate::test_util::run; $($name),+);
    };
}

/// The value of [`PG_VAR`], or `None` after [`skip_postgres`].
fn postgres_admin(test: &str) -> Option<String> {
    let Some(admin) = std::env::var_os(PG_VAR) else {
        skip_postgres(test);
        return None;
    };
    Some(
        admin
            .into_string()
            .expect("SCALESET_TEST_DATABASE_URL is UTF-8"),
    )
}

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
            "SKIPPED: the PostgreSQL half of these tests (they pass without running): {PG_VAR} \
             is unset; set it to e.g. postgres://postgres@127.0.0.1:5432/test to run them (CI does)"
        );
    });
}

/// A PostgreSQL database of one test's or bench's own, dropped (with any connections left) on
/// drop, also when the test panics.
pub struct PgDatabase {
    admin: String,
    name: String,
    /// Its URL.
    pub url: String,
}

impl PgDatabase {
    /// A database on the server [`PG_VAR`] names; `None` (after reporting the skip, or a panic
    /// when [`REQUIRE_PG_VAR`] is `1`) when the variable is unset. Blocking.
    pub fn for_test(test: &str) -> Option<Self> {
        postgres_admin(test).map(|admin| Self::create(PG_VAR, &admin))
    }

    /// A database on the server at `admin`, the value of the variable `var`. Blocking.
    pub fn create(var: &str, admin: &str) -> Self {
        let shown = DatabaseUrl::parse(admin).map_or_else(|_| admin.to_owned(), |u| u.redacted());
        let mut conn = PgConnection::establish(admin).unwrap_or_else(|e| {
            panic!(
                "{var} is set but PostgreSQL at {shown} is unreachable: {e}\n\
                 start PostgreSQL there, or unset {var} to skip the PostgreSQL half"
            )
        });
        let name = format!("scaleset_test_{}", uuid::Uuid::new_v4().simple());
        diesel::sql_query(format!("CREATE DATABASE {name}"))
            .execute(&mut conn)
            .unwrap_or_else(|e| panic!("cannot create test database {name}: {e}"));
        let mut url = url::Url::parse(admin).unwrap_or_else(|e| panic!("{var} is a URL: {e}"));
        url.set_path(&format!("/{name}"));
        Self {
            admin: admin.to_owned(),
            name,
            url: url.to_string(),
        }
    }

    /// Drops the database now, cutting every connection to it (a lost database server, or a
    /// bench's database held in a static that is never dropped).
    pub fn drop_now(&self) {
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

impl Drop for PgDatabase {
    fn drop(&mut self) {
        self.drop_now();
    }
}
