//! Orphaned pools (issue 36, found by the chaos soak's seeds 102 and 12): GitHub deletes a
//! scale set of ours while its runners run jobs, and the database is lost before the
//! superseded-instance cleanup ran, so no row names the old pool key any more. The restarted
//! worker finds the old pool at the provider, proves its scale set gone on every stored
//! entity, leaves each machine whose runner is still busy until its job ends, and then deletes
//! it; another controller's pool with the same id, and a pool of ours whose id is a live scale
//! set on the entity (not provably gone), are never touched.

use std::time::Duration;

use scaleset_control::pool_key;
use scaleset_sim::JobSpec;
use scaleset_store::ScaleSetState;
use uuid::Uuid;

use crate::helpers::{Harness, TestDb, backend_tests, eventually, settings, sim_config};

backend_tests!(orphaned_pools_are_deleted_only_when_ours_gone_on_every_entity_and_idle);

async fn orphaned_pools_are_deleted_only_when_ours_gone_on_every_entity_and_idle(db: TestDb) {
    let mut settings = settings();
    settings.reconcile_interval = Duration::from_millis(200);
    let mut config = sim_config();
    config.job_started_delay = Duration::ZERO;
    let mut h = Harness::new(db, config, |_| {}).await;
    let controller = h.start_with(settings.clone(), None);
    let first = h.ready().await;
    h.sim()
        .enqueue_jobs(first, &JobSpec::count(2))
        .expect("enqueue");
    let old_key = h.identity.pool_key(first);
    eventually("both jobs run on runners of the first set", || async {
        let running = h
            .job_states(first)
            .iter()
            .filter(|s| *s == "running")
            .count();
        let machines = h
            .cloud
            .instances()
            .iter()
            .filter(|i| i.pool == old_key)
            .count();
        (running == 2 && machines == 2).then_some(())
    })
    .await;

    // Killed before any cleanup; GitHub deletes the set (its runners stay registered, busy);
    // the database is lost.
    controller.crash().await;
    h.sim()
        .delete_scale_set_keeping_runners(first)
        .expect("GitHub deletes the set");
    let fresh = h.another_db("orphans_after_wipe").await;
    h.wipe_store(fresh, |_| {}).await;

    // Not ours: another controller's pool under the same GitHub id.
    let theirs = Uuid::from_u128(0xf0e1_9a2b);
    h.cloud.plant(theirs, pool_key(theirs, first), "theirs-1");
    // Not provably gone: a pool of ours whose id is a scale set on the entity (no record of
    // it after the wipe, no owner label either way).
    let live = h
        .sim()
        .seed_scale_set("acme", 1, "someone-elses", &[])
        .expect("seed");
    let live_key = h.identity.pool_key(live);
    h.cloud
        .plant(h.identity.id(), live_key.clone(), "linux-live0001");

    let controller = h.start_with(settings, None);
    let second = eventually("a new scale set is ensured", || async {
        let stored = h.stored().await;
        let id = stored.github_id.filter(|id| *id != first)?;
        (stored.state == ScaleSetState::Ready).then_some(id)
    })
    .await;
    assert_ne!(second, first);

    // The old machines' runners are busy: the sweep has run (the unprovable pool is still
    // there, judged by it) and they are kept.
    let sweeps_before = h.sim().request_count("get_scale_set");
    eventually("the sweep has looked at the old pools", || async {
        (h.sim().request_count("get_scale_set") >= sweeps_before + 4).then_some(())
    })
    .await;
    let old = || {
        h.cloud
            .instances()
            .iter()
            .filter(|i| i.pool == old_key)
            .count()
    };
    assert_eq!(old(), 2, "a machine whose runner is busy is kept");

    // The jobs end and the runners deregister: the old machines go, the others stay.
    h.sim().advance(Duration::from_secs(60));
    eventually("the old pool's instances are deleted", || async {
        (old() == 0).then_some(())
    })
    .await;
    let left: Vec<(Uuid, String, String)> = h
        .cloud
        .instances()
        .into_iter()
        .map(|i| (i.controller_id, i.pool.as_str().to_owned(), i.instance.name))
        .collect();
    assert!(
        left.contains(&(
            theirs,
            pool_key(theirs, first).as_str().to_owned(),
            "theirs-1".to_owned()
        )),
        "another controller's pool is untouched: {left:?}"
    );
    assert!(
        left.contains(&(
            h.identity.id(),
            live_key.as_str().to_owned(),
            "linux-live0001".to_owned()
        )),
        "a pool whose scale set exists is untouched: {left:?}"
    );
    assert!(
        h.sim().state().scale_set(live).is_some(),
        "the live scale set is untouched"
    );
    controller.stop().await;
}
