//! The store suite's helpers over the workspace's one database harness
//! (`scaleset_store::test_util`): rows, leases, raw SQL and held transactions.

use std::time::Duration;

use diesel::{Connection as _, PgConnection, RunQueryDsl as _};
use scaleset_store::DatabaseUrl;

pub(crate) use scaleset_store::backend_tests as store_tests;
pub(crate) use scaleset_store::test_util::{Backend, PG_VAR, REQUIRE_PG_VAR, TestDb, test_key};

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

/// A spec named `name` in runner group `group`: the harness's [`test_util::spec`] with every
/// field a round trip could lose set away from its default (a resolved group id, labels, updates
/// on, an idle runner, a prefix, extra specs).
///
/// [`test_util::spec`]: scaleset_store::test_util::spec
pub(crate) fn spec(name: &str, group: &str) -> scaleset_store::ScaleSetSpec {
    let mut spec = scaleset_store::test_util::spec_with(name, |raw| {
        raw.runner_group = Some(group.to_owned());
        raw.labels = vec!["linux".to_owned(), "x64".to_owned()];
        raw.disable_update = Some(false);
        raw.image = Some("ubuntu-24.04".to_owned());
        raw.min_idle = Some(1);
        raw.max_runners = Some(2);
        raw.runner_prefix = Some(name.to_owned());
        raw.extra_specs = Some(serde_json::json!({"disk": 20}));
    });
    spec.set_runner_group_id(Some(1));
    spec
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
/// The record that this controller created GitHub scale set `github_id`, earned the only way
/// there is: the adoption machine's create path, here answered by an empty GitHub that then
/// returns the created set under `github_id`.
pub(crate) fn creation(github_id: i64) -> scaleset_store::Creation {
    use scaleset_adopt::{
        Command, ControllerId, Desired, Fact, GithubScaleSetId, Identity, Input, Machine, Outcome,
        Policy, RetryBounds, RunnerGroupId, ScaleSet, Step,
    };
    let input = Input {
        desired: Desired {
            name: "ours".into(),
            runner_group_id: RunnerGroupId(1),
            labels: vec!["linux".into()],
            disable_update: false,
        },
        known_id: None,
        policy: Policy::Owned,
        repair: false,
        probe: false,
        identity: Identity::new(
            ControllerId::parse("3f2a9c1e-77b0-4d4e-9a55-0123456789ab").expect("a uuid"),
        ),
        retry: RetryBounds::default(),
        takeover: None,
        await_session: false,
    };
    let mut created: Vec<ScaleSet> = Vec::new();
    let mut machine = Machine::new(input);
    let mut step = machine.start();
    for _ in 0..20 {
        step = match step {
            Step::Done(Outcome::Ready { rollback, .. }) => {
                let permit = rollback.permit().expect("a created scale set has a permit");
                return scaleset_store::Creation::from_permit(permit);
            }
            Step::Done(other) => panic!("the create path ended in {other:?}"),
            Step::Do(command) => {
                let fact = match command {
                    Command::Create(spec) => {
                        let set = ScaleSet {
                            id: GithubScaleSetId(github_id),
                            name: spec.name,
                            runner_group_id: Some(spec.runner_group_id),
                            labels: spec.labels,
                            disable_update: spec.disable_update,
                        };
                        created.push(set.clone());
                        Fact::ScaleSet(set)
                    }
                    Command::GetById { .. } => match created.first() {
                        Some(set) => Fact::ScaleSet(set.clone()),
                        None => Fact::NotFound,
                    },
                    Command::OpenSession { .. } => {
                        Fact::Opened(scaleset_adopt::SessionId("s".into()))
                    }
                    Command::CloseSession { .. } => Fact::Closed,
                    Command::Update { .. } => Fact::Updated,
                    _ => Fact::ScaleSets(created.clone()),
                };
                machine.next(fact).expect("the machine takes the answer")
            }
        };
    }
    panic!("the create path took more than 20 steps")
}

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

/// On PostgreSQL: polls until some session of the test database waits on a lock, and says
/// whether one did; stops early, with `false`, once `finished` says the operation expected to
/// wait has completed without waiting (then the test's assertion says what went wrong).
pub(crate) async fn lock_waiter_seen(db: &TestDb, finished: impl Fn() -> bool) -> bool {
    scaleset_eventually::eventually(
        "a session waits on a lock, or the operation finished",
        || async {
            if count_rows(db, LOCK_WAITERS).await > 0 {
                Some(true)
            } else {
                finished().then_some(false)
            }
        },
    )
    .await
}

/// The sessions of the test database that wait on a lock.
pub(crate) const LOCK_WAITERS: &str = "SELECT COUNT(*) AS n FROM pg_stat_activity \
     WHERE datname = current_database() AND wait_event_type = 'Lock'";
