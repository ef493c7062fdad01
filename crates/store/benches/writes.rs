//! Store writes per second on SQLite and PostgreSQL (issue 18, measurement 5): the two writes a
//! listener and a scaler make most, a fenced message-cursor update and an instance status
//! transition, one at a time and from several threads at once (as many scale sets write
//! concurrently).
//!
//! ```sh
//! cargo bench -p scaleset-store --bench writes
//! SCALESET_BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/test cargo bench -p scaleset-store --bench writes
//! ```
//!
//! SQLite runs in a temporary file (WAL), once with the default `synchronous = NORMAL` (module
//! `sqlite`) and once with `synchronous = FULL` (`sqlite_full`: an fsync per commit). The
//! PostgreSQL half runs when `SCALESET_BENCH_DATABASE_URL` names a server: the bench creates
//! its own database there (`scaleset_bench_<uuid>`) and drops it at the end. Each benchmark
//! reports the time per write; writes per second is its inverse (per thread).

use std::sync::OnceLock;
use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
use std::time::Duration;

use scaleset_store::test_util::{self, PgDatabase};
use scaleset_store::{
    Acquisition, Auth, DatabaseUrl, DieselStore, EncryptionKey, Endpoint, InstanceStatus,
    InstanceStore, Keyring, Lease, LeaseStore, NewCredentials, NewInstance, NewScaleSet,
    ScaleSetSpec, ScaleSetStore, SecretString, SqliteSync, StoreOptions,
};

const PG_VAR: &str = "SCALESET_BENCH_DATABASE_URL";
/// Scale sets written to: one per bench thread, so the threads contend only in the database.
const SCALE_SETS: usize = 8;

fn main() {
    divan::main();
    if let Some(pg) = PG.get().and_then(Option::as_ref) {
        pg.drop_now();
    }
}

/// One backend, opened once, with a leased scale set per thread.
struct Bench {
    runtime: tokio::runtime::Runtime,
    store: DieselStore,
    leases: Vec<Lease>,
    next_lease: AtomicUsize,
    counter: AtomicI64,
    _dir: Option<tempfile::TempDir>,
}

impl Bench {
    fn open(url: DatabaseUrl, sync: SqliteSync, dir: Option<tempfile::TempDir>) -> Self {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime");
        let (store, leases) = runtime.block_on(async {
            let key = EncryptionKey::from_bytes("k1", &[3; 32]).expect("key");
            let store = DieselStore::open(
                StoreOptions::new(url, Keyring::new(key)).sqlite_synchronous(sync),
            )
            .await
            .expect("open the store");
            let credentials = NewCredentials {
                name: "bench".into(),
                endpoint: Endpoint::github_com(),
                auth: Auth::Pat {
                    token: SecretString::from("ghp_bench"),
                },
            };
            let entity = test_util::create_organization(&store, "acme", credentials).await;
            let mut leases = Vec::new();
            for i in 0..SCALE_SETS {
                let set = store
                    .create_scale_set(NewScaleSet {
                        entity_id: entity.id,
                        spec: spec(&format!("bench-{i}")),
                    })
                    .await
                    .expect("scale set");
                match store
                    .acquire_lease(set.id, "bench", Duration::from_secs(3600))
                    .await
                    .expect("lease")
                {
                    Acquisition::Acquired(lease) => leases.push(lease),
                    other => panic!("the fresh lease is free: {other:?}"),
                }
            }
            (store, leases)
        });
        Self {
            runtime,
            store,
            leases,
            next_lease: AtomicUsize::new(0),
            counter: AtomicI64::new(1),
            _dir: dir,
        }
    }

    /// A lease of its own for the calling bench thread (each thread writes its own scale set).
    fn lease(&self) -> &Lease {
        thread_local! {
            static SLOT: std::cell::OnceCell<usize> = const { std::cell::OnceCell::new() };
        }
        let slot =
            SLOT.with(|slot| *slot.get_or_init(|| self.next_lease.fetch_add(1, Ordering::Relaxed)));
        &self.leases[slot % self.leases.len()]
    }

    fn next(&self) -> i64 {
        self.counter.fetch_add(1, Ordering::Relaxed)
    }

    /// A fenced cursor write, as a listener makes per message.
    fn cursor(&self, lease: &Lease) {
        let id = self.next();
        self.runtime
            .block_on(self.store.set_message_cursor(lease, id))
            .expect("cursor write");
    }

