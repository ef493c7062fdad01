//! Issue 33 item 3, provider failures contained: a provider whose creates or deletes keep
//! failing is backed off per scale set, the set is shown as needing attention with the
//! provider's own message while it keeps listening, and an instance whose delete failed stays
//! `deleting` in the store until it is gone, also across a restart. The back-off itself (the
//! jittered wait, when to flag, the count of calls over a minute) is the planner's
//! (`crates/plan/src/provider_backoff/tests.rs`).

use std::time::Duration;

use scaleset_sim::JobSpec;
use scaleset_store::{InstanceStatus, ScaleSetState, ScaleSetStore as _};

use crate::helpers::{Harness, TestDb, backend_tests, eventually, settings, sim_config};

backend_tests!(
    a_failing_create_flags_the_set_with_the_providers_message_and_clears_after,
    a_backing_off_provider_is_not_called_again_however_often_the_task_wakes,
    a_failed_delete_is_retried_until_the_instance_is_gone,
    an_instance_to_delete_survives_a_restart_and_is_deleted_after_it,
    a_retry_request_ends_the_provider_back_off_at_once,
);

/// The provider's own words, as the fake provider fails.
const INJECTED_CREATE: &str = "fake provider: injected create failure";

async fn a_failing_create_flags_the_set_with_the_providers_message_and_clears_after(db: TestDb) {
    let h = Harness::new(db, sim_config(), |_| {}).await;
    let (controller, github_id) = h.start_ready().await;
    h.cloud.fail_creates(usize::MAX);
    h.sim()
        .enqueue_jobs(github_id, &JobSpec::count(1))
        .expect("enqueue");
    let reason = eventually(
        "the set needs attention with the provider's message",
        || async {
            let stored = h.stored().await;
            (stored.state.needs_attention() && stored.state_reason.contains(INJECTED_CREATE))
                .then_some(stored.state_reason)
        },
    )
    .await;
    assert!(reason.contains("\"fake\""), "names the provider: {reason}");
    assert!(
        reason.contains("in a row"),
        "says it keeps failing: {reason}"
    );
    // The state is written before its event (`record`): wait for the event too.
    eventually("the provider_failing event", || async {
        h.events()
            .await
            .iter()
            .any(|e| e == "provider_failing")
            .then_some(())
    })
    .await;
    assert_eq!(h.stored().await.state, ScaleSetState::Error);
    assert!(
        h.sim()
            .state()
            .scale_set(github_id)
            .and_then(|s| s.session.as_ref())
            .is_some(),
        "the set keeps its session while its provider fails"
    );
    assert!(h.cloud.instances().is_empty());
    // Nothing is left of the failed attempts but rows to delete, none on GitHub.
    eventually("no runner is left registered", || async {
        h.sim().state().agents.is_empty().then_some(())
    })
    .await;

    h.cloud.fail_creates(0);
    eventually("the job runs once the provider answers", || async {
        h.job_states(github_id)
            .iter()
            .all(|s| s == "running")
            .then_some(())
    })
    .await;
    eventually("the flag is cleared", || async {
        let stored = h.stored().await;
        (stored.state == ScaleSetState::Ready).then_some(())
    })
    .await;
    // The state is written before its event (`record`): wait for the event too.
    eventually("the provider_recovered event", || async {
        h.events()
            .await
            .iter()
            .any(|e| e == "provider_recovered")
            .then_some(())
    })
    .await;
    h.finish_jobs(github_id, 1).await;
    controller.stop().await;
}

async fn a_backing_off_provider_is_not_called_again_however_often_the_task_wakes(db: TestDb) {
    let h = Harness::new(db, sim_config(), |_| {}).await;
    let mut backing_off = settings();
    // A wait longer than the test: every create after the first would be a hot loop.
    backing_off.provider_backoff_base = Duration::from_secs(3600);
    backing_off.provider_backoff_max = Duration::from_secs(3600);
    backing_off.provider_failures_flagged = 1;
    let controller = h.start_with(backing_off, None);
    let github_id = h.ready().await;
    h.cloud.fail_creates(usize::MAX);
    h.sim()
        .enqueue_jobs(github_id, &JobSpec::count(1))
        .expect("enqueue");
    eventually("the first failure flags the set", || async {
        h.stored()
            .await
            .state_reason
            .contains(INJECTED_CREATE)
            .then_some(())
    })
    .await;
    assert_eq!(h.cloud.create_calls(), 1);
    // Wake the task many times: polls end, and more jobs arrive with their messages.
    let polls = h.sim().request_count("get_message");
    h.sim()
        .enqueue_jobs(github_id, &JobSpec::count(2))
        .expect("enqueue");
    eventually("twenty more polls", || async {
        (h.sim().request_count("get_message") >= polls + 20).then_some(())
    })
    .await;
    assert_eq!(
        h.cloud.create_calls(),
        1,
        "no create while the provider backs off"
    );
    assert!(h.stored().await.state.needs_attention());
    controller.stop().await;
}

