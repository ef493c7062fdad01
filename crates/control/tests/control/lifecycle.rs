//! Issue 33 items 1, 2 and 5 against the simulator and the fake cloud: each lifecycle rule of the
//! reconcile planner retires the runner it names (with its event) and the scale planner
//! replaces it, and the warm pool keeps surplus runners for `scale_down_delay`. The store runs
//! on the controller's clock, so advancing it ages the rows as time does in production.

use std::time::Duration;

use scaleset_control::Settings;
use scaleset_provider::{InstanceId, InstanceStatus as ProviderStatus};
use scaleset_sim::{JobSpec, SimConfig};
use scaleset_store::{
    BootstrapReport, BootstrapStatus, Instance, InstanceAccessStore as _, InstanceStatus,
    InstanceStore as _, JobShown, ScaleSetSpec, ScaleSetStore as _,
};

use crate::helpers::{Harness, TestDb, backend_tests, eventually, settings, sim_config};

backend_tests!(
    a_failed_bootstrap_is_retired_and_replaced,
    an_instance_that_dies_is_retired_and_replaced,
    a_runner_left_offline_by_an_outage_is_retired,
    an_idle_runner_is_retired_past_max_idle_lifetime,
    max_lifetime_retires_idle_runners_and_never_a_busy_one,
    a_started_job_is_recorded_with_its_repository_and_workflow_for_the_busy_runner,
    surplus_idle_runners_stay_for_the_scale_down_delay,
    after_a_database_loss_runners_are_re_recorded_as_github_lists_them,
);

/// Leases long enough that advancing the clock never expires them; reconciliation at every
/// empty poll.
fn lifecycle_settings() -> Settings {
    Settings {
        lease_ttl: Duration::from_secs(86_400),
        reconcile_interval: Duration::from_millis(50),
        ..settings()
    }
}

/// The simulator with a job's start reported at once: these tests wait for a busy runner, and
/// the default delay before the start (GitHub's, in real time) is most of their run.
fn lifecycle_sim() -> SimConfig {
    SimConfig {
        job_started_delay: Duration::ZERO,
        ..sim_config()
    }
}

async fn harness(db: TestDb, spec: impl FnOnce(&mut ScaleSetSpec)) -> Harness {
    Harness::with_store_on_the_clock(db, lifecycle_sim(), spec).await
}

/// Waits for `count` running instances and returns them.
async fn running(h: &Harness, count: usize) -> Vec<Instance> {
    eventually("the runners are up", || async {
        let instances = h.instances().await;
        (instances.len() == count
            && instances
                .iter()
                .all(|i| i.status == InstanceStatus::Running))
        .then_some(instances)
    })
    .await
}

/// Waits until a few more polls (and so scaling passes and deadline checks) have run.
async fn a_few_polls(h: &Harness) {
    let polls = h.sim().request_count("get_message");
    eventually("a few more polls ran", || async {
        (h.sim().request_count("get_message") >= polls + 3).then_some(())
    })
    .await;
}

/// Waits until `gone` is removed from GitHub, the provider and the store, and `left` runners
/// of other names run in its place.
async fn replaced(h: &Harness, gone: &str, left: usize) {
    eventually("the runner is removed everywhere and replaced", || async {
        let instances = h.instances().await;
        let gone_store = instances.iter().all(|i| i.name != gone);
        let gone_github = h.sim().state().agents.iter().all(|a| a.name != gone);
        let gone_cloud = h.cloud.instances().iter().all(|i| i.instance.name != gone);
        let others = instances
            .iter()
            .filter(|i| i.status == InstanceStatus::Running)
            .count();
        (gone_store && gone_github && gone_cloud && others == left).then_some(())
    })
    .await;
}

async fn a_failed_bootstrap_is_retired_and_replaced(db: TestDb) {
    let h = harness(db, |spec| {
        spec.change(|r| r.min_idle = Some(i64::from(1))).unwrap();
        spec.change(|r| r.bootstrap_timeout = Some(Duration::from_secs(3600)))
            .unwrap();
    })
    .await;
    h.boot.store(false, std::sync::atomic::Ordering::SeqCst);
    let controller = h.start_with(
        Settings {
            instance_api_url: Some("http://127.0.0.1:9/".parse().unwrap()),
            ..lifecycle_settings()
        },
        None,
    );
    h.ready().await;
    let first = running(&h, 1).await.remove(0);
    a_few_polls(&h).await;
    assert!(
        h.instances().await.iter().any(|i| i.name == first.name),
        "a booting runner is kept"
    );
    // What the instance-facing callback records when cloud-init fails.
    h.store
        .report_instance_status(
            &first.name,
            BootstrapReport {
                status: BootstrapStatus::Failed,
                message: "cloud-init failed".to_owned(),
                agent_id: None,
            },
        )
        .await
        .expect("the report");
    // The clock is not advanced: the deadline (an hour away) plays no part.
    replaced(&h, &first.name, 1).await;
    assert!(h.events().await.iter().any(|k| k == "bootstrap_failed"));
    controller.stop().await;
}

