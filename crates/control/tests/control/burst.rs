//! Issue 35 item 2, bursts bounded by the cloud, not by us: a scale set's provider creates run
//! beside its listener, so a burst has every create in flight at once and a job that arrives
//! meanwhile gets its create started before any earlier one lands; the provider's own limits
//! (`scaleset_provider::CallLimits`) are what bound them. Counted with a provider whose creates
//! wait at a gate, never timed.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use async_trait::async_trait;
use scaleset_control::{Checkpoint, Checkpoints};
use scaleset_provider::{
    CallLimits, CreateRequest, Error as ProviderError, InstanceId, Limited, Pool, Provider,
    ProviderInstance,
};
use scaleset_sim::JobSpec;
use scaleset_store::InstanceStatus;
use tokio::sync::watch;

use crate::helpers::{Harness, TestDb, backend_tests, eventually, settings, sim_config};

backend_tests!(
    a_burst_has_every_create_in_flight_at_once_and_later_jobs_do_not_wait_for_it,
    the_providers_concurrency_bounds_the_creates_in_flight,
    a_runner_done_before_its_create_lands_has_its_instance_deleted,
    creates_that_landed_together_are_recorded_running_in_one_commit,
);

/// The harness's fake cloud behind a gate: each create counts itself running, waits until the
/// gate opens, then creates.
struct Gated {
    inner: Arc<dyn Provider>,
    open: watch::Receiver<bool>,
    running: AtomicUsize,
    most: AtomicUsize,
    started: AtomicUsize,
    /// Creates whose answer is being returned to the caller.
    returned: AtomicUsize,
    /// Boots each runner in this simulator before the gate, as a machine that came up before
    /// its create call returned.
    boot: Option<scaleset_sim::Simulator>,
}

impl Gated {
    fn new(inner: Arc<dyn Provider>) -> (Arc<Self>, watch::Sender<bool>) {
        let (gate, open) = watch::channel(false);
        let gated = Arc::new(Self {
            inner,
            open,
            running: AtomicUsize::new(0),
            most: AtomicUsize::new(0),
            started: AtomicUsize::new(0),
            returned: AtomicUsize::new(0),
            boot: None,
        });
        (gated, gate)
    }

    fn running(&self) -> usize {
        self.running.load(Ordering::SeqCst)
    }
}

#[async_trait]
impl Provider for Gated {
    async fn create(&self, request: &CreateRequest) -> Result<ProviderInstance, ProviderError> {
        self.started.fetch_add(1, Ordering::SeqCst);
        let now = self.running.fetch_add(1, Ordering::SeqCst) + 1;
        self.most.fetch_max(now, Ordering::SeqCst);
        if let (Some(sim), Some(jit)) = (&self.boot, &request.jit_config) {
            use scaleset_provider::ExposeSecret as _;
            sim.start_runner(jit.expose_secret())
                .expect("the simulator boots the runner");
        }
        let mut open = self.open.clone();
        // A closed gate (the test ended) lets the create through.
        let _ = open.wait_for(|open| *open).await;
        self.running.fetch_sub(1, Ordering::SeqCst);
        let created = self.inner.create(request).await;
        // The scaler's create task has no await after this call: it ends in this same poll.
        self.returned.fetch_add(1, Ordering::SeqCst);
        created
    }
    async fn delete(&self, pool: &Pool, instance: &InstanceId) -> Result<(), ProviderError> {
        self.inner.delete(pool, instance).await
    }
    async fn get(
        &self,
        pool: &Pool,
        instance: &InstanceId,
    ) -> Result<ProviderInstance, ProviderError> {
        self.inner.get(pool, instance).await
    }
    async fn list(&self, pool: &Pool) -> Result<Vec<ProviderInstance>, ProviderError> {
        self.inner.list(pool).await
    }
    async fn remove_all(&self) -> Result<(), ProviderError> {
        self.inner.remove_all().await
    }
    async fn start(&self, pool: &Pool, instance: &InstanceId) -> Result<(), ProviderError> {
        self.inner.start(pool, instance).await
    }
    async fn stop(&self, pool: &Pool, instance: &InstanceId) -> Result<(), ProviderError> {
        self.inner.stop(pool, instance).await
    }
    async fn version(&self) -> Result<String, ProviderError> {
        self.inner.version().await
    }
}