async fn a_failed_delete_is_retried_until_the_instance_is_gone(db: TestDb) {
    let h = Harness::new(db, sim_config(), |_| {}).await;
    let (controller, github_id) = h.start_ready().await;
    h.sim()
        .enqueue_jobs(github_id, &JobSpec::count(1))
        .expect("enqueue");
    eventually("the job runs", || async {
        h.job_states(github_id)
            .iter()
            .all(|s| s == "running")
            .then_some(())
    })
    .await;
    h.cloud.fail_deletes(4);
    h.sim().advance(Duration::from_secs(60));
    eventually(
        "the instance is deleted after its deletes failed",
        || async {
            let clean = h.cloud.instances().is_empty() && h.instances().await.is_empty();
            clean.then_some(())
        },
    )
    .await;
    assert_eq!(
        h.cloud.delete_calls(),
        5,
        "four failures, then the delete that worked"
    );
    assert!(h.sim().state().agents.is_empty());
    controller.stop().await;
}

async fn an_instance_to_delete_survives_a_restart_and_is_deleted_after_it(db: TestDb) {
    let h = Harness::new(db, sim_config(), |_| {}).await;
    let mut backing_off = settings();
    backing_off.provider_backoff_base = Duration::from_secs(3600);
    backing_off.provider_backoff_max = Duration::from_secs(3600);
    let controller = h.start_with(backing_off, None);
    let github_id = h.ready().await;
    h.sim()
        .enqueue_jobs(github_id, &JobSpec::count(1))
        .expect("enqueue");
    eventually("the job runs", || async {
        h.job_states(github_id)
            .iter()
            .all(|s| s == "running")
            .then_some(())
    })
    .await;
    h.cloud.fail_deletes(usize::MAX);
    h.sim().advance(Duration::from_secs(60));
    let left = eventually("the instance is kept as to delete", || async {
        let rows = h.instances().await;
        (rows.len() == 1 && rows[0].status == InstanceStatus::Deleting).then(|| rows[0].clone())
    })
    .await;
    assert_eq!(h.cloud.instances().len(), 1, "its machine is still there");
    assert!(h.sim().state().agents.is_empty(), "its runner is gone");
    controller.stop().await;

    h.cloud.fail_deletes(0);
    let controller = h.start(None);
    eventually("deleted after the restart", || async {
        let clean = h.cloud.instances().is_empty() && h.instances().await.is_empty();
        clean.then_some(())
    })
    .await;
    assert!(
        h.events()
            .await
            .iter()
            .all(|e| e != "orphan_instance_deleted"),
        "deleted as the recorded row {}, not found again as an orphan",
        left.name
    );
    controller.stop().await;
}

/// An operator's "retry now" (`scalesetctl scale-set retry`, which writes the request in the
/// store as the API does) reaches the worker's supervisor through the store, ends the set's
/// provider back-off and wakes it: with an hour's back-off, the recovered provider is called
/// again at once, the job runs and the flag clears; without the request nothing is tried.
async fn a_retry_request_ends_the_provider_back_off_at_once(db: TestDb) {
    let h = Harness::new(db, sim_config(), |_| {}).await;
    let mut backing_off = settings();
    backing_off.provider_backoff_base = Duration::from_secs(3600);
    backing_off.provider_backoff_max = Duration::from_secs(3600);
    backing_off.provider_failures_flagged = 1;
    let controller = h.start_with(backing_off, None);
    let github_id = h.ready().await;
    h.cloud.fail_creates(usize::MAX);
    h.sim()
        .enqueue_jobs(github_id, &JobSpec::count(1))
        .expect("enqueue");
    eventually("the first failure flags the set", || async {
        (h.stored().await.state == ScaleSetState::Error).then_some(())
    })
    .await;
    assert_eq!(h.cloud.create_calls(), 1);
    // The provider is back, but the set backs off for an hour: polls come and go, no create.
    h.cloud.fail_creates(0);
    let polls = h.sim().request_count("get_message");
    eventually("ten more polls", || async {
        (h.sim().request_count("get_message") >= polls + 10).then_some(())
    })
    .await;
    assert_eq!(
        h.cloud.create_calls(),
        1,
        "the back-off holds without a request"
    );

    h.store
        .request_retry(h.scale_set.id)
        .await
        .expect("request a retry");
    eventually("the job runs once retried", || async {
        h.job_states(github_id)
            .iter()
            .all(|s| s == "running")
            .then_some(())
    })
    .await;
    assert_eq!(h.cloud.create_calls(), 2, "one create after the request");
    eventually("the flag is cleared", || async {
        (h.stored().await.state == ScaleSetState::Ready).then_some(())
    })
    .await;
    h.finish_jobs(github_id, 1).await;
    controller.stop().await;
}
