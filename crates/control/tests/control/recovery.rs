//! Crash recovery inside one process: the controller is dropped right after each durable step
//! of an ensure and a scale-up, and a new one on the same store converges with no duplicate
//! scale set or runner, no orphaned instance, and every job served exactly once.

use scaleset_control::Checkpoint;
use scaleset_sim::JobSpec;

use crate::helpers::{FreezeAt, Harness, TestDb, backend_tests, eventually, sim_config};

backend_tests!(
    crash_after_scale_set_create_intent,
    crash_after_scale_set_created,
    crash_after_runner_intent,
    crash_after_jit_config,
    crash_after_instance_created,
    crash_after_cursor_persisted,
);

async fn crash_at(db: TestDb, point: Checkpoint) -> Harness {
    let h = Harness::new(db, sim_config(), |_| {}).await;
    let freeze = FreezeAt::new(point);
    let first = h.start(Some(freeze.clone()));
    let before_ready = matches!(
        point,
        Checkpoint::ScaleSetCreateIntent | Checkpoint::ScaleSetCreated
    );
    if !before_ready {
        let github_id = h.ready().await;
        h.sim()
            .enqueue_jobs(github_id, &JobSpec::count(2))
            .expect("enqueue");
    }
    eventually("the first controller reaches the crash point", || async {
        freeze.was_reached().then_some(())
    })
    .await;
    first.crash().await;

    let (second, github_id) = h.start_ready().await;
    if before_ready {
        h.sim()
            .enqueue_jobs(github_id, &JobSpec::count(2))
            .expect("enqueue");
    }
    h.finish_jobs(github_id, 2).await;

    let state = h.sim().state();
    assert_eq!(
        state.scale_sets_named("linux").count(),
        1,
        "no duplicate scale set"
    );
    for job in state.jobs_of(github_id) {
        assert_eq!(
            job.result.as_deref(),
            Some("succeeded"),
            "served once: {job:?}"
        );
        assert_eq!(job.reassignments, 0, "never requeued: {job:?}");
    }
    let created = h.created.lock().unwrap().clone();
    let mut names: Vec<_> = created.iter().map(|r| r.name.clone()).collect();
    names.sort();
    names.dedup();
    assert_eq!(names.len(), created.len(), "no instance created twice");
    second.stop().await;
    h
}

async fn crash_after_scale_set_create_intent(db: TestDb) {
    crash_at(db, Checkpoint::ScaleSetCreateIntent).await;
}

async fn crash_after_scale_set_created(db: TestDb) {
    let h = crash_at(db, Checkpoint::ScaleSetCreated).await;
    assert_eq!(
        h.sim().request_count("create_scale_set"),
        1,
        "the second controller found the first one's scale set instead of creating another"
    );
    assert_eq!(
        h.stored().await.provenance,
        Some(scaleset_store::Provenance::Adopted),
        "the create's answer was lost with the crash: no record of creation, adopted by label"
    );
}

async fn crash_after_runner_intent(db: TestDb) {
    crash_at(db, Checkpoint::RunnerIntentRecorded).await;
}

async fn crash_after_jit_config(db: TestDb) {
    let h = crash_at(db, Checkpoint::JitConfigGenerated).await;
    assert!(
        h.sim().request_count("delete_agent") >= 1,
        "the runner registered without an instance was removed from GitHub"
    );
}

async fn crash_after_instance_created(db: TestDb) {
    crash_at(db, Checkpoint::InstanceCreated).await;
}

async fn crash_after_cursor_persisted(db: TestDb) {
    let h = crash_at(db, Checkpoint::CursorPersisted).await;
    assert!(
        h.events()
            .await
            .iter()
            .any(|k| k == "stale_session_deleted"),
        "our own stale session was deleted first"
    );
}