async fn a_burst_has_every_create_in_flight_at_once_and_later_jobs_do_not_wait_for_it(db: TestDb) {
    let h = Harness::new(db, sim_config(), |spec| {
        spec.change(|r| r.max_runners = Some(i64::from(30)))
            .unwrap()
    })
    .await;
    let (gated, gate) = Gated::new(Arc::new(h.cloud.provider(h.identity.id())));
    let controller = h.start_with_provider(settings(), None, gated.clone());
    let github_id = h.ready().await;

    h.sim()
        .enqueue_jobs(github_id, &JobSpec::count(20))
        .expect("enqueue");
    eventually(
        "the burst's twenty creates are in flight at once",
        || async { (gated.running() == 20).then_some(()) },
    )
    .await;
    // The listener kept polling: five jobs that arrive while the twenty are in flight get
    // their creates started before any of the twenty lands.
    h.sim()
        .enqueue_jobs(github_id, &JobSpec::count(5))
        .expect("enqueue");
    eventually("the later jobs' creates join them", || async {
        (gated.running() == 25).then_some(())
    })
    .await;
    assert!(h.cloud.instances().is_empty(), "no create has landed yet");
    let creating = h
        .instances()
        .await
        .iter()
        .filter(|i| i.status == InstanceStatus::Creating)
        .count();
    assert_eq!(creating, 25, "each create in flight has its creating row");

    gate.send_replace(true);
    eventually("every job runs on its own runner", || async {
        let states = h.job_states(github_id);
        (states.len() == 25 && states.iter().all(|s| s == "running")).then_some(())
    })
    .await;
    assert_eq!(
        gated.started.load(Ordering::SeqCst),
        25,
        "one create per job"
    );
    assert_eq!(gated.most.load(Ordering::SeqCst), 25);
    assert_eq!(h.cloud.instances().len(), 25);
    eventually("every instance is recorded running", || async {
        let instances = h.instances().await;
        (instances.len() == 25
            && instances
                .iter()
                .all(|i| matches!(i.status, InstanceStatus::Running | InstanceStatus::Busy)))
        .then_some(())
    })
    .await;
    controller.stop().await;
}

async fn the_providers_concurrency_bounds_the_creates_in_flight(db: TestDb) {
    let h = Harness::new(db, sim_config(), |spec| {
        spec.change(|r| r.max_runners = Some(i64::from(12)))
            .unwrap()
    })
    .await;
    let (gated, gate) = Gated::new(Arc::new(h.cloud.provider(h.identity.id())));
    let limits = CallLimits {
        concurrency: std::num::NonZeroUsize::new(4).expect("non-zero"),
        create_rate: None,
    };
    let limited = Arc::new(Limited::new(gated.clone(), limits));
    let controller = h.start_with_provider(settings(), None, limited);
    let github_id = h.ready().await;

    h.sim()
        .enqueue_jobs(github_id, &JobSpec::count(12))
        .expect("enqueue");
    eventually("four creates are in flight", || async {
        (gated.running() == 4).then_some(())
    })
    .await;
    // The other eight wait for a slot with their creating rows.
    eventually("twelve creating rows", || async {
        let instances = h.instances().await;
        (instances
            .iter()
            .filter(|i| i.status == InstanceStatus::Creating)
            .count()
            == 12)
            .then_some(())
    })
    .await;
    assert_eq!(gated.started.load(Ordering::SeqCst), 4);
    gate.send_replace(true);
    eventually("every job runs on its own runner", || async {
        let states = h.job_states(github_id);
        (states.len() == 12 && states.iter().all(|s| s == "running")).then_some(())
    })
    .await;
    assert_eq!(gated.started.load(Ordering::SeqCst), 12);
    assert_eq!(
        gated.most.load(Ordering::SeqCst),
        4,
        "never more than four at once"
    );
    controller.stop().await;
}

