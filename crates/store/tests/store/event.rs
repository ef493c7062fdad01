//! Events: append-only trail, newest first, bounded retention; an entry that repeats the newest
//! one is counted on it, not appended again (issue 29 item 14).

use scaleset_store::{DieselStore, EventFilter, EventStore as _, ScaleSetId};

use crate::helpers::{TestDb, store_tests};

store_tests!(
    events_round_trip_newest_first,
    retention_keeps_the_newest_per_scale_set,
    a_repeated_event_is_counted_on_the_newest_entry_not_appended,
    repeats_do_not_push_other_history_out_of_retention,
    recent_events_of_all_scale_sets_are_filtered_and_oldest_first
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

async fn a_repeated_event_is_counted_on_the_newest_entry_not_appended(db: TestDb) {
    let store = db.open().await;
    let scale_set = crate::helpers::scale_set(&store, "rep").await;
    let first = store
        .append_event(scale_set.id, "refused", "foreign_owner (x); what to do: y")
        .await
        .unwrap();
    assert_eq!((first.count, first.last_at), (1, first.at));
    let mut last = first.clone();
    for _ in 0..4 {
        db.clock.advance(std::time::Duration::from_secs(30));
        last = store
            .append_event(scale_set.id, "refused", "foreign_owner (x); what to do: y")
            .await
            .unwrap();
    }
    // One entry: first seen when it first happened, last seen at the fifth, counted five times.
    assert_eq!(last.id, first.id);
    assert_eq!(last.at, first.at);
    assert_eq!(last.count, 5);
    assert!(last.last_at > first.at);
    assert_eq!(
        store.list_events(scale_set.id, 10).await.unwrap(),
        vec![last.clone()]
    );

    // A change is a new entry; the same text again after it is a change too.
    db.clock.advance(std::time::Duration::from_secs(1));
    let ready = store
        .append_event(scale_set.id, "ready", "ready: scale set 5 adopted")
        .await
        .unwrap();
    assert_eq!(ready.count, 1);
    let again = store
        .append_event(scale_set.id, "refused", "foreign_owner (x); what to do: y")
        .await
        .unwrap();
    assert_ne!(again.id, last.id);
    assert_eq!(again.count, 1);
    // Same kind with another reason, or another kind with the same reason: a change.
    let other_reason = store
        .append_event(scale_set.id, "refused", "foreign_owner (z); what to do: y")
        .await
        .unwrap();
    let other_kind = store
        .append_event(scale_set.id, "failed", "foreign_owner (z); what to do: y")
        .await
        .unwrap();
    assert_eq!((other_reason.count, other_kind.count), (1, 1));
    assert_eq!(
        store.list_events(scale_set.id, 10).await.unwrap(),
        vec![other_kind, other_reason, again, ready, last]
    );
}

async fn repeats_do_not_push_other_history_out_of_retention(db: TestDb) {
    let store = DieselStore::open(db.options().event_retention(3))
        .await
        .unwrap();
    let set = crate::helpers::scale_set(&store, "hist").await;
    let created = store.append_event(set.id, "created", "c").await.unwrap();
    let ready = store.append_event(set.id, "ready", "r").await.unwrap();
    for _ in 0..50 {
        store
            .append_event(set.id, "config_error", "no runner group \"gpu\"")
            .await
            .unwrap();
    }
    let kept = store.list_events(set.id, 100).await.unwrap();
    assert_eq!(kept.len(), 3, "{kept:?}");
    assert_eq!(kept[0].count, 50);
    assert_eq!(&kept[1..], &[ready, created]);
}

async fn recent_events_of_all_scale_sets_are_filtered_and_oldest_first(db: TestDb) {
    let store = db.open().await;
    let one = crate::helpers::scale_set(&store, "one").await;
    let two = crate::helpers::scale_set(&store, "two").await;
    let a = store.append_event(one.id, "created", "a").await.unwrap();
    db.clock.advance(std::time::Duration::from_secs(60));
    let b = store.append_event(two.id, "created", "b").await.unwrap();
    db.clock.advance(std::time::Duration::from_secs(60));
    let c = store.append_event(one.id, "ready", "c").await.unwrap();
    let all = EventFilter {
        scale_set_id: None,
        since: None,
        after: None,
        limit: 100,
    };
    let kinds = |events: Vec<scaleset_store::Event>| -> Vec<i64> {
        events.into_iter().map(|e| e.id).collect()
    };
    assert_eq!(
        kinds(store.list_recent_events(all).await.unwrap()),
        [a.id, b.id, c.id],
        "every scale set's, oldest first"
    );
    assert_eq!(
        kinds(
            store
                .list_recent_events(EventFilter { limit: 2, ..all })
                .await
                .unwrap()
        ),
        [b.id, c.id],
        "the newest of them"
    );
    let of_one = EventFilter {
        scale_set_id: Some(one.id),
        ..all
    };
    assert_eq!(
        kinds(store.list_recent_events(of_one).await.unwrap()),
        [a.id, c.id]
    );
    assert_eq!(
        kinds(
            store
                .list_recent_events(EventFilter {
                    since: Some(b.at),
                    ..all
                })
                .await
                .unwrap()
        ),
        [b.id, c.id],
        "since: at or after"
    );
    assert_eq!(
        kinds(
            store
                .list_recent_events(EventFilter {
                    after: Some(b.id),
                    ..all
                })
                .await
                .unwrap()
        ),
        [c.id],
        "after: appended after the cursor"
    );
    // A repeat of an old entry counts as recent by its last occurrence.
    db.clock.advance(std::time::Duration::from_secs(60));
    let repeated = store.append_event(two.id, "created", "b").await.unwrap();
    assert_eq!((repeated.id, repeated.count), (b.id, 2));
    assert_eq!(
        kinds(
            store
                .list_recent_events(EventFilter {
                    since: Some(repeated.last_at),
                    ..all
                })
                .await
                .unwrap()
        ),
        [b.id]
    );
}
