//! The harness: a fresh database per test and backend (a temp SQLite file, or a PostgreSQL
//! database created through `SCALESET_TEST_DATABASE_URL`, as the store suite does), a
//! simulator on a loopback port, a fake cloud whose created runners boot in the simulator, and
//! a controller to start, stop cleanly or drop (crash).

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use prometheus_client::registry::Registry;
use scaleset_control::{
    Checkpoint, Checkpoints, Controller, ControllerIdentity, Metrics, Settings, StoreClientFactory,
};
use scaleset_github::ExposeSecret as _;
use scaleset_github::RetryPolicy;
use scaleset_provider::{CreatedRunner, FakeCloud, Provider};
use scaleset_sim::{SimConfig, Simulator};
use scaleset_store::{
    DieselStore, EncryptionKey, EventStore, Instance, InstanceStore, Keyring, ManualClock,
    NewScaleSet, ScaleSet, ScaleSetSpec, ScaleSetStore, Store, StoreOptions, Timestamp,
};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

pub(crate) use scaleset_store::backend_tests;
pub(crate) use scaleset_store::test_util::TestDb;
use scaleset_store::test_util::{self, simulator_credentials};

/// A simulator serving on `127.0.0.1:0`: the simulator's own harness.
pub(crate) use scaleset_sim::RunningSim;

/// A simulator configured for fast tests: short long-poll holds.
pub(crate) fn sim_config() -> SimConfig {
    SimConfig {
        long_poll_hold: Duration::from_millis(100),
        tick_interval: Duration::from_millis(20),
        ..SimConfig::default()
    }
}

/// Settings with every wait in milliseconds.
pub(crate) fn settings() -> Settings {
    let mut settings = Settings {
        worker: "test-worker".to_owned(),
        lease_ttl: Duration::from_secs(30),
        watch_interval: Duration::from_millis(50),
        backoff_base: Duration::from_millis(10),
        backoff_max: Duration::from_millis(200),
        refused_recheck: Duration::from_millis(300),
        foreign_session_recheck: Duration::from_millis(300),
        ..Settings::default()
    };
    settings.adoption_retry.base_delay = Duration::from_millis(5);
    settings.adoption_retry.max_delay = Duration::from_millis(50);
    settings.drain_interval = Duration::from_millis(100);
    // A sample at every handled message or poll, so a test sees the charts' figures move.
    settings.sample_interval = Duration::ZERO;
    settings.provider_backoff_base = Duration::from_millis(20);
    settings.provider_backoff_max = Duration::from_millis(200);
    settings.runner_tools_retry = Duration::from_millis(50);
    // The manual clock does not move by itself: a runner that failed to boot is replaced at
    // once unless a test asks for the back-off.
    settings.bootstrap_backoff_base = Duration::ZERO;
    settings.bootstrap_backoff_max = Duration::ZERO;
    settings
}

/// Opens `db` as a store holding the simulator's credentials, organization `acme` and one
/// scale set `linux` ([`test_util::spec`]: provider `fake`, group `Default`, max 10 runners)
/// adjusted by `spec`.
async fn populate(
    db: &TestDb,
    sim: SocketAddr,
    spec: impl FnOnce(&mut ScaleSetSpec),
    clock: Option<&ManualClock>,
    ca_bundle: Option<String>,
) -> (Arc<DieselStore>, ScaleSet) {
    let key = EncryptionKey::from_bytes("k1", &[1; 32]).expect("key");
    let mut options = StoreOptions::new(db.url.clone(), Keyring::new(key));
    if let Some(clock) = clock {
        options = options.clock(Arc::new(clock.clone()));
    }
    let options = options
        .pool_size(4)
        .busy_timeout(Duration::from_secs(20))
        .connect_timeout(Duration::from_secs(20));
    let store = Arc::new(DieselStore::open(options).await.expect("open the store"));
    let base = format!("http://{sim}");
    let mut credentials = simulator_credentials(&base);
    credentials.endpoint.ca_bundle = ca_bundle;
    let entity = test_util::create_organization(&*store, "acme", credentials).await;
    let mut wanted = test_util::spec("linux");
    spec(&mut wanted);
    let scale_set = store
        .create_scale_set(NewScaleSet {
            entity_id: entity.id,
            spec: wanted,
        })
        .await
        .expect("scale set");
    (store, scale_set)
}

