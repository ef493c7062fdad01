//! Scale sets: round trip, uniqueness, optimistic concurrency, corrupt rows.

use scaleset_store::{
    AdoptionPolicy, Error, EventStore as _, InstanceStore as _, LeaseStore as _, NewInstance,
    NewScaleSet, Provenance, ScaleSetState, ScaleSetStore as _,
};

use crate::helpers::{TestDb, lease, raw_sql, spec, store_tests};

store_tests!(
    scale_set_round_trip,
    duplicate_entity_group_name_is_a_conflict,
    stale_generation_is_refused_and_row_unchanged,
    new_github_id_resets_cursor_and_session,
    delete_checks_generation_and_instances,
    unknown_enum_text_is_a_corrupt_row_error,
);

async fn scale_set_round_trip(db: TestDb) {
    let store = db.open().await;
    let created = crate::helpers::scale_set(&store, "round").await;
    assert_eq!(created.spec, spec("round", "Default"));
    assert_eq!(created.state, ScaleSetState::Pending);
    assert_eq!(created.generation, 1);
    assert_eq!(created.github_id, None);
    assert_eq!(store.get_scale_set(created.id).await.unwrap(), created);
    assert_eq!(
        store
            .find_scale_set(created.entity_id, "Default", "round")
            .await
            .unwrap(),
        Some(created.clone())
    );
    assert_eq!(
        store
            .find_scale_set(created.entity_id, "Other", "round")
            .await
            .unwrap(),
        None
    );
    assert_eq!(
        store
            .list_scale_sets(Some(created.entity_id))
            .await
            .unwrap(),
        vec![created.clone()]
    );

    let mut changed = created.clone();
    changed.spec.labels = vec!["gpu".into()];
    changed.spec.runner_group.id = Some(42);
    changed.spec.disable_update = true;
    changed.spec.max_runners = 10;
    changed.spec.min_idle = 0;
    changed.spec.bootstrap_timeout = std::time::Duration::from_secs(1200);
    changed.spec.extra_specs = serde_json::json!({"zone": "b", "tags": [1, 2]});
    changed.spec.enabled = false;
    changed.spec.adoption_policy = AdoptionPolicy::Any;
    changed.spec.repair = true;
    changed.spec.runner_prefix = "pfx".into();
    changed.github_id = Some(7);
    changed.provenance = Some(Provenance::Adopted);
    changed.evidence = serde_json::json!(["owner_label"]);
    changed.state = ScaleSetState::Drifted;
    changed.state_reason = "labels differ".into();
    let updated = store.update_scale_set(&changed).await.unwrap();
    assert_eq!(updated.generation, 2);
    assert_eq!(updated.spec, changed.spec);
    assert_eq!(
        (
            updated.github_id,
            updated.provenance,
            &updated.evidence,
            updated.state,
            updated.state_reason.as_str()
        ),
        (
            Some(7),
            Some(Provenance::Adopted),
            &changed.evidence,
            ScaleSetState::Drifted,
            "labels differ"
        )
    );
    assert_eq!(store.get_scale_set(created.id).await.unwrap(), updated);

    // Fenced fields round-trip too.
    let held = lease(&store, created.id, "worker-a").await;
    store.set_message_cursor(&held, 99).await.unwrap();
    store
        .set_message_session(&held, Some("session-1"))
        .await
        .unwrap();
    store.set_desired_runners(&held, 3).await.unwrap();
    let fenced = store.get_scale_set(created.id).await.unwrap();
    assert_eq!(
        (
            fenced.last_message_id,
            fenced.session_id.as_deref(),
            fenced.desired_runners,
            fenced.generation
        ),
        (99, Some("session-1"), 3, 2)
    );
}

async fn duplicate_entity_group_name_is_a_conflict(db: TestDb) {
    let store = db.open().await;
    let first = crate::helpers::scale_set(&store, "dup").await;
    let err = store
        .create_scale_set(NewScaleSet {
            entity_id: first.entity_id,
            spec: spec("dup", "Default"),
        })
        .await
        .unwrap_err();
    assert!(err.is_conflict(), "{err:?}");
    // The same name in another group is another scale set.
    store
        .create_scale_set(NewScaleSet {
            entity_id: first.entity_id,
            spec: spec("dup", "Other"),
        })
        .await
        .unwrap();
    assert_eq!(
        store
            .list_scale_sets(Some(first.entity_id))
            .await
            .unwrap()
            .len(),
        2
    );
}

async fn stale_generation_is_refused_and_row_unchanged(db: TestDb) {
    let store = db.open().await;
    let read_by_a = crate::helpers::scale_set(&store, "stale").await;
    let read_by_b = read_by_a.clone();

    let mut a = read_by_a.clone();
    a.spec.max_runners = 5;
    let after_a = store.update_scale_set(&a).await.unwrap();

    let mut b = read_by_b;
    b.spec.max_runners = 9;
    b.state = ScaleSetState::Error;
    let err = store.update_scale_set(&b).await.unwrap_err();
    assert!(err.is_stale(), "{err:?}");
    assert!(matches!(err, Error::Stale { expected: 1, .. }));
    assert_eq!(store.get_scale_set(a.id).await.unwrap(), after_a);
}

