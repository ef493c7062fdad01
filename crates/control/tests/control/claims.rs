//! A provider's answer is a claim (DESIGN §5): an answer to a create naming an instance that
//! is not provably ours is never recorded, and nothing is ever deleted by an id not verified;
//! and a job start is a fact whatever the row's state (a runner that takes its job before its
//! create lands is busy).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use scaleset_control::pool_key;
use scaleset_provider::{CreateRequest, Error, InstanceId, Pool, Provider, ProviderInstance};
use scaleset_store::InstanceStatus;
use tokio::sync::Semaphore;
use uuid::Uuid;

use crate::helpers::{Harness, TestDb, backend_tests, eventually, settings, sim_config};

backend_tests!(
    a_provider_answering_a_foreign_instance_for_two_runners_never_gets_it_deleted,
    a_job_start_before_the_create_lands_leaves_the_runner_busy,
);

/// The fake cloud's provider, answering every create with `answer_id` as the provider id (the
/// instance asked for is made, under our name and pool key), and remembering every id a
/// delete was sent with. With `hold`, a create's answer waits for a permit of it.
struct Hostile {
    inner: Arc<dyn Provider>,
    answer_id: Option<String>,
    hold: Option<Semaphore>,
    deletes: Mutex<Vec<String>>,
}

struct Wrapped(Arc<Hostile>);

#[async_trait::async_trait]
impl Provider for Wrapped {
    async fn create(&self, request: &CreateRequest) -> Result<ProviderInstance, Error> {
        let mut created = self.0.inner.create(request).await?;
        if let Some(hold) = &self.0.hold {
            hold.acquire().await.expect("open").forget();
        }
        if let Some(id) = &self.0.answer_id {
            created.provider_id.clone_from(id);
        }
        Ok(created)
    }
    async fn delete(&self, pool: &Pool, instance: &InstanceId) -> Result<(), Error> {
        self.0
            .deletes
            .lock()
            .expect("deletes")
            .push(instance.as_str().to_owned());
        self.0.inner.delete(pool, instance).await
    }
    async fn get(&self, pool: &Pool, instance: &InstanceId) -> Result<ProviderInstance, Error> {
        self.0.inner.get(pool, instance).await
    }
    async fn list(&self, pool: &Pool) -> Result<Vec<ProviderInstance>, Error> {
        self.0.inner.list(pool).await
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

/// Regression: an external provider answered two of our runners' creates with the provider
/// id of another controller's machine; both rows recorded it, and removing a runner deleted
/// the foreign machine. The answers are refused (the provider shown failing, an event), the
/// jobs are still served, and no delete is ever sent with the foreign id.
async fn a_provider_answering_a_foreign_instance_for_two_runners_never_gets_it_deleted(db: TestDb) {
    let h = Harness::new(db, sim_config(), |_| {}).await;
    let theirs = Uuid::from_u128(0x1111_1111_0000_4000_8000_0000_0000_0007);
    let victim = h
        .cloud
        .plant(theirs, pool_key(theirs, 7), "victim-foreign-1");
    let hostile = Arc::new(Hostile {
        inner: Arc::new(h.cloud.provider(h.identity.id())),
        answer_id: Some(victim.clone()),
        hold: None,
        deletes: Mutex::new(Vec::new()),
    });
    let wrapped = hostile.clone();
    let controller = h.start_wrapped(settings(), None, move |_| Arc::new(Wrapped(wrapped)));
    let github_id = h.ready().await;
    h.sim()
        .enqueue_jobs(github_id, &scaleset_sim::JobSpec::count(2))
        .expect("enqueue");
    eventually(
        "an answer is refused and the provider shown failing",
        || async {
            let refused = h
                .events()
                .await
                .iter()
                .any(|k| k == "provider_answer_refused");
            let stored = h.stored().await;
            (refused && stored.provider_error.is_some()).then_some(())
        },
    )
    .await;
    eventually("both jobs run", || async {
        let states = h.job_states(github_id);
        (states.len() == 2 && states.iter().all(|s| s == "running")).then_some(())
    })
    .await;
    h.sim().advance(Duration::from_secs(60));
    eventually(
        "both jobs completed and every row of ours is gone",
        || async {
            let done = h.job_states(github_id).iter().all(|s| s == "completed");
            let ours_left = h
                .cloud
                .instances()
                .iter()
                .any(|i| i.controller_id == h.identity.id());
            (done && !ours_left && h.instances().await.is_empty()).then_some(())
        },
    )
    .await;
    let deletes = hostile.deletes.lock().expect("deletes").clone();
    assert!(
        !deletes.contains(&victim),
        "no delete by the foreign id: {deletes:?}"
    );
    assert!(
        h.cloud
            .instances()
            .iter()
            .any(|i| i.instance.provider_id == victim),
        "the foreign machine is untouched"
    );
    controller.stop().await;
}

/// Regression: a `JobStarted` for a runner whose row was still `creating` (the runner made
/// for the job took it before the provider's create answered) was dropped, and the runner was
/// shown idle while it ran the job. The row is busy at once, and stays busy when the create
/// lands with its provider id.
async fn a_job_start_before_the_create_lands_leaves_the_runner_busy(db: TestDb) {
    // `JobStarted` at once, and a job that runs until the test ends it.
    let config = scaleset_sim::SimConfig {
        job_started_delay: Duration::ZERO,
        runner_job_duration: Duration::from_secs(3600),
        ..sim_config()
    };
    let h = Harness::new(db, config, |_| {}).await;
    let held = Arc::new(Hostile {
        inner: Arc::new(h.cloud.provider(h.identity.id())),
        answer_id: None,
        hold: Some(Semaphore::new(0)),
        deletes: Mutex::new(Vec::new()),
    });
    let wrapped = held.clone();
    let controller = h.start_wrapped(settings(), None, move |_| Arc::new(Wrapped(wrapped)));
    let github_id = h.ready().await;
    h.sim()
        .enqueue_jobs(github_id, &scaleset_sim::JobSpec::count(1))
        .expect("enqueue");
    let name = eventually(
        "the runner took its job while its create is held: its row is busy",
        || async {
            let rows = h.instances().await;
            let row = rows.first()?;
            (rows.len() == 1 && row.status == InstanceStatus::Busy && row.provider_id.is_none())
                .then(|| row.name.clone())
        },
    )
    .await;
    held.hold.as_ref().expect("held").add_permits(1);
    eventually(
        "the create landed: the row keeps busy, with its provider id",
        || async {
            let rows = h.instances().await;
            let row = rows.iter().find(|r| r.name == name)?;
            (row.status == InstanceStatus::Busy && row.provider_id.is_some()).then_some(())
        },
    )
    .await;
    h.sim().advance(Duration::from_secs(3700));
    eventually("the job completed and its runner is gone", || async {
        let done = h.job_states(github_id).iter().all(|s| s == "completed");
        (done && h.instances().await.is_empty() && h.cloud.instances().is_empty()).then_some(())
    })
    .await;
    controller.stop().await;
}
