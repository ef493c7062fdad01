//! Issue 35 item 3 (idle CPU): an empty poll stands on the scale set's last instance list
//! while nothing changed and nothing came due (`planner::idle`), and the rules of the rows
//! still act when their time comes or a write from outside the worker asks. The store runs on
//! the controller's clock, so advancing it ages the rows; the reconciliation (which lists too)
//! is not due within a test, so only the idle planner's due moments can make a poll list.

use std::sync::atomic::Ordering;
use std::time::Duration;

use scaleset_control::Settings;
use scaleset_store::{Instance, InstanceStatus, InstanceStore as _, ScaleSetSpec};

use crate::helpers::{
    Harness, RunningController, TestDb, backend_tests, eventually, settings, sim_config,
};

backend_tests!(
    an_idle_scale_set_stands_on_its_list_over_empty_polls,
    a_runner_past_max_idle_lifetime_is_retired_while_the_polls_stand,
    a_runner_past_its_bootstrap_deadline_is_removed_while_the_polls_stand,
    an_operators_removal_request_ends_the_standing_list,
);

/// Leases long enough that advancing the clock never expires them; the periodic
/// reconciliation not due within a test.
fn idle_settings() -> Settings {
    Settings {
        lease_ttl: Duration::from_secs(86_400),
        reconcile_interval: Duration::from_secs(3600),
        instance_list_max_age: Duration::from_secs(86_400),
        ..settings()
    }
}

async fn harness(db: TestDb, spec: impl FnOnce(&mut ScaleSetSpec)) -> Harness {
    Harness::with_store_on_the_clock(db, sim_config(), spec).await
}

/// The empty polls that stood on the last list so far.
fn reused(controller: &RunningController) -> u64 {
    controller.metrics.instance_lists_reused.get()
}

/// Waits until `more` further empty polls stood on the last list.
async fn standing(controller: &RunningController, more: u64) {
    let from = reused(controller);
    eventually("empty polls stand on the last list", || async {
        (reused(controller) >= from + more).then_some(())
    })
    .await;
}

/// Waits for one running instance and returns it.
async fn one_running(h: &Harness) -> Instance {
    eventually("one idle runner is kept warm", || async {
        let mut instances = h.instances().await;
        (instances.len() == 1 && instances[0].status == InstanceStatus::Running)
            .then(|| instances.remove(0))
    })
    .await
}

/// Waits until `gone` is removed from GitHub, the provider and the store, and another runner
/// runs in its place.
async fn replaced(h: &Harness, gone: &str) {
    eventually("the runner is removed everywhere and replaced", || async {
        let instances = h.instances().await;
        let replaced = instances.len() == 1
            && instances[0].name != gone
            && instances[0].status == InstanceStatus::Running;
        let gone_github = h.sim().state().agents.iter().all(|a| a.name != gone);
        let gone_cloud = h.cloud.instances().iter().all(|i| i.instance.name != gone);
        (replaced && gone_github && gone_cloud).then_some(())
    })
    .await;
}

async fn an_idle_scale_set_stands_on_its_list_over_empty_polls(db: TestDb) {
    let h = harness(db, |_| {}).await;
    let controller = h.start_with(idle_settings(), None);
    let github_id = h.ready().await;
    // Past the start (its first passes list: the recovery's landing, the first
    // reconciliation).
    standing(&controller, 1).await;
    let (stood, polls) = (reused(&controller), h.sim().request_count("get_message"));
    standing(&controller, 10).await;
    let polls = h.sim().request_count("get_message") - polls;
    let stood = reused(&controller) - stood;
    // Every empty poll but the ones at the window's edges (a poll answered and not yet
    // handled, one held) stood on the list: none listed the rows.
    assert!(
        polls <= stood + 3,
        "{polls} polls answered, only {stood} stood on the list"
    );
    // A job still reaches a runner: a message is not an empty poll, and its writes end the
    // standing list.
    h.serve_jobs(github_id, 1).await;
    standing(&controller, 3).await;
    controller.stop().await;
}

async fn a_runner_past_max_idle_lifetime_is_retired_while_the_polls_stand(db: TestDb) {
    let h = harness(db, |spec| {
        spec.change(|r| r.min_idle = Some(i64::from(1))).unwrap();
        spec.change(|r| r.max_idle_lifetime = Some(Duration::from_secs(600)))
            .unwrap();
    })
    .await;
    let controller = h.start_with(idle_settings(), None);
    h.ready().await;
    let first = one_running(&h).await;
    standing(&controller, 3).await;
    h.clock.advance(Duration::from_secs(300));
    standing(&controller, 3).await;
    assert!(
        h.instances().await.iter().any(|i| i.name == first.name),
        "not idle long enough yet"
    );
    h.clock.advance(Duration::from_secs(400));
    replaced(&h, &first.name).await;
    assert!(h.events().await.iter().any(|k| k == "max_idle_lifetime"));
    // The replacement's list stands again.
    standing(&controller, 3).await;
    controller.stop().await;
}

async fn a_runner_past_its_bootstrap_deadline_is_removed_while_the_polls_stand(db: TestDb) {
    let h = harness(db, |spec| {
        spec.change(|r| r.min_idle = Some(i64::from(1))).unwrap();
        spec.change(|r| r.bootstrap_timeout = Some(Duration::from_secs(300)))
            .unwrap();
    })
    .await;
    // The runner never comes online.
    h.boot.store(false, Ordering::SeqCst);
    let controller = h.start_with(idle_settings(), None);
    h.ready().await;
    let first = one_running(&h).await;
    standing(&controller, 3).await;
    h.clock.advance(Duration::from_secs(200));
    standing(&controller, 3).await;
    assert!(h.instances().await.iter().any(|i| i.name == first.name));
    h.clock.advance(Duration::from_secs(200));
    eventually("the late runner is removed everywhere", || async {
        let gone_store = h.instances().await.iter().all(|i| i.name != first.name);
        let gone_github = h.sim().state().agents.iter().all(|a| a.name != first.name);
        let gone_cloud = h
            .cloud
            .instances()
            .iter()
            .all(|i| i.instance.name != first.name);
        (gone_store && gone_github && gone_cloud).then_some(())
    })
    .await;
    assert!(h.events().await.iter().any(|k| k == "bootstrap_timeout"));
    controller.stop().await;
}

async fn an_operators_removal_request_ends_the_standing_list(db: TestDb) {
    let h = harness(db, |spec| {
        spec.change(|r| r.min_idle = Some(i64::from(1))).unwrap()
    })
    .await;
    let controller = h.start_with(idle_settings(), None);
    h.ready().await;
    let first = one_running(&h).await;
    standing(&controller, 3).await;
    // The server's write (it holds no lease): the only write to the rows from outside.
    h.store.request_instance_removal(&first.name).await.unwrap();
    replaced(&h, &first.name).await;
    controller.stop().await;
}
