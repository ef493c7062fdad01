//! The supervisor: one task per enabled scale set; a failing scale set never stops another;
//! tasks start and stop as scale sets are added, disabled and deleted.

use std::time::Duration;

use scaleset_sim::JobSpec;
use scaleset_store::{NewScaleSet, ScaleSetState, ScaleSetStore as _};

use crate::helpers::{Harness, TestDb, backend_tests, eventually, sim_config};

backend_tests!(one_failing_scale_set_never_stops_another);

async fn one_failing_scale_set_never_stops_another(db: TestDb) {
    let h = Harness::new(db, sim_config(), |_| {}).await;
    let (controller, github_id) = h.start_ready().await;

    // A second scale set naming a provider nobody configured.
    let mut spec = h.scale_set.spec.clone();
    spec.change(|r| r.name = Some("windows".into())).unwrap();
    spec.change(|r| r.provider = Some("nowhere".into()))
        .unwrap();
    let broken = h
        .store
        .create_scale_set(NewScaleSet {
            entity_id: h.scale_set.entity_id,
            spec,
        })
        .await
        .expect("second scale set");
    let reason = eventually("the broken one shows its error", || async {
        let stored = h.store.get_scale_set(broken.id).await.ok()?;
        (stored.state == ScaleSetState::Error).then_some(stored.state_reason)
    })
    .await;
    assert!(reason.contains("nowhere"), "{reason}");

    // The first one keeps serving.
    h.sim()
        .enqueue_jobs(github_id, &JobSpec::count(2))
        .expect("enqueue");
    eventually("its jobs run", || async {
        let states = h.job_states(github_id);
        (states.len() == 2 && states.iter().all(|s| s == "running")).then_some(())
    })
    .await;
    h.sim().advance(Duration::from_secs(60));
    eventually("and complete", || async {
        let done = h.job_states(github_id).iter().all(|s| s == "completed");
        (done && h.instances().await.is_empty()).then_some(())
    })
    .await;

    // Disabled: its task stops cleanly and deletes the session.
    let mut stored = h.stored().await;
    stored.spec.set_enabled(false);
    h.store.update_scale_set(&stored).await.expect("disable");
    eventually("the disabled scale set's session is deleted", || async {
        h.sim()
            .state()
            .scale_set(github_id)?
            .session
            .is_none()
            .then_some(())
    })
    .await;

    // Enabled again: served again.
    let mut stored = h.stored().await;
    stored.spec.set_enabled(true);
    h.store.update_scale_set(&stored).await.expect("enable");
    h.ready().await;

    // Deleted: the broken one's task ends; the good one is unaffected.
    eventually("the broken scale set is deleted", || async {
        let current = h.store.get_scale_set(broken.id).await.expect("broken");
        match h
            .store
            .delete_scale_set(current.id, current.generation)
            .await
        {
            Ok(()) => Some(()),
            Err(e) if e.is_stale() => None,
            Err(e) => panic!("delete failed: {e}"),
        }
    })
    .await;
    h.ready().await;
    controller.stop().await;
}