    /// An instance's life as the scaler writes it: created pending, then creating, running and
    /// deleting, then the row removed (five writes; the bench divides by five).
    fn instance_life(&self, lease: &Lease) {
        let name = format!("runner-{}", self.next());
        self.runtime.block_on(async {
            self.store
                .create_instance(
                    lease,
                    NewInstance {
                        name: name.clone(),
                        pool_key: "bench_1".into(),
                        status: InstanceStatus::Pending,
                        provider_id: None,
                        github_runner_id: None,
                        bootstrap_deadline: None,
                    },
                )
                .await
                .expect("create");
            for to in [
                InstanceStatus::Creating,
                InstanceStatus::Running,
                InstanceStatus::Deleting,
            ] {
                self.store
                    .transition_instance(lease, &name, to)
                    .await
                    .expect("transition");
            }
            self.store
                .delete_instance(lease, &name)
                .await
                .expect("delete");
        });
    }
}

/// The harness's scale set `name`, its runner group already resolved to GitHub's id 1.
fn spec(name: &str) -> ScaleSetSpec {
    let mut spec = test_util::spec(name);
    spec.set_runner_group_id(Some(1));
    spec
}

static SQLITE: OnceLock<Bench> = OnceLock::new();
static SQLITE_FULL: OnceLock<Bench> = OnceLock::new();
static PG: OnceLock<Option<PgDatabase>> = OnceLock::new();
static POSTGRES: OnceLock<Option<Bench>> = OnceLock::new();

fn sqlite_file(sync: SqliteSync) -> Bench {
    let dir = tempfile::tempdir().expect("temp dir");
    let url = DatabaseUrl::parse(&format!(
        "sqlite://{}",
        dir.path().join("bench.db").display()
    ))
    .expect("sqlite url");
    Bench::open(url, sync, Some(dir))
}

fn sqlite() -> &'static Bench {
    SQLITE.get_or_init(|| sqlite_file(SqliteSync::Normal))
}

fn sqlite_full() -> &'static Bench {
    SQLITE_FULL.get_or_init(|| sqlite_file(SqliteSync::Full))
}

fn postgres() -> Option<&'static Bench> {
    POSTGRES
        .get_or_init(|| {
            let pg = PG
                .get_or_init(|| match std::env::var(PG_VAR) {
                    Ok(admin) => Some(PgDatabase::create(PG_VAR, &admin)),
                    Err(_) => {
                        eprintln!(
                            "SKIPPED the PostgreSQL benches: {PG_VAR} is unset (e.g. \
                             postgres://postgres@127.0.0.1:5432/test)"
                        );
                        None
                    }
                })
                .as_ref()?;
            Some(Bench::open(
                DatabaseUrl::parse(&pg.url).expect("postgres url"),
                SqliteSync::default(),
                None,
            ))
        })
        .as_ref()
}

fn run(bencher: divan::Bencher, bench: Option<&'static Bench>, write: fn(&Bench, &Lease)) {
    let Some(bench) = bench else {
        return;
    };
    bencher.bench(|| write(bench, bench.lease()));
}

mod sqlite {
    use super::*;

    /// One fenced cursor write.
    #[divan::bench(threads = [1, 4], sample_count = 20, sample_size = 5)]
    fn cursor_update(bencher: divan::Bencher) {
        run(bencher, Some(sqlite()), Bench::cursor);
    }

    /// Five instance writes (create, three transitions, delete).
    #[divan::bench(threads = [1, 4], sample_count = 20, sample_size = 5)]
    fn instance_life_5_writes(bencher: divan::Bencher) {
        run(bencher, Some(sqlite()), Bench::instance_life);
    }
}

mod sqlite_full {
    use super::*;

    /// One fenced cursor write.
    #[divan::bench(threads = [1, 4], sample_count = 20, sample_size = 5)]
    fn cursor_update(bencher: divan::Bencher) {
        run(bencher, Some(sqlite_full()), Bench::cursor);
    }

    /// Five instance writes (create, three transitions, delete).
    #[divan::bench(threads = [1, 4], sample_count = 20, sample_size = 5)]
    fn instance_life_5_writes(bencher: divan::Bencher) {
        run(bencher, Some(sqlite_full()), Bench::instance_life);
    }
}

mod postgres {
    use super::*;

    /// One fenced cursor write.
    #[divan::bench(threads = [1, 4], sample_count = 20, sample_size = 5)]
    fn cursor_update(bencher: divan::Bencher) {
        run(bencher, postgres(), Bench::cursor);
    }

    /// Five instance writes (create, three transitions, delete).
    #[divan::bench(threads = [1, 4], sample_count = 20, sample_size = 5)]
    fn instance_life_5_writes(bencher: divan::Bencher) {
        run(bencher, postgres(), Bench::instance_life);
    }
}
