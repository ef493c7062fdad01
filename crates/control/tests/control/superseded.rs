//! A scale set GitHub deleted while its runners ran jobs (issue 29 item 4): the worker ensures
//! a new one, whose instances carry a new pool key. The old set's rows cannot serve the new
//! set: they stop counting (as busy or idle, in the scaler and the metrics) at once, so the new
//! set gets runners for its jobs, and they are retired, the old pool key's instances deleted,
//! once their runners are gone from GitHub. GitHub may delete the runners with the set or leave
//! them registered (unverified): both are run.

use std::time::Duration;

use scaleset_control::StatusLabel;
use scaleset_sim::JobSpec;
use scaleset_store::{InstanceStatus, ScaleSetState};

use crate::helpers::{Harness, TestDb, backend_tests, eventually, settings, sim_config};

backend_tests!(
    a_set_deleted_with_its_runners_left_registered_is_served_again,
    a_set_deleted_with_its_runners_is_served_again,
);

async fn deleted_while_busy(db: TestDb, keep_runners: bool) {
    let mut settings = settings();
    // The old instances are cleaned at a reconciliation after their runners left.
    settings.reconcile_interval = Duration::from_millis(200);
    let mut config = sim_config();
    // A started job marks its runner busy at once.
    config.job_started_delay = Duration::ZERO;
    let h = Harness::new(db, config, |_| {}).await;
    let controller = h.start_with(settings, None);
    let first = h.ready().await;
    let busy = || {
        controller
            .metrics
            .runners
            .get_or_create(&StatusLabel {
                status: "busy".to_owned(),
            })
            .get()
    };
    h.sim()
        .enqueue_jobs(first, &JobSpec::count(2))
        .expect("enqueue");
    eventually("both jobs run on busy runners", || async {
        let running = h
            .job_states(first)
            .iter()
            .filter(|s| *s == "running")
            .count();
        let instances = h.instances().await;
        let busy_rows = instances
            .iter()
            .filter(|i| i.status == InstanceStatus::Busy)
            .count();
        (running == 2 && busy_rows == 2 && busy() == 2).then_some(())
    })
    .await;

    let old_key = h.identity.pool_key(first);
    if keep_runners {
        h.sim()
            .delete_scale_set_keeping_runners(first)
            .expect("GitHub deletes the set and leaves its runners");
        assert_eq!(
            h.sim().state().agents.len(),
            2,
            "the runners stay registered"
        );
    } else {
        h.sim().delete_scale_set(first).expect("GitHub deletes it");
        // The first delete of an old instance fails: tried again later, the new set served
        // meanwhile.
        h.cloud.fail_deletes(1);
    }
    let second = eventually("a new scale set is ensured", || async {
        let stored = h.stored().await;
        let id = stored.github_id.filter(|id| *id != first)?;
        (stored.state == ScaleSetState::Ready).then_some(id)
    })
    .await;
    assert_eq!(h.ready().await, second);
    let new_key = h.identity.pool_key(second);

    eventually("the old rows count as neither busy nor idle", || async {
        let instances = h.instances().await;
        let counted = instances.iter().any(|i| {
            i.pool_key == old_key.as_str()
                && matches!(i.status, InstanceStatus::Busy | InstanceStatus::Running)
        });
        (!counted && busy() == 0).then_some(())
    })
    .await;
    if keep_runners {
        // Their runners still run jobs: the machines are left to finish them.
        let old = h
            .cloud
            .instances()
            .iter()
            .filter(|i| i.pool == old_key)
            .count();
        assert_eq!(old, 2, "a machine is kept while its runner is registered");
    }

    h.sim()
        .enqueue_jobs(second, &JobSpec::count(2))
        .expect("enqueue");
    eventually("the new set's jobs run on its own runners", || async {
        let running = h
            .job_states(second)
            .iter()
            .filter(|s| *s == "running")
            .count();
        let new_rows = h
            .instances()
            .await
            .iter()
            .filter(|i| i.pool_key == new_key.as_str() && i.status == InstanceStatus::Busy)
            .count();
        (running == 2 && new_rows == 2).then_some(())
    })
    .await;

    // Every runner ends its job and deregisters: nothing of either set is left.
    h.sim().advance(Duration::from_secs(60));
    eventually("the old pool key's instances are cleaned", || async {
        let done = h.job_states(second).iter().all(|s| s == "completed");
        let clean = h.cloud.instances().is_empty()
            && h.instances().await.is_empty()
            && h.sim().state().agents.is_empty();
        // Each old instance's retirement is on the record, so an operator sees where it went.
        let retired = h
            .occurrences(scaleset_store::ReasonCode::SupersededInstanceDeleted)
            .await;
        (done && clean && retired == 2 && busy() == 0).then_some(())
    })
    .await;
    assert_eq!(h.created.lock().unwrap().len(), 4, "two runners per set");
    controller.stop().await;
}

async fn a_set_deleted_with_its_runners_left_registered_is_served_again(db: TestDb) {
    deleted_while_busy(db, true).await;
}

async fn a_set_deleted_with_its_runners_is_served_again(db: TestDb) {
    deleted_while_busy(db, false).await;
}
