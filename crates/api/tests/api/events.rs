//! `GET /api/v1/events`: every scale set's events (or one's), the newest chosen and answered
//! oldest first, narrowed by `since` and `after`, with the scale set's name on each.

use scaleset_store::{EventStore as _, ReasonCode, ScaleSetId};
use serde_json::{Value, json};

use crate::helpers::{App, Backend, RunningSim, backend_tests};

backend_tests!(the_events_of_every_scale_set_oldest_first_narrowed_by_scale_set_since_and_after);

/// `POST /api/v1/scale-sets` (stored, pending): its id.
async fn stored(app: &App, entity: &str, name: &str) -> ScaleSetId {
    let answer = app
        .call(
            "POST",
            "/api/v1/scale-sets",
            Some(json!({"entity_id": entity, "name": name, "provider": "fake", "max_runners": 1})),
        )
        .await;
    assert_eq!(answer.status, 201, "{answer:?}");
    ScaleSetId(answer.json["id"].as_str().unwrap().parse().unwrap())
}

fn ids(list: &Value) -> Vec<i64> {
    list["items"]
        .as_array()
        .unwrap_or_else(|| panic!("items: {list}"))
        .iter()
        .map(|e| e["id"].as_i64().expect("an id"))
        .collect()
}

async fn the_events_of_every_scale_set_oldest_first_narrowed_by_scale_set_since_and_after(
    backend: Backend,
) {
    let sim = RunningSim::start().await;
    let app = App::start(backend, "events_of_every_scale_set").await;
    let entity = app.seed(&sim).await;
    let linux = stored(&app, &entity, "linux").await;
    let mac = stored(&app, &entity, "mac").await;
    let a = app
        .store
        .append_event(linux, ReasonCode::SpecApplied, "a")
        .await
        .unwrap();
    let b = app
        .store
        .append_event(mac, ReasonCode::SpecApplied, "b")
        .await
        .unwrap();
    let c = app
        .store
        .append_event(linux, ReasonCode::OwnerLabelMissing, "c")
        .await
        .unwrap();

    let all = app.call("GET", "/api/v1/events", None).await;
    assert_eq!(all.status, 200, "{all:?}");
    let all_ids = ids(&all.json);
    assert_eq!(
        all_ids[all_ids.len() - 3..],
        [a.id, b.id, c.id],
        "oldest first: {}",
        all.json
    );
    let last = &all.json["items"][all_ids.len() - 1];
    assert_eq!(last["scale_set"], "linux", "{last}");
    assert_eq!(last["scale_set_id"], linux.to_string(), "{last}");
    assert_eq!(
        (&last["kind"], &last["code"], &last["reason"]),
        (
            &json!("warning"),
            &json!("owner_label_missing"),
            &json!("c")
        )
    );

    let newest_two = app.call("GET", "/api/v1/events?limit=2", None).await;
    assert_eq!(ids(&newest_two.json), [b.id, c.id], "{newest_two:?}");
    let of_mac = app
        .call("GET", &format!("/api/v1/events?scale_set_id={mac}"), None)
        .await;
    assert_eq!(ids(&of_mac.json).last(), Some(&b.id), "{of_mac:?}");
    assert!(
        of_mac.json["items"]
            .as_array()
            .unwrap()
            .iter()
            .all(|e| e["scale_set"] == "mac"),
        "{of_mac:?}"
    );
    let after = app
        .call("GET", &format!("/api/v1/events?after={}", b.id), None)
        .await;
    assert_eq!(ids(&after.json), [c.id], "{after:?}");
    let future = app
        .call("GET", "/api/v1/events?since=2999-01-01T00:00:00Z", None)
        .await;
    assert_eq!(ids(&future.json), Vec::<i64>::new(), "{future:?}");
    let past = app
        .call(
            "GET",
            "/api/v1/events?since=2000-01-01T00:00:00%2B01:00",
            None,
        )
        .await;
    assert_eq!(ids(&past.json), all_ids, "{past:?}");

    // Malformed parameters and an unknown scale set: typed errors saying what to give.
    let bad_since = app.call("GET", "/api/v1/events?since=10m", None).await;
    let message = bad_since.error(400, "invalid_parameter");
    assert!(message.contains("RFC 3339"), "{message}");
    let bad_limit = app.call("GET", "/api/v1/events?limit=0", None).await;
    let message = bad_limit.error(400, "invalid_parameter");
    assert!(message.contains("1 to 1000"), "{message}");
    let unknown = app
        .call(
            "GET",
            &format!("/api/v1/events?scale_set_id={}", uuid::Uuid::nil()),
            None,
        )
        .await;
    unknown.error(404, "not_found");
    let unauthenticated = app
        .raw("GET", "/api/v1/events", None, None, "application/json")
        .await;
    unauthenticated.error(401, "missing_token");
}