async fn new_github_id_resets_cursor_and_session(db: TestDb) {
    let store = db.open().await;
    let mut scale_set = crate::helpers::scale_set(&store, "dormant").await;
    scale_set.github_id = Some(1);
    let scale_set = store.update_scale_set(&scale_set).await.unwrap();
    let held = lease(&store, scale_set.id, "w").await;
    store.set_message_cursor(&held, 50).await.unwrap();
    store.set_message_session(&held, Some("s")).await.unwrap();

    // Same GitHub id: the cursor stays.
    let mut same = store.get_scale_set(scale_set.id).await.unwrap();
    same.state = ScaleSetState::Ready;
    let same = store.update_scale_set(&same).await.unwrap();
    assert_eq!(
        (same.last_message_id, same.session_id.as_deref()),
        (50, Some("s"))
    );

    // GitHub deleted it: the id is forgotten and the cursor reset.
    let mut gone = same;
    gone.github_id = None;
    gone.state = ScaleSetState::Dormant;
    let gone = store.update_scale_set(&gone).await.unwrap();
    assert_eq!((gone.last_message_id, gone.session_id), (0, None));
}

async fn delete_checks_generation_and_instances(db: TestDb) {
    let store = db.open().await;
    let scale_set = crate::helpers::scale_set(&store, "del").await;
    let held = lease(&store, scale_set.id, "w").await;
    store
        .append_event(scale_set.id, "created", "test")
        .await
        .unwrap();
    store
        .create_instance(&held, NewInstance::pending("del-1", "c:1", None))
        .await
        .unwrap();
    assert!(
        store
            .delete_scale_set(scale_set.id, 0)
            .await
            .unwrap_err()
            .is_stale()
    );
    let err = store
        .delete_scale_set(scale_set.id, scale_set.generation)
        .await
        .unwrap_err();
    assert!(err.is_conflict(), "an instance is still recorded: {err:?}");
    store.delete_instance(&held, "del-1").await.unwrap();
    store
        .delete_scale_set(scale_set.id, scale_set.generation)
        .await
        .unwrap();
    assert!(
        store
            .get_scale_set(scale_set.id)
            .await
            .unwrap_err()
            .is_not_found()
    );
    assert_eq!(store.get_lease(scale_set.id).await.unwrap(), None);
    assert!(
        store
            .list_events(scale_set.id, 10)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(
        store
            .delete_scale_set(scale_set.id, 1)
            .await
            .unwrap_err()
            .is_not_found()
    );
}

async fn unknown_enum_text_is_a_corrupt_row_error(db: TestDb) {
    let store = db.open().await;
    let scale_set = crate::helpers::scale_set(&store, "corrupt").await;
    let id = scale_set.id;
    raw_sql(
        &db,
        &format!("UPDATE scale_sets SET state = 'hibernating' WHERE id = '{id}'"),
    )
    .await;
    let err = store.get_scale_set(id).await.unwrap_err();
    match &err {
        Error::Corrupt { table, column, .. } => {
            assert_eq!((*table, *column), ("scale_sets", "state"))
        }
        other => panic!("expected Corrupt, got {other:?}"),
    }
    assert!(err.to_string().contains("hibernating"), "{err}");
    assert!(
        store
            .list_scale_sets(None)
            .await
            .unwrap_err()
            .to_string()
            .contains("hibernating")
    );

    raw_sql(
        &db,
        &format!("UPDATE scale_sets SET state = 'ready', labels = 'not json' WHERE id = '{id}'"),
    )
    .await;
    let err = store.get_scale_set(id).await.unwrap_err();
    assert!(
        matches!(
            err,
            Error::Corrupt {
                column: "labels",
                ..
            }
        ),
        "{err:?}"
    );

    raw_sql(
        &db,
        &format!("UPDATE scale_sets SET labels = '[]', max_runners = -1 WHERE id = '{id}'"),
    )
    .await;
    let err = store.get_scale_set(id).await.unwrap_err();
    assert!(
        matches!(
            err,
            Error::Corrupt {
                column: "max_runners",
                ..
            }
        ),
        "{err:?}"
    );

    raw_sql(
        &db,
        &format!("UPDATE scale_sets SET max_runners = 1, provenance = 'stolen' WHERE id = '{id}'"),
    )
    .await;
    let err = store.get_scale_set(id).await.unwrap_err();
    assert!(
        matches!(
            err,
            Error::Corrupt {
                column: "provenance",
                ..
            }
        ),
        "{err:?}"
    );
}