/// Everything one test runs against.
pub(crate) struct Harness {
    _db: TestDb,
    pub(crate) store: Arc<DieselStore>,
    pub(crate) github: RunningSim,
    pub(crate) cloud: FakeCloud,
    pub(crate) identity: ControllerIdentity,
    pub(crate) scale_set: ScaleSet,
    pub(crate) clock: ManualClock,
    /// Whether created instances boot their runner in the simulator.
    pub(crate) boot: Arc<AtomicBool>,
    /// Every runner the fake cloud created, in order.
    pub(crate) created: Arc<Mutex<Vec<CreatedRunner>>>,
}

impl Harness {
    /// A store, a simulator built from `config` and one scale set `linux` (provider `fake`,
    /// group `Default`, max 10 runners) adjusted by `spec`.
    pub(crate) async fn new(
        db: TestDb,
        config: SimConfig,
        spec: impl FnOnce(&mut ScaleSetSpec),
    ) -> Self {
        Self::build(db, config, spec, false, None).await
    }

    /// As [`Harness::new`], with the credentials' endpoint carrying the PEM CA bundle `pem`
    /// (a GHES with a private CA; the simulator's plain HTTP never uses it).
    pub(crate) async fn with_endpoint_ca_bundle(
        db: TestDb,
        config: SimConfig,
        spec: impl FnOnce(&mut ScaleSetSpec),
        pem: String,
    ) -> Self {
        Self::build(db, config, spec, false, Some(pem)).await
    }

    async fn build(
        db: TestDb,
        config: SimConfig,
        spec: impl FnOnce(&mut ScaleSetSpec),
        store_on_the_clock: bool,
        ca_bundle: Option<String>,
    ) -> Self {
        let _ = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
            .with_test_writer()
            .try_init();
        let clock = ManualClock::new(Timestamp::from_unix_millis(1_800_000_000_000));
        let github = RunningSim::start(config).await.expect("simulator");
        let (store, scale_set) = populate(
            &db,
            github.addr,
            spec,
            store_on_the_clock.then_some(&clock),
            ca_bundle,
        )
        .await;
        let cloud = FakeCloud::new();
        let boot = Arc::new(AtomicBool::new(true));
        let created = Arc::new(Mutex::new(Vec::new()));
        cloud.on_create({
            let (sim, boot, created) = (github.sim.clone(), boot.clone(), created.clone());
            move |runner: &CreatedRunner| {
                created.lock().expect("created list").push(runner.clone());
                if boot.load(Ordering::SeqCst)
                    && let Some(jit) = &runner.jit_config
                {
                    sim.start_runner(jit.expose_secret())
                        .expect("the simulator boots the runner");
                }
            }
        });
        Self {
            _db: db,
            store,
            github,
            cloud,
            identity: ControllerIdentity::new(Uuid::from_u128(0x5ca1_e5e7)),
            scale_set,
            clock,
            boot,
            created,
        }
    }

    /// The same, with the store on the controller's clock, so the rows' timestamps (a
    /// runner's age and idleness) and "now" move together when a test advances the clock, as
    /// both read the system clock in production.
    pub(crate) async fn with_store_on_the_clock(
        db: TestDb,
        config: SimConfig,
        spec: impl FnOnce(&mut ScaleSetSpec),
    ) -> Self {
        Self::build(db, config, spec, true, None).await
    }

    /// Replaces the database with `db`, as a lost database restored from nothing would be:
    /// the same credentials, organization and scale set spec, and no GitHub id, session or
    /// instance. The simulator and the fake cloud are kept.
    pub(crate) async fn wipe_store(&mut self, db: TestDb, spec: impl FnOnce(&mut ScaleSetSpec)) {
        let (store, scale_set) = populate(&db, self.github.addr, spec, None, None).await;
        self.store = store;
        self.scale_set = scale_set;
        self._db = db;
    }

    /// A new, empty database on this harness's backend.
    pub(crate) async fn another_db(&self, test: &str) -> TestDb {
        self._db.another(test).await
    }

    pub(crate) fn sim(&self) -> &Simulator {
        &self.github.sim
    }

    /// Starts a controller (with `checkpoints`, if any).
    pub(crate) fn start(&self, checkpoints: Option<Arc<dyn Checkpoints>>) -> RunningController {
        self.start_with(settings(), checkpoints)
    }