async fn an_instance_that_dies_is_retired_and_replaced(db: TestDb) {
    let h = harness(db, |spec| {
        spec.change(|r| r.min_idle = Some(i64::from(1))).unwrap()
    })
    .await;
    let controller = h.start_with(lifecycle_settings(), None);
    h.ready().await;
    let first = running(&h, 1).await.remove(0);
    let id = InstanceId::new(first.provider_id.as_deref().expect("a provider id")).unwrap();
    assert!(h.cloud.kill_instance(&id, ProviderStatus::Error));
    replaced(&h, &first.name, 1).await;
    assert!(h.events().await.iter().any(|k| k == "instance_stopped"));
    controller.stop().await;
}

async fn a_runner_left_offline_by_an_outage_is_retired(db: TestDb) {
    let h = harness(db, |spec| {
        spec.change(|r| r.min_idle = Some(i64::from(1))).unwrap();
        spec.change(|r| r.bootstrap_timeout = Some(Duration::from_secs(60)))
            .unwrap();
    })
    .await;
    let controller = h.start_with(lifecycle_settings(), None);
    h.ready().await;
    let first = running(&h, 1).await.remove(0);
    // Past its deadline and online: kept.
    h.clock.advance(Duration::from_secs(120));
    a_few_polls(&h).await;
    a_few_polls(&h).await;
    assert!(h.instances().await.iter().any(|i| i.name == first.name));
    // Its machine dies in an outage: GitHub lists it offline.
    let agent = first.github_runner_id.expect("a runner id");
    h.sim().disconnect_runner(agent).expect("disconnect");
    replaced(&h, &first.name, 1).await;
    assert!(h.events().await.iter().any(|k| k == "runner_offline"));
    controller.stop().await;
}

async fn an_idle_runner_is_retired_past_max_idle_lifetime(db: TestDb) {
    let h = harness(db, |spec| {
        spec.change(|r| r.min_idle = Some(i64::from(1))).unwrap();
        spec.change(|r| r.max_idle_lifetime = Some(Duration::from_secs(600)))
            .unwrap();
    })
    .await;
    let controller = h.start_with(lifecycle_settings(), None);
    h.ready().await;
    let first = running(&h, 1).await.remove(0);
    h.clock.advance(Duration::from_secs(300));
    a_few_polls(&h).await;
    assert!(h.instances().await.iter().any(|i| i.name == first.name));
    h.clock.advance(Duration::from_secs(400));
    replaced(&h, &first.name, 1).await;
    assert!(h.events().await.iter().any(|k| k == "max_idle_lifetime"));
    controller.stop().await;
}

async fn max_lifetime_retires_idle_runners_and_never_a_busy_one(db: TestDb) {
    let h = harness(db, |spec| {
        spec.change(|r| r.min_idle = Some(i64::from(1))).unwrap();
        spec.change(|r| r.max_lifetime = Some(Duration::from_secs(600)))
            .unwrap();
    })
    .await;
    let controller = h.start_with(lifecycle_settings(), None);
    let github_id = h.ready().await;
    running(&h, 1).await;
    h.sim()
        .enqueue_jobs(
            github_id,
            &JobSpec {
                run_seconds: Some(3600.0),
                ..JobSpec::count(1)
            },
        )
        .expect("enqueue");
    let (busy, idle) = eventually("one runner runs the job, one idles", || async {
        let instances = h.instances().await;
        let busy = instances
            .iter()
            .find(|i| i.status == InstanceStatus::Busy)?;
        let idle = instances
            .iter()
            .find(|i| i.status == InstanceStatus::Running)?;
        (instances.len() == 2).then(|| (busy.name.clone(), idle.name.clone()))
    })
    .await;
    h.clock.advance(Duration::from_secs(700));
    replaced(&h, &idle, 1).await;
    assert!(h.events().await.iter().any(|k| k == "max_lifetime"));
    // The busy one, as old, runs on.
    a_few_polls(&h).await;
    assert!(
        h.instances()
            .await
            .iter()
            .any(|i| i.name == busy && i.status == InstanceStatus::Busy)
    );
    assert!(h.sim().state().agents.iter().any(|a| a.name == busy));
    assert_eq!(h.job_states(github_id), ["running"]);
    controller.stop().await;
}

