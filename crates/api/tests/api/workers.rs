//! `POST /api/v1/workers/{name}/drain` (issue 33 item 4): the worker is marked draining in the
//! registry, the answer counts the leases it still holds, and an unknown or expired worker is
//! a 404. That the worker then hands its leases over is the lease planner's (property-tested)
//! and the worker binary's (`bins/worker/tests/worker/drain.rs`).

use std::time::Duration;

use scaleset_store::{LeaseStore as _, WorkerStore as _};
use serde_json::json;

use crate::helpers::{App, Backend, RunningSim, backend_tests};

backend_tests!(a_drain_marks_the_worker_and_counts_the_leases_it_still_holds);

async fn a_drain_marks_the_worker_and_counts_the_leases_it_still_holds(backend: Backend) {
    let app = App::start(backend, "worker_drain").await;
    let sim = RunningSim::start().await;
    let entity = app.seed(&sim).await;
    let created = app
        .call(
            "POST",
            "/api/v1/scale-sets",
            Some(
                json!({"entity_id": entity, "name": "linux", "provider": "fake", "max_runners": 3}),
            ),
        )
        .await;
    assert_eq!(created.status, 201, "{created:?}");
    let id = scaleset_store::ScaleSetId(created.json["id"].as_str().unwrap().parse().unwrap());
    let ttl = Duration::from_secs(60);
    app.store.heartbeat_worker("worker-a", ttl).await.unwrap();
    app.store.heartbeat_worker("worker-b", ttl).await.unwrap();
    let scaleset_store::Acquisition::Acquired(lease) =
        app.store.acquire_lease(id, "worker-a", ttl).await.unwrap()
    else {
        panic!("a free scale set's lease is acquired");
    };

    let answer = app
        .call("POST", "/api/v1/workers/worker-a/drain", None)
        .await;
    assert_eq!(answer.status, 200, "{answer:?}");
    assert_eq!(
        answer.json,
        json!({"name": "worker-a", "leases": 1, "drained": false})
    );
    assert_eq!(app.store.draining_workers().await.unwrap(), ["worker-a"]);

    // Its lease released (as its supervisor does), asking again says it is drained.
    app.store.release_lease(&lease).await.unwrap();
    let again = app
        .call("POST", "/api/v1/workers/worker-a/drain", None)
        .await;
    assert_eq!(
        again.json,
        json!({"name": "worker-a", "leases": 0, "drained": true})
    );

    let unknown = app.call("POST", "/api/v1/workers/nobody/drain", None).await;
    let message = unknown.error(404, "not_found");
    assert!(message.contains("\"nobody\""), "{message}");
    assert_eq!(app.store.draining_workers().await.unwrap(), ["worker-a"]);
}
