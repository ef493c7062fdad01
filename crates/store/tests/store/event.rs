//! Events: append-only trail, newest first, bounded retention; an entry that repeats the newest
//! one (same kind and reason code, whatever its detail says) is counted on it, not appended
//! again; a code this build does not know reads back as the fallback.

use scaleset_store::{
    DieselStore, EventFilter, EventKind, EventStore as _, ReasonCode as Code, ScaleSetId,
};

use crate::helpers::{TestDb, store_tests};

store_tests!(
    events_round_trip_newest_first,
    retention_keeps_the_newest_per_scale_set,
    a_repeated_event_is_counted_on_the_newest_entry_not_appended,
    repeats_do_not_push_other_history_out_of_retention,
    recent_events_of_all_scale_sets_are_filtered_and_oldest_first,
    a_repeat_whose_counters_changed_is_counted_and_keeps_the_newest_detail,
    an_unknown_stored_code_reads_back_as_the_fallback
);

async fn events_round_trip_newest_first(db: TestDb) {
    let store = db.open().await;
    let scale_set = crate::helpers::scale_set(&store, "ev").await;
    let first = store
        .append_event(scale_set.id, Code::CreatedByOperator, "no match on GitHub")
        .await
        .unwrap();
    db.clock.advance(std::time::Duration::from_secs(1));
    let second = store
        .append_event(scale_set.id, Code::StaleSessionDeleted, "owner scaleset-x")
        .await
        .unwrap();
    assert!(second.id > first.id);
    assert!(second.at > first.at);
    assert_eq!(
        (first.kind, first.code, first.reason.as_str()),
        (
            EventKind::Created,
            Code::CreatedByOperator,
            "no match on GitHub"
        )
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
            .append_event(ScaleSetId::generate(), Code::Declared, "y")
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
    store
        .append_event(quiet.id, Code::CreatedByOperator, "q")
        .await
        .unwrap();
    let mut appended = Vec::new();
    for i in 0..7 {
        appended.push(
            store
                .append_event(
                    busy.id,
                    if i % 2 == 0 {
                        Code::Draining
                    } else {
                        Code::Drained
                    },
                    &i.to_string(),
                )
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
        .append_event(
            scale_set.id,
            Code::ForeignOwner,
            "foreign_owner (x); what to do: y",
        )
        .await
        .unwrap();
    assert_eq!((first.count, first.last_at), (1, first.at));
    let mut last = first.clone();
    for _ in 0..4 {
        db.clock.advance(std::time::Duration::from_secs(30));
        last = store
            .append_event(
                scale_set.id,
                Code::ForeignOwner,
                "foreign_owner (x); what to do: y",
            )
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
        .append_event(
            scale_set.id,
            Code::ScaleSetAdopted,
            "ready: scale set 5 adopted",
        )
        .await
        .unwrap();
    assert_eq!(ready.count, 1);
    let again = store
        .append_event(
            scale_set.id,
            Code::ForeignOwner,
            "foreign_owner (x); what to do: y",
        )
        .await
        .unwrap();
    assert_ne!(again.id, last.id);
    assert_eq!(again.count, 1);
    // Same kind with another code, or another kind with the same text: a change.
    let other_reason = store
        .append_event(
            scale_set.id,
            Code::OwnershipUnproven,
            "foreign_owner (z); what to do: y",
        )
        .await
        .unwrap();
    let other_kind = store
        .append_event(
            scale_set.id,
            Code::AdoptionFailed,
            "foreign_owner (z); what to do: y",
        )
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
    let created = store
        .append_event(set.id, Code::CreatedByOperator, "c")
        .await
        .unwrap();
    let ready = store
        .append_event(set.id, Code::ScaleSetCreated, "r")
        .await
        .unwrap();
    for _ in 0..50 {
        store
            .append_event(set.id, Code::UnknownRunnerGroup, "no runner group \"gpu\"")
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
    let a = store
        .append_event(one.id, Code::CreatedByOperator, "a")
        .await
        .unwrap();
    db.clock.advance(std::time::Duration::from_secs(60));
    let b = store
        .append_event(two.id, Code::CreatedByOperator, "b")
        .await
        .unwrap();
    db.clock.advance(std::time::Duration::from_secs(60));
    let c = store
        .append_event(one.id, Code::ScaleSetCreated, "c")
        .await
        .unwrap();
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
    let repeated = store
        .append_event(two.id, Code::CreatedByOperator, "b")
        .await
        .unwrap();
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

async fn a_repeat_whose_counters_changed_is_counted_and_keeps_the_newest_detail(db: TestDb) {
    let store = db.open().await;
    let set = crate::helpers::scale_set(&store, "counters").await;
    let first = store
        .append_event(
            set.id,
            Code::ProviderFailing,
            "provider failed 1 time(s); next try in 2s",
        )
        .await
        .unwrap();
    db.clock.advance(std::time::Duration::from_secs(30));
    let fourth = store
        .append_event(
            set.id,
            Code::ProviderFailing,
            "provider failed 4 time(s); next try in 21s",
        )
        .await
        .unwrap();
    assert_eq!(
        (fourth.id, fourth.count, fourth.at),
        (first.id, 2, first.at)
    );
    assert!(fourth.last_at > first.at);
    assert_eq!(fourth.reason, "provider failed 4 time(s); next try in 21s");
    assert_eq!(
        (fourth.kind, fourth.code),
        (EventKind::ProviderFailing, Code::ProviderFailing)
    );
    assert_eq!(store.list_events(set.id, 10).await.unwrap(), vec![fourth]);
}

async fn an_unknown_stored_code_reads_back_as_the_fallback(db: TestDb) {
    let store = db.open().await;
    let set = crate::helpers::scale_set(&store, "future").await;
    let written = store
        .append_event(set.id, Code::Drained, "drained")
        .await
        .unwrap();
    crate::helpers::raw_sql(
        &db,
        &format!(
            "UPDATE events SET code = 'from_a_newer_version', kind = 'also_newer' WHERE id = {}",
            written.id
        ),
    )
    .await;
    let read = store.list_events(set.id, 10).await.unwrap();
    assert_eq!(
        read.iter().map(|e| (e.kind, e.code)).collect::<Vec<_>>(),
        [(EventKind::Other, Code::Unspecified)]
    );
    // The unknown entry is no repeat of a known code: a new entry.
    let next = store
        .append_event(set.id, Code::Drained, "drained")
        .await
        .unwrap();
    assert_ne!(next.id, written.id);
}
