//! A message that asks for several runners takes each durable step for all of them together
//! (issue 35 item 4): their intents in one commit before any JIT POST, then their GitHub ids
//! with `creating` in one commit before any provider create. Seen from the store when the
//! first runner reports each step: every runner of the message is already there.

use scaleset_control::Checkpoint;
use scaleset_sim::JobSpec;
use scaleset_store::InstanceStatus;

use crate::helpers::{FreezeAt, Harness, TestDb, backend_tests, eventually, sim_config};

backend_tests!(
    a_messages_intents_land_together_before_any_jit_post,
    a_messages_github_ids_land_together_before_any_provider_create,
);

/// Freezes the scale set's task at the first `point` of a message of `jobs` jobs.
async fn frozen_at(db: TestDb, point: Checkpoint, jobs: u32) -> Harness {
    let h = Harness::new(db, sim_config(), |_| {}).await;
    let freeze = FreezeAt::new(point);
    let controller = h.start(Some(freeze.clone()));
    let github_id = h.ready().await;
    h.sim()
        .enqueue_jobs(github_id, &JobSpec::count(jobs))
        .expect("enqueue");
    eventually("the task reaches the step", || async {
        freeze.was_reached().then_some(())
    })
    .await;
    controller.crash().await;
    h
}

async fn a_messages_intents_land_together_before_any_jit_post(db: TestDb) {
    let h = frozen_at(db, Checkpoint::RunnerIntentRecorded, 4).await;
    let instances = h.instances().await;
    assert_eq!(
        instances.len(),
        4,
        "every intent of the message: {instances:?}"
    );
    assert!(
        instances
            .iter()
            .all(|i| i.status == InstanceStatus::Pending && i.github_runner_id.is_none()),
        "{instances:?}"
    );
    assert_eq!(
        h.sim().request_count("generate_jit_config"),
        0,
        "no runner is registered before every intent is recorded"
    );
}

async fn a_messages_github_ids_land_together_before_any_provider_create(db: TestDb) {
    let h = frozen_at(db, Checkpoint::JitConfigGenerated, 4).await;
    let instances = h.instances().await;
    assert_eq!(instances.len(), 4, "{instances:?}");
    assert!(
        instances
            .iter()
            .all(|i| i.status == InstanceStatus::Creating && i.github_runner_id.is_some()),
        "every runner's GitHub id is recorded before the first provider create: {instances:?}"
    );
    assert_eq!(h.sim().request_count("generate_jit_config"), 4);
    assert!(
        h.created.lock().unwrap().is_empty(),
        "no instance is created before every GitHub id is recorded"
    );
}
