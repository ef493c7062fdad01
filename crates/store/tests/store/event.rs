//! Events: append-only trail, newest first, bounded retention.

use scaleset_store::{DieselStore, EventStore as _, ScaleSetId};

use crate::helpers::{TestDb, store_tests};

store_tests!(
    events_round_trip_newest_first,
    retention_keeps_the_newest_per_scale_set
);

async fn events_round_trip_newest_first(db: TestDb) {
    let store = db.open().await;
    let scale_set = crate::helpers::scale_set(&store, "ev").await;
    let first = store
        .append_event(scale_set.id, "created", "no match on GitHub")
        .await
        .unwrap();
    db.clock.advance(std::time::Duration::from_secs(1));
    let second = store
        .append_event(scale_set.id, "session_opened", "owner scaleset-x")
        .await
        .unwrap();
    assert!(second.id > first.id);
    assert!(second.at > first.at);
    assert_eq!(
        (first.kind.as_str(), first.reason.as_str()),
        ("created", "no match on GitHub")
    );
    assert_eq!(
        store.list_events(scale_set.id, 10).await.unwrap(),
        vec![second.clone(), first]
    );
    assert_eq!(
        store.list_events(scale_set.id, 1).await.unwrap(),
        vec![second]
    );
    assert!(
        store
            .append_event(ScaleSetId::generate(), "x", "y")
            .await
            .unwrap_err()
            .is_not_found()
    );
}

async fn retention_keeps_the_newest_per_scale_set(db: TestDb) {
    let store = DieselStore::open(db.options().event_retention(3))
        .await
        .unwrap();
    let busy = crate::helpers::scale_set(&store, "busy").await;
    let quiet = crate::helpers::scale_set(&store, "quiet").await;
    store.append_event(quiet.id, "created", "q").await.unwrap();
    let mut appended = Vec::new();
    for i in 0..7 {
        appended.push(
            store
                .append_event(busy.id, "tick", &i.to_string())
                .await
                .unwrap(),
        );
    }
    let kept = store.list_events(busy.id, 100).await.unwrap();
    let newest: Vec<_> = appended.iter().rev().take(3).cloned().collect();
    assert_eq!(kept, newest);
    // Another scale set's trail is its own.
    assert_eq!(store.list_events(quiet.id, 100).await.unwrap().len(), 1);
}
