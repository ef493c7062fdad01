//! A failure of the control crate answers the same status and code on every route that meets
//! it: the class decides, not the route (`scaleset_api::class_code`).

use std::time::Duration;

use scaleset_store::{LeaseStore as _, ScaleSetId};
use serde_json::json;

use crate::helpers::{App, Backend, RunningSim, backend_tests};

backend_tests!(
    a_stale_digest_is_409_stale_plan_on_the_fleet_and_the_decommission_routes,
    a_scale_set_another_worker_serves_is_409_lease_held_on_delete_and_on_decommission,
    a_scale_set_without_its_entity_is_400_invalid_input_on_both_decommission_routes,
);

const NO_PLAN: &str = "0000000000000000000000000000000000000000000000000000000000000000";

async fn a_stale_digest_is_409_stale_plan_on_the_fleet_and_the_decommission_routes(
    backend: Backend,
) {
    let app = App::start(
        backend,
        "a_stale_digest_is_409_stale_plan_on_the_fleet_and_the_decommission_routes",
    )
    .await;
    let before = app.written().await;
    let fleet = app
        .call(
            "POST",
            "/api/v1/apply",
            Some(json!({"fleet": "", "digest": NO_PLAN})),
        )
        .await;
    fleet.error(409, "stale_plan");
    let decommission = app
        .call(
            "POST",
            "/api/v1/decommission/apply",
            Some(json!({"digest": NO_PLAN})),
        )
        .await;
    decommission.error(409, "stale_plan");
    assert_eq!(app.written().await, before, "nothing written");
}

async fn a_scale_set_another_worker_serves_is_409_lease_held_on_delete_and_on_decommission(
    backend: Backend,
) {
    let sim = RunningSim::start().await;
    let app = App::start(
        backend,
        "a_scale_set_another_worker_serves_is_409_lease_held_on_delete_and_on_decommission",
    )
    .await;
    let entity = app.seed(&sim).await;
    let posted = app
        .call(
            "POST",
            "/api/v1/scale-sets",
            Some(
                json!({"entity_id": entity, "name": "linux", "provider": "fake", "max_runners": 2}),
            ),
        )
        .await;
    let id = posted.json["id"].as_str().expect("an id").to_owned();
    let (created, refusal) = app.converge(&id).await;
    assert_eq!(refusal, None, "{created:?}");
    let scale_set = ScaleSetId(id.parse().expect("a uuid"));
    let acquired = app
        .store
        .acquire_lease(scale_set, "worker-1", Duration::from_secs(600))
        .await
        .expect("the lease");
    assert!(
        matches!(acquired, scaleset_store::Acquisition::Acquired(_)),
        "the lease is free"
    );

    let deleted = app
        .call("DELETE", &format!("/api/v1/scale-sets/{id}"), None)
        .await;
    deleted.error(409, "lease_held");

    let scope = json!({"entity": "acme", "scale_set": "linux"});
    let planned = app
        .call("POST", "/api/v1/decommission/plan", Some(scope.clone()))
        .await;
    assert_eq!(planned.status, 200, "{planned:?}");
    let mut apply = scope;
    apply["digest"] = planned.json["digest"].clone();
    let applied = app
        .call("POST", "/api/v1/decommission/apply", Some(apply))
        .await;
    let message = applied.error(409, "lease_held");
    assert!(message.contains("worker-1"), "names the holder: {message}");
    assert_eq!(
        sim.sim.state().scale_sets_named("linux").count(),
        1,
        "the scale set stays on GitHub"
    );
}

async fn a_scale_set_without_its_entity_is_400_invalid_input_on_both_decommission_routes(
    backend: Backend,
) {
    let app = App::start(
        backend,
        "a_scale_set_without_its_entity_is_400_invalid_input_on_both_decommission_routes",
    )
    .await;
    let plan = app
        .call(
            "POST",
            "/api/v1/decommission/plan",
            Some(json!({"scale_set": "linux"})),
        )
        .await;
    plan.error(400, "invalid_input");
    let apply = app
        .call(
            "POST",
            "/api/v1/decommission/apply",
            Some(json!({"scale_set": "linux", "digest": NO_PLAN})),
        )
        .await;
    apply.error(400, "invalid_input");
}