/// Issue 51 item 8: the status page names the job a busy runner runs, from what GitHub's
/// `JobStarted` carried.
async fn a_started_job_is_recorded_with_its_repository_and_workflow_for_the_busy_runner(
    db: TestDb,
) {
    let h = harness(db, |_| {}).await;
    let controller = h.start_with(lifecycle_settings(), None);
    let github_id = h.ready().await;
    let workflow = "octo/app/.github/workflows/ci.yml@refs/heads/main";
    h.sim()
        .enqueue_jobs(
            github_id,
            &JobSpec {
                repository: Some("app".to_owned()),
                owner: Some("octo".to_owned()),
                workflow_ref: Some(workflow.to_owned()),
                run_seconds: Some(3600.0),
                ..JobSpec::count(1)
            },
        )
        .expect("enqueue");
    let jobs = eventually("the busy runner's job is recorded", || async {
        let busy = h
            .instances()
            .await
            .into_iter()
            .find(|i| i.status == InstanceStatus::Busy)?;
        let jobs = h
            .store
            .list_instance_jobs(h.scale_set.id)
            .await
            .expect("jobs");
        jobs.iter()
            .any(|(name, _)| *name == busy.name)
            .then_some(jobs)
    })
    .await;
    assert_eq!(jobs.len(), 1, "{jobs:?}");
    assert_eq!(
        jobs[0].1,
        JobShown {
            repository: Some("octo/app".to_owned()),
            workflow: Some(workflow.to_owned()),
        }
    );
    controller.stop().await;
}

async fn surplus_idle_runners_stay_for_the_scale_down_delay(db: TestDb) {
    let h = harness(db, |spec| {
        spec.change(|r| r.min_idle = Some(i64::from(2))).unwrap();
        spec.change(|r| r.scale_down_delay = Some(Duration::from_secs(600)))
            .unwrap();
    })
    .await;
    let controller = h.start_with(lifecycle_settings(), None);
    h.ready().await;
    let warm = running(&h, 2).await;
    // The burst is over: nothing more is wanted.
    let mut row = h.stored().await;
    row.spec
        .change(|r| r.min_idle = Some(i64::from(0)))
        .unwrap();
    h.store.update_scale_set(&row).await.expect("update");
    h.ready().await;
    a_few_polls(&h).await;
    a_few_polls(&h).await;
    assert_eq!(h.instances().await.len(), 2, "kept warm for the delay");
    h.clock.advance(Duration::from_secs(601));
    eventually("the surplus is retired after the delay", || async {
        let gone = h.instances().await.is_empty()
            && h.cloud.instances().is_empty()
            && warm
                .iter()
                .all(|w| h.sim().state().agents.iter().all(|a| a.name != w.name));
        gone.then_some(())
    })
    .await;
    controller.stop().await;
}

async fn after_a_database_loss_runners_are_re_recorded_as_github_lists_them(db: TestDb) {
    let mut h = Harness::new(db, lifecycle_sim(), |spec| {
        spec.change(|r| r.min_idle = Some(i64::from(1))).unwrap()
    })
    .await;
    let (controller, github_id) = h.start_ready().await;
    running(&h, 1).await;
    h.sim()
        .enqueue_jobs(
            github_id,
            &JobSpec {
                run_seconds: Some(3600.0),
                ..JobSpec::count(1)
            },
        )
        .expect("enqueue");
    let before = eventually("one runner runs the job, one idles", || async {
        let instances = h.instances().await;
        let busy = instances
            .iter()
            .find(|i| i.status == InstanceStatus::Busy)?;
        let idle = instances
            .iter()
            .find(|i| i.status == InstanceStatus::Running)?;
        (instances.len() == 2).then(|| (busy.name.clone(), idle.name.clone()))
    })
    .await;
    // A clean stop leaves the runners running and deletes the session; then the database is
    // lost.
    controller.stop().await;
    let fresh = h.another_db("rerecord").await;
    h.wipe_store(fresh, |spec| {
        spec.change(|r| r.min_idle = Some(i64::from(1))).unwrap()
    })
    .await;
    let (controller, again) = h.start_ready().await;
    assert_eq!(again, github_id, "the same scale set, adopted");
    let after = eventually("both runners are recorded again", || async {
        let instances = h.instances().await;
        let busy = instances
            .iter()
            .find(|i| i.status == InstanceStatus::Busy)?;
        let idle = instances
            .iter()
            .find(|i| i.status == InstanceStatus::Running)?;
        (instances.len() == 2).then(|| (busy.name.clone(), idle.name.clone()))
    })
    .await;
    assert_eq!(after, before, "busy as GitHub lists it busy, idle as idle");
    // The event follows the row's write.
    eventually("both re-recordings are events", || async {
        let count = h
            .occurrences(scaleset_store::ReasonCode::InstanceRerecorded)
            .await;
        (count == 2).then_some(())
    })
    .await;
    a_few_polls(&h).await;
    assert_eq!(h.created.lock().unwrap().len(), 2, "nothing created anew");
    assert_eq!(h.job_states(github_id), ["running"]);
    controller.stop().await;
}
