//! Draining a disabled scale set (issue 29 item 6) and picking up a record an interrupted
//! create left behind (item 7): the supervisor keeps reconciling the instances of a scale set
//! it no longer serves until none is left, and ensures a record an older server stored
//! disabled and never finished.

use std::time::Duration;

use scaleset_sim::JobSpec;
use scaleset_store::{
    EventStore as _, InstanceStatus, LeaseStore as _, ScaleSetState, ScaleSetStore as _,
};

use crate::helpers::{Harness, TestDb, backend_tests, eventually, sim_config};

backend_tests!(
    a_disabled_set_retires_idle_runners_and_lets_busy_ones_finish,
    a_record_an_interrupted_create_left_is_ensured
);

async fn a_disabled_set_retires_idle_runners_and_lets_busy_ones_finish(db: TestDb) {
    let mut config = sim_config();
    // Busy is seen at once, and jobs run until the test ends them.
    config.job_started_delay = Duration::ZERO;
    config.runner_job_duration = Duration::from_secs(3600);
    let h = Harness::new(db, config, |spec| {
        spec.change(|r| r.min_idle = Some(i64::from(2))).unwrap()
    })
    .await;
    let (controller, github_id) = h.start_ready().await;
    h.sim()
        .enqueue_jobs(github_id, &JobSpec::count(2))
        .expect("enqueue");
    eventually("two jobs run beside two idle runners", || async {
        let states = h.job_states(github_id);
        let running = states.iter().filter(|s| *s == "running").count();
        let instances = h.instances().await;
        let busy = instances
            .iter()
            .filter(|i| i.status == InstanceStatus::Busy)
            .count();
        (running == 2 && instances.len() == 4 && busy == 2).then_some(())
    })
    .await;

    // Drained (disabled): the serving stops, and the idle runners are retired while the busy
    // ones run on.
    let mut stored = h.stored().await;
    stored.spec.set_enabled(false);
    h.store.update_scale_set(&stored).await.expect("disable");
    // Until the pass has said so too: a pass removes its runners one by one, and the rows can
    // show only the busy two while that pass is still going through the list. Time moved on in
    // that moment ends the jobs, the same pass removes the busy two as well, and "draining" is
    // never written (seen under load).
    eventually("only the busy runners are left", || async {
        let instances = h.instances().await;
        let all_busy = instances.iter().all(|i| i.status == InstanceStatus::Busy);
        let session = h.sim().state().scale_set(github_id)?.session.clone();
        let said = h.events().await.iter().any(|e| e == "draining");
        (instances.len() == 2
            && all_busy
            && h.cloud.instances().len() == 2
            && session.is_none()
            && said)
            .then_some(())
    })
    .await;
    assert!(
        h.job_states(github_id).iter().all(|s| s == "running"),
        "busy runners are left to finish"
    );

    // Their jobs end; with no listener to hear it, the records are still reconciled: the
    // runners are gone, so are their instances, and the lease is let go for a delete.
    h.sim().advance(Duration::from_secs(3700));
    eventually("the drained set has nothing left and no holder", || async {
        let done = h.job_states(github_id).iter().all(|s| s == "completed");
        let clean = h.instances().await.is_empty()
            && h.cloud.instances().is_empty()
            && h.sim().state().agents.is_empty();
        let lease = h.store.get_lease(h.scale_set.id).await.expect("lease")?;
        let now = scaleset_store::Timestamp::from_system_time(std::time::SystemTime::now());
        (done && clean && lease.expires_at <= now).then_some(())
    })
    .await;
    let events = h.events().await;
    assert!(
        events.iter().any(|e| e == "draining") && events.first().is_some_and(|e| e == "drained"),
        "{events:?}"
    );
    let stored = h.stored().await;
    h.store
        .delete_scale_set(stored.id, stored.generation)
        .await
        .expect("a drained scale set can be deleted");
    controller.stop().await;
}

async fn a_record_an_interrupted_create_left_is_ensured(db: TestDb) {
    // What an older server's create stored before it ensured: disabled, pending, generation
    // 1, no event. Its request never finished.
    let h = Harness::new(db, sim_config(), |spec| spec.set_enabled(false)).await;
    assert_eq!(h.stored().await.generation, 1);
    let controller = h.start(None);
    let github_id = h.ready().await;
    let stored = h.stored().await;
    assert!(stored.spec.enabled(), "{stored:?}");
    assert_eq!(stored.state, ScaleSetState::Ready);
    assert_eq!(
        h.sim().state().scale_set(github_id).map(|s| s.name.clone()),
        Some("linux".to_owned())
    );
    let events = h
        .store
        .list_events(h.scale_set.id, 50)
        .await
        .expect("events");
    assert!(
        events
            .iter()
            .any(|e| e.code == scaleset_store::ReasonCode::Resumed),
        "{events:?}"
    );
    controller.stop().await;
}