    /// Starts a controller with `settings`.
    pub(crate) fn start_with(
        &self,
        settings: Settings,
        checkpoints: Option<Arc<dyn Checkpoints>>,
    ) -> RunningController {
        self.start_wrapped(settings, checkpoints, |provider| provider)
    }

    /// Starts a controller with `settings` whose provider `fake` is the fake cloud's as
    /// `wrap` wraps it (a provider slow or silent in some calls).
    pub(crate) fn start_wrapped(
        &self,
        settings: Settings,
        checkpoints: Option<Arc<dyn Checkpoints>>,
        wrap: impl FnOnce(Arc<dyn Provider>) -> Arc<dyn Provider>,
    ) -> RunningController {
        self.start_built(settings, checkpoints, |cloud, id| {
            wrap(Arc::new(cloud.provider(id)))
        })
    }

    /// Starts a controller with `settings` whose provider `fake` is `provider` (a wrapper of
    /// the harness's fake cloud, say).
    pub(crate) fn start_with_provider(
        &self,
        settings: Settings,
        checkpoints: Option<Arc<dyn Checkpoints>>,
        provider: Arc<dyn Provider>,
    ) -> RunningController {
        self.start_built(settings, checkpoints, |_, _| provider)
    }

    fn start_built(
        &self,
        settings: Settings,
        checkpoints: Option<Arc<dyn Checkpoints>>,
        build: impl FnOnce(&FakeCloud, Uuid) -> Arc<dyn Provider>,
    ) -> RunningController {
        let store: Arc<dyn Store> = self.store.clone();
        let clients = StoreClientFactory::new(store.clone()).with_config(|config| {
            config
                .with_retry(RetryPolicy::new(
                    4,
                    Duration::from_millis(2),
                    Duration::from_millis(20),
                ))
                .with_session_retry(RetryPolicy::new(
                    4,
                    Duration::from_millis(2),
                    Duration::from_millis(20),
                ))
        });
        let providers =
            BTreeMap::from([("fake".to_owned(), build(&self.cloud, self.identity.id()))]);
        let mut registry = Registry::default();
        let mut controller = Controller::new(
            store,
            Arc::new(clients),
            providers,
            self.identity.clone(),
            settings,
            &mut registry,
        )
        .with_clock(Arc::new(self.clock.clone()));
        if let Some(checkpoints) = checkpoints {
            controller = controller.with_checkpoints(checkpoints);
        }
        let metrics = controller.metrics();
        let cancel = CancellationToken::new();
        let handle = tokio::spawn(controller.run(cancel.clone()));
        RunningController {
            cancel,
            handle: Some(handle),
            metrics,
            registry,
        }
    }

    /// The stored scale set.
    pub(crate) async fn stored(&self) -> ScaleSet {
        self.store
            .get_scale_set(self.scale_set.id)
            .await
            .expect("scale set")
    }

    /// The stored instances.
    pub(crate) async fn instances(&self) -> Vec<Instance> {
        self.store
            .list_instances(self.scale_set.id)
            .await
            .expect("instances")
    }

    /// Starts a controller without checkpoints and waits until the scale set is ready: the
    /// controller and the scale set's GitHub id.
    pub(crate) async fn start_ready(&self) -> (RunningController, i64) {
        let controller = self.start(None);
        (controller, self.ready().await)
    }

    /// Waits until the scale set is ready with a session, and returns its GitHub id.
    pub(crate) async fn ready(&self) -> i64 {
        eventually("the scale set is ready and listening", || async {
            let stored = self.stored().await;
            let id = stored.github_id?;
            let state = self.sim().state();
            let live = state.scale_set(id)?.session.as_ref()?;
            let stored_session = stored.session_id.as_deref()?;
            (stored.state == scaleset_store::ScaleSetState::Ready
                && stored_session == live.session_id)
                .then_some(id)
        })
        .await
    }

    /// The states of the simulator's jobs for `github_id`.
    pub(crate) fn job_states(&self, github_id: i64) -> Vec<String> {
        self.sim()
            .state()
            .jobs_of(github_id)
            .map(|j| j.state.clone())
            .collect()
    }