/// A runner that ran its job and finished while its create call was still in flight (a
/// machine up before the cloud answered) is removed with its row; the instance the create then
/// returns is deleted, and the scale set goes on serving.
async fn a_runner_done_before_its_create_lands_has_its_instance_deleted(db: TestDb) {
    let h = Harness::new(db, sim_config(), |_| {}).await;
    h.boot.store(false, Ordering::SeqCst);
    let (gate, open) = watch::channel(false);
    let gated = Arc::new(Gated {
        inner: Arc::new(h.cloud.provider(h.identity.id())),
        open,
        running: AtomicUsize::new(0),
        most: AtomicUsize::new(0),
        started: AtomicUsize::new(0),
        returned: AtomicUsize::new(0),
        boot: Some(h.sim().clone()),
    });
    let controller = h.start_with_provider(settings(), None, gated.clone());
    let github_id = h.ready().await;

    h.sim()
        .enqueue_jobs(github_id, &JobSpec::count(1))
        .expect("enqueue");
    eventually("the job runs while its create is in flight", || async {
        let running = h.job_states(github_id) == ["running"];
        (running && gated.running() == 1).then_some(())
    })
    .await;
    h.sim().advance(std::time::Duration::from_secs(60));
    eventually("the finished runner's row is removed", || async {
        let done = h.job_states(github_id) == ["completed"];
        (done && h.instances().await.is_empty()).then_some(())
    })
    .await;
    assert_eq!(gated.running(), 1, "the create is still in flight");

    gate.send_replace(true);
    eventually("the instance the create returned is deleted", || async {
        (h.cloud.create_calls() == 1 && h.cloud.instances().is_empty()).then_some(())
    })
    .await;
    assert!(h.instances().await.is_empty());
    assert!(
        h.sim().state().agents.is_empty(),
        "no runner left on GitHub"
    );
    // The task went on: the next job is served (its runner booted by the gated provider).
    h.sim()
        .enqueue_jobs(github_id, &JobSpec::count(1))
        .expect("enqueue");
    h.finish_jobs(github_id, 1).await;
    assert!(
        !h.events().await.iter().any(|e| e == "error"),
        "the scale set's task never failed"
    );
    controller.stop().await;
}

/// Holds the next message the task receives once armed, until released; freezes the task at
/// the first instance recorded created (it never returns), so the test reads the store there.
#[derive(Debug)]
struct HoldThenFreeze {
    armed: AtomicBool,
    held: AtomicBool,
    release: watch::Receiver<bool>,
    frozen: AtomicBool,
}

#[async_trait]
impl Checkpoints for HoldThenFreeze {
    async fn reached(&self, point: Checkpoint, _scale_set: &str) {
        match point {
            Checkpoint::MessageReceived if self.armed.swap(false, Ordering::SeqCst) => {
                self.held.store(true, Ordering::SeqCst);
                let mut release = self.release.clone();
                let _ = release.wait_for(|go| *go).await;
            }
            Checkpoint::InstanceCreated if !self.frozen.swap(true, Ordering::SeqCst) => {
                std::future::pending::<()>().await;
            }
            _ => {}
        }
    }
}

/// Creates that land while the listener is busy are recorded `running` together, in one
/// commit, not one per runner (issue 35 item 4): when the task first reports an instance
/// created, every create that had landed is already `running` in the store.
async fn creates_that_landed_together_are_recorded_running_in_one_commit(db: TestDb) {
    let h = Harness::new(db, sim_config(), |spec| {
        spec.change(|r| r.max_runners = Some(i64::from(5))).unwrap()
    })
    .await;
    let (gated, gate) = Gated::new(Arc::new(h.cloud.provider(h.identity.id())));
    let (release, released) = watch::channel(false);
    let observer = Arc::new(HoldThenFreeze {
        armed: AtomicBool::new(false),
        held: AtomicBool::new(false),
        release: released,
        frozen: AtomicBool::new(false),
    });
    let controller = h.start_with_provider(settings(), Some(observer.clone()), gated.clone());
    let github_id = h.ready().await;

    h.sim()
        .enqueue_jobs(github_id, &JobSpec::count(4))
        .expect("enqueue");
    eventually("four creates are in flight", || async {
        (gated.running() == 4).then_some(())
    })
    .await;
    // The listener is held on the next message while the four creates land.
    observer.armed.store(true, Ordering::SeqCst);
    h.sim()
        .enqueue_jobs(github_id, &JobSpec::count(1))
        .expect("enqueue");
    eventually("the listener holds the next message", || async {
        observer.held.load(Ordering::SeqCst).then_some(())
    })
    .await;
    gate.send_replace(true);
    // The cloud holds an instance before its create call has returned (a loaded machine can
    // pause the call in between): "landed" means the call returned to the create task.
    eventually("the four creates land", || async {
        (h.cloud.instances().len() == 4 && gated.returned.load(Ordering::SeqCst) == 4).then_some(())
    })
    .await;
    release.send_replace(true);
    eventually("the task reports the first instance created", || async {
        observer.frozen.load(Ordering::SeqCst).then_some(())
    })
    .await;
    let instances = h.instances().await;
    let running = instances
        .iter()
        .filter(|i| i.status == InstanceStatus::Running && i.provider_id.is_some())
        .count();
    assert_eq!(
        running, 4,
        "the four landed creates are recorded running in the same commit: {instances:?}"
    );
    controller.crash().await;
}
