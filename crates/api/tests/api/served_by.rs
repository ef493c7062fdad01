//! Which worker serves each scale set (its lease holder), and a set whose lease is in doubt
//! (ran out without a release: its worker cut off, paused or dead), in the API's JSON (list and
//! show) and on the status page (the overview's rows and the detail view). The leases are
//! written through the store, as workers write them.

use std::time::Duration;

use scaleset_store::{
    Acquisition, EntityId, ManualClock, NewScaleSet, ScaleSetStore as _, Timestamp,
};
use serde_json::{Value, json};

use crate::helpers::{App, Backend, RunningSim, backend_tests};

backend_tests!(each_scale_set_says_which_worker_serves_it_and_whose_lease_is_in_doubt);

async fn acquire(store: &dyn scaleset_store::Store, id: scaleset_store::ScaleSetId, holder: &str) {
    match store
        .acquire_lease(id, holder, Duration::from_secs(600))
        .await
        .unwrap()
    {
        Acquisition::Acquired(_) => {}
        other => panic!("{other:?}"),
    }
}

async fn each_scale_set_says_which_worker_serves_it_and_whose_lease_is_in_doubt(backend: Backend) {
    let sim = RunningSim::start().await;
    let app = App::start(backend, "served_by").await;
    let entity = EntityId(app.seed(&sim).await.parse().unwrap());
    let mut ids = std::collections::BTreeMap::new();
    for name in ["served", "cut-off", "free"] {
        let set = app
            .store
            .create_scale_set(NewScaleSet {
                entity_id: entity,
                spec: crate::status_page::spec(name),
            })
            .await
            .unwrap();
        ids.insert(name, set.id);
    }
    acquire(app.store.as_ref(), ids["served"], "worker-a").await;
    // worker-b took its lease an hour ago (its clock says so) and has not renewed it since: it
    // ran out without a release.
    let hour_ago = Timestamp::from_unix_millis(
        Timestamp::from_system_time(std::time::SystemTime::now()).unix_millis() - 3_600_000,
    );
    let cut_off = app.store_at(ManualClock::new(hour_ago)).await;
    acquire(&cut_off, ids["cut-off"], "worker-b").await;

    // The API: the list and each show.
    let listed = app.call("GET", "/api/v1/scale-sets", None).await;
    assert_eq!(listed.status, 200, "{}", listed.text);
    let served_by = |name: &str, items: &Value| -> Value {
        items
            .as_array()
            .and_then(|items| items.iter().find(|s| s["spec"]["name"] == name))
            .map(|s| s["served_by"].clone())
            .unwrap_or_else(|| panic!("{name} listed: {items}"))
    };
    let items = &listed.json["items"];
    let worker_and_lease = |v: &Value| (v["worker"].clone(), v["lease"].clone());
    assert_eq!(
        worker_and_lease(&served_by("served", items)),
        (json!("worker-a"), json!("held"))
    );
    assert_eq!(
        worker_and_lease(&served_by("cut-off", items)),
        (json!("worker-b"), json!("in_doubt"))
    );
    assert_eq!(served_by("free", items), Value::Null);
    for (name, id) in &ids {
        let shown = app
            .call("GET", &format!("/api/v1/scale-sets/{}", id.0), None)
            .await;
        assert_eq!(shown.status, 200, "{}", shown.text);
        assert_eq!(
            shown.json["served_by"],
            served_by(name, items),
            "show and list agree on {name}"
        );
    }

    // The status page: each row and the detail view.
    let auth = format!("Bearer {}", app.token);
    let (status, _, page) = app
        .send("GET", "/", &[("authorization", &auth)], None)
        .await;
    assert_eq!(status, 200, "{page}");
    let row = |name: &str| -> String {
        page.split(&format!(r#"<tr class="scale-set" data-name="{name}""#))
            .nth(1)
            .and_then(|rest| rest.split("</tr>").next())
            .unwrap_or_else(|| panic!("row {name}: {page}"))
            .to_owned()
    };
    assert!(
        row("served").contains(r#"data-lease="held""#),
        "{}",
        row("served")
    );
    assert!(
        row("served").contains("<b>worker-a</b>"),
        "{}",
        row("served")
    );
    assert!(
        row("cut-off").contains(r#"data-lease="in_doubt""#),
        "{}",
        row("cut-off")
    );
    assert!(
        row("cut-off").contains("<b>worker-b</b>"),
        "{}",
        row("cut-off")
    );
    assert!(!row("free").contains("data-lease"), "{}", row("free"));
    for (name, lease) in [("cut-off", "in_doubt"), ("free", "none")] {
        let (status, _, detail) = app
            .send(
                "GET",
                &format!("/scale-sets/{}", ids[name].0),
                &[("authorization", &auth)],
                None,
            )
            .await;
        assert_eq!(status, 200, "{detail}");
        let served = detail
            .split(r#"<dd id="served-by">"#)
            .nth(1)
            .and_then(|rest| rest.split("</dd>").next())
            .unwrap_or_else(|| panic!("no served-by on {name}: {detail}"));
        assert!(
            served.contains(&format!(r#"data-lease="{lease}""#)),
            "{name}: {served}"
        );
    }
}
