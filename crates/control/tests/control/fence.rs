//! A worker that lost its scale set's lease (cut off from the database, paused) while a call
//! was in flight records nothing of that call's outcome on the set once it answers: the state
//! is the new holder's to write (docs/operations.md, "Partitions").

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use scaleset_provider::{CreateRequest, Error, InstanceId, Pool, Provider, ProviderInstance};
use scaleset_sim::JobSpec;
use scaleset_store::{Acquisition, LeaseStore as _, ReasonCode, ScaleSetState, ScaleSetStore as _};
use tokio::sync::Semaphore;

use crate::helpers::{Harness, TestDb, backend_tests, eventually, settings, sim_config};

backend_tests!(a_failure_answered_after_a_takeover_is_not_written_over_the_new_holders_state);

/// The fake cloud's provider whose creates wait for a permit of `hold` before they reach the
/// cloud, counting those that entered and those that answered.
struct Held {
    inner: Arc<dyn Provider>,
    hold: Arc<Semaphore>,
    entered: Arc<AtomicUsize>,
    answered: Arc<AtomicBool>,
}

#[async_trait::async_trait]
impl Provider for Held {
    async fn create(&self, request: &CreateRequest) -> Result<ProviderInstance, Error> {
        self.entered.fetch_add(1, Ordering::SeqCst);
        self.hold.acquire().await.expect("open").forget();
        let created = self.inner.create(request).await;
        self.answered.store(true, Ordering::SeqCst);
        created
    }
    async fn delete(&self, pool: &Pool, instance: &InstanceId) -> Result<(), Error> {
        self.inner.delete(pool, instance).await
    }
    async fn get(&self, pool: &Pool, instance: &InstanceId) -> Result<ProviderInstance, Error> {
        self.inner.get(pool, instance).await
    }
    async fn list(&self, pool: &Pool) -> Result<Vec<ProviderInstance>, Error> {
        self.inner.list(pool).await
    }
    async fn remove_all(&self) -> Result<(), Error> {
        self.inner.remove_all().await
    }
    async fn start(&self, pool: &Pool, instance: &InstanceId) -> Result<(), Error> {
        self.inner.start(pool, instance).await
    }
    async fn stop(&self, pool: &Pool, instance: &InstanceId) -> Result<(), Error> {
        self.inner.stop(pool, instance).await
    }
    async fn version(&self) -> Result<String, Error> {
        self.inner.version().await
    }
}

/// Regression (the partition soak, seed 301): a worker whose store call failed after another
/// worker had taken its scale set over recorded `error` on the set; the new holder, its
/// session already open, never wrote the state again, so a served set showed `error` for
/// good. Here the late outcome is a provider create that fails after the takeover (with the
/// flag at the first failure, it would mark the set `error` with a `provider_failing` event):
/// nothing of it is written, and the worker serves the set again once the lease is free.
async fn a_failure_answered_after_a_takeover_is_not_written_over_the_new_holders_state(db: TestDb) {
    let h = Harness::with_store_on_the_clock(db, sim_config(), |_| {}).await;
    let hold = Arc::new(Semaphore::new(0));
    let entered = Arc::new(AtomicUsize::new(0));
    let answered = Arc::new(AtomicBool::new(false));
    let mut settings = settings();
    settings.provider_failures_flagged = 1;
    // One watch tick, at the start: a later one would see the lease another's and stop the
    // task, dropping its create in flight, before the create answers.
    settings.watch_interval = Duration::from_secs(3600);
    let lease_ttl = settings.lease_ttl;
    let controller = h.start_wrapped(settings, None, {
        let (hold, entered, answered) = (hold.clone(), entered.clone(), answered.clone());
        move |inner| {
            Arc::new(Held {
                inner,
                hold,
                entered,
                answered,
            })
        }
    });
    let github_id = h.ready().await;
    h.sim()
        .enqueue_jobs(github_id, &JobSpec::count(1))
        .expect("enqueue");
    eventually("the runner's create is in flight", || async {
        (entered.load(Ordering::SeqCst) > 0).then_some(())
    })
    .await;

    // Another worker takes the set over: the lease ran out in the database (the worker was
    // cut off from it), and the new holder records the set as it serves it. A renewal that
    // lands between the clock's move and the acquisition only means another round.
    let id = h.scale_set.id;
    let other = eventually("another worker takes the lease over", || async {
        h.clock.advance(lease_ttl + Duration::from_secs(1));
        match h
            .store
            .acquire_lease(id, "other-worker", lease_ttl)
            .await
            .expect("acquire")
        {
            Acquisition::Acquired(lease) => Some(lease),
            Acquisition::Held { .. } => None,
        }
    })
    .await;
    h.store
        .modify_leased_scale_set_with_event(
            &other,
            &mut |s| s.state = ScaleSetState::Ready,
            ReasonCode::SessionOpened,
            "ready: listening for jobs (other-worker)",
        )
        .await
        .expect("the new holder records the set");

    // The other worker goes away, releasing the lease (the token moved on all the same); the
    // old holder's create answers now, and fails.
    h.store.release_lease(&other).await.expect("release");
    h.cloud.fail_creates(1);
    hold.add_permits(1);
    eventually("the create answered", || async {
        answered.load(Ordering::SeqCst).then_some(())
    })
    .await;
    // The first worker takes the set again at its next pass and serves the job.
    hold.add_permits(1_000);
    eventually("the job runs, served by the first worker again", || async {
        let holder = h.store.get_lease(id).await.ok()??.holder;
        let states = h.job_states(github_id);
        let running = !states.is_empty() && states.iter().all(|s| s == "running");
        (holder == "test-worker" && running).then_some(())
    })
    .await;

    assert_eq!(
        h.occurrences(ReasonCode::ProviderFailing).await,
        0,
        "the failure answered after the takeover was written to the set: {:?}",
        h.events().await
    );
    controller.stop().await;
}
