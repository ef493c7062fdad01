//! Listen before listing (issue 35 item 1): a scale set polls and serves jobs as soon as its
//! session is open; the recovery of its instances (the provider's list) runs beside it and
//! its facts, older than what the listener did meanwhile, are merged by the start planner's
//! rules when they land.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use scaleset_provider::{CreateRequest, Error, InstanceId, Pool, Provider, ProviderInstance};
use scaleset_store::ScaleSetState;
use tokio::sync::Semaphore;

use crate::helpers::{Harness, TestDb, backend_tests, eventually, settings, sim_config};

backend_tests!(
    a_provider_whose_list_never_answers_does_not_stop_listening_and_serving,
    a_recovery_landing_after_a_served_job_neither_deletes_twice_nor_records_a_ghost,
);

/// The fake cloud's provider, except that its first `list` waits for the test: it takes its
/// answer once `snapshot` gives a permit, and returns it once `release` gives one (an answer
/// older than what happened in between). With `silent`, no `list` ever answers.
struct SlowList {
    inner: Arc<dyn Provider>,
    silent: bool,
    snapshot: Semaphore,
    release: Semaphore,
    first: AtomicBool,
    asked: AtomicUsize,
    taken: AtomicBool,
    answered: AtomicUsize,
}

impl SlowList {
    fn new(inner: Arc<dyn Provider>, silent: bool) -> Self {
        Self {
            inner,
            silent,
            snapshot: Semaphore::new(0),
            release: Semaphore::new(0),
            first: AtomicBool::new(true),
            asked: AtomicUsize::new(0),
            taken: AtomicBool::new(false),
            answered: AtomicUsize::new(0),
        }
    }
}

/// Hands the test's wrapper to the harness and keeps a handle on it.
struct Shared(Arc<SlowList>);

#[async_trait::async_trait]
impl Provider for Shared {
    async fn create(&self, request: &CreateRequest) -> Result<ProviderInstance, Error> {
        self.0.inner.create(request).await
    }
    async fn delete(&self, pool: &Pool, instance: &InstanceId) -> Result<(), Error> {
        self.0.inner.delete(pool, instance).await
    }
    async fn get(&self, pool: &Pool, instance: &InstanceId) -> Result<ProviderInstance, Error> {
        self.0.inner.get(pool, instance).await
    }
    async fn list(&self, pool: &Pool) -> Result<Vec<ProviderInstance>, Error> {
        let gate = &self.0;
        gate.asked.fetch_add(1, Ordering::SeqCst);
        if gate.silent {
            return std::future::pending().await;
        }
        if !gate.first.swap(false, Ordering::SeqCst) {
            return gate.inner.list(pool).await;
        }
        gate.snapshot.acquire().await.expect("open").forget();
        let answer = gate.inner.list(pool).await;
        gate.taken.store(true, Ordering::SeqCst);
        gate.release.acquire().await.expect("open").forget();
        gate.answered.fetch_add(1, Ordering::SeqCst);
        answer
    }
    async fn remove_all(&self) -> Result<(), Error> {
        self.0.inner.remove_all().await
    }
    async fn start(&self, pool: &Pool, instance: &InstanceId) -> Result<(), Error> {
        self.0.inner.start(pool, instance).await
    }
    async fn stop(&self, pool: &Pool, instance: &InstanceId) -> Result<(), Error> {
        self.0.inner.stop(pool, instance).await
    }
    async fn version(&self) -> Result<String, Error> {
        self.0.inner.version().await
    }
}

/// The Done-when of issue 35: with a provider whose list never answers, the scale set listens
/// and its jobs get runners, which run and are removed when done; a stop is not held up by
/// the unanswered list.
async fn a_provider_whose_list_never_answers_does_not_stop_listening_and_serving(db: TestDb) {
    let h = Harness::new(db, sim_config(), |_| {}).await;
    let gate = Arc::new(SlowList::new(
        Arc::new(h.cloud.provider(h.identity.id())),
        true,
    ));
    let wrapped = gate.clone();
    let controller = h.start_wrapped(settings(), None, move |_| Arc::new(Shared(wrapped)));
    let github_id = h.ready().await;
    h.serve_jobs(github_id, 2).await;
    assert!(
        gate.asked.load(Ordering::SeqCst) >= 1,
        "the recovery asked the provider for its list"
    );
    assert_eq!(h.cloud.create_calls(), 2, "one runner per job");
    assert_eq!(h.stored().await.state, ScaleSetState::Ready);
    controller.stop_within(Duration::from_secs(10)).await;
    let stored = h.stored().await;
    assert_eq!(
        stored.session_id, None,
        "the session was deleted on the stop"
    );
}

/// The merge rules, end to end: the provider's list is taken while a job's runner is up and
/// returned only after the job completed and the listener removed the runner, its instance
/// and its row. The recovery's facts then name an instance that is gone: it is not deleted
/// again as an orphan nor recorded again, and the warm pool (`min_idle`), which waited for
/// the recovery, is made once it landed.
async fn a_recovery_landing_after_a_served_job_neither_deletes_twice_nor_records_a_ghost(
    db: TestDb,
) {
    let h = Harness::new(db, sim_config(), |spec| {
        spec.change(|r| r.min_idle = Some(i64::from(1))).unwrap()
    })
    .await;
    let gate = Arc::new(SlowList::new(
        Arc::new(h.cloud.provider(h.identity.id())),
        false,
    ));
    let wrapped = gate.clone();
    let controller = h.start_wrapped(settings(), None, move |_| Arc::new(Shared(wrapped)));
    let github_id = h.ready().await;
    h.sim()
        .enqueue_jobs(github_id, &scaleset_sim::JobSpec::count(1))
        .expect("enqueue");
    eventually("the job runs on a runner made for it", || async {
        let running = h.job_states(github_id).iter().any(|s| s == "running");
        (running && h.cloud.instances().len() == 1).then_some(())
    })
    .await;
    // No warm runner before the recovery lands: the one instance is the job's.
    assert_eq!(h.cloud.create_calls(), 1);
    gate.snapshot.add_permits(1);
    eventually("the provider's list is taken", || async {
        gate.taken.load(Ordering::SeqCst).then_some(())
    })
    .await;
    h.sim().advance(Duration::from_secs(60));
    eventually("the job completed and nothing of it is left", || async {
        let done = h.job_states(github_id).iter().all(|s| s == "completed");
        let clean = h.cloud.instances().is_empty()
            && h.instances().await.is_empty()
            && h.sim().state().agents.is_empty();
        (done && clean).then_some(())
    })
    .await;
    assert_eq!(
        h.cloud.delete_calls(),
        1,
        "the listener deleted the job's instance"
    );
    assert_eq!(gate.answered.load(Ordering::SeqCst), 0);
    gate.release.add_permits(1);
    eventually(
        "the recovery landed and the warm runner was made",
        || async {
            (h.cloud.instances().len() == 1 && h.instances().await.len() == 1).then_some(())
        },
    )
    .await;
    assert_eq!(gate.answered.load(Ordering::SeqCst), 1);
    assert_eq!(
        h.cloud.delete_calls(),
        1,
        "the stale list's instance was not deleted again"
    );
    let events = h.events().await;
    for kind in ["orphan_instance_deleted", "instance_rerecorded", "error"] {
        assert!(!events.iter().any(|e| e == kind), "{kind} in {events:?}");
    }
    let warm = h.instances().await;
    assert_ne!(
        warm[0].name,
        h.created.lock().expect("created")[0].name,
        "the warm runner is a new one"
    );
    controller.stop().await;
}