    /// Enqueues `count` jobs for `github_id` and serves them: see [`Self::finish_jobs`].
    pub(crate) async fn serve_jobs(&self, github_id: i64, count: u32) {
        self.sim()
            .enqueue_jobs(github_id, &scaleset_sim::JobSpec::count(count))
            .expect("enqueue");
        self.finish_jobs(github_id, count).await;
    }

    /// Waits until `count` jobs of `github_id` run and none waits (earlier ones may have
    /// completed), ends them by moving simulated time
    /// past their run time, and waits until they completed and nothing of theirs is left: no
    /// instance in the store or the cloud, no runner on GitHub.
    pub(crate) async fn finish_jobs(&self, github_id: i64, count: u32) {
        eventually("every job runs", || async {
            let states = self.job_states(github_id);
            let running = states.iter().filter(|s| *s == "running").count();
            let waiting = states.iter().any(|s| s != "running" && s != "completed");
            (running == count as usize && !waiting).then_some(())
        })
        .await;
        self.sim().advance(Duration::from_secs(60));
        eventually("every job completed and nothing is left", || async {
            let done = self.job_states(github_id).iter().all(|s| s == "completed");
            let clean = self.cloud.instances().is_empty()
                && self.instances().await.is_empty()
                && self.sim().state().agents.is_empty();
            (done && clean).then_some(())
        })
        .await;
    }

    /// Event kinds of the scale set, newest first.
    pub(crate) async fn events(&self) -> Vec<String> {
        self.store
            .list_events(self.scale_set.id, 200)
            .await
            .expect("events")
            .into_iter()
            .map(|e| e.kind.as_str().to_owned())
            .collect()
    }

    /// How many times events with `code` happened (repeats of one code are counted on one
    /// entry, whatever their detail says).
    pub(crate) async fn occurrences(&self, code: scaleset_store::ReasonCode) -> u64 {
        self.store
            .list_events(self.scale_set.id, 200)
            .await
            .expect("events")
            .into_iter()
            .filter(|e| e.code == code)
            .map(|e| e.count)
            .sum()
    }
}

/// A controller running in the background.
pub(crate) struct RunningController {
    cancel: CancellationToken,
    handle: Option<JoinHandle<Result<(), scaleset_control::Error>>>,
    pub(crate) metrics: Arc<Metrics>,
    pub(crate) registry: Registry,
}

impl RunningController {
    /// Cancels and waits for a clean stop.
    pub(crate) async fn stop(self) {
        self.stop_within(Duration::from_secs(30)).await;
    }

    /// Cancels and waits for a clean stop, failing the test if it takes longer than `bound`.
    pub(crate) async fn stop_within(mut self, bound: Duration) {
        self.cancel.cancel();
        if let Some(handle) = self.handle.take() {
            tokio::time::timeout(bound, handle)
                .await
                .unwrap_or_else(|_| panic!("the controller stops within {bound:?}"))
                .expect("the controller task did not panic")
                .expect("the controller ran without error");
        }
    }

    /// Drops the controller mid-flight, as a crash would: every task is aborted where it is.
    pub(crate) async fn crash(mut self) {
        if let Some(handle) = self.handle.take() {
            handle.abort();
            let _ = handle.await;
        }
    }
}

impl Drop for RunningController {
    fn drop(&mut self) {
        if let Some(handle) = self.handle.take() {
            handle.abort();
        }
    }
}

/// The one bounded poll of the workspace's tests.
pub(crate) use scaleset_eventually::eventually;

/// Freezes the task that first reaches `point` (it never returns), so the test can drop the
/// controller exactly there.
#[derive(Debug)]
pub(crate) struct FreezeAt {
    pub(crate) point: Checkpoint,
    pub(crate) reached: AtomicBool,
}

impl FreezeAt {
    pub(crate) fn new(point: Checkpoint) -> Arc<Self> {
        Arc::new(Self {
            point,
            reached: AtomicBool::new(false),
        })
    }

    pub(crate) fn was_reached(&self) -> bool {
        self.reached.load(Ordering::SeqCst)
    }
}

#[async_trait::async_trait]
impl Checkpoints for FreezeAt {
    async fn reached(&self, point: Checkpoint, _scale_set: &str) {
        if point == self.point && !self.reached.swap(true, Ordering::SeqCst) {
            std::future::pending::<()>().await;
        }
    }
}
