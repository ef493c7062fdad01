//! Scale sets: round trip, uniqueness, optimistic concurrency, corrupt rows.

use scaleset_store::{
    AdoptionPolicy, Error, EventStore as _, Evidence, InstanceStore as _, LeaseStore as _,
    NewInstance, NewScaleSet, Progress, Provenance, ScaleSetState, ScaleSetStore as _,
};

use crate::helpers::{TestDb, lease, raw_sql, spec, store_tests};

store_tests!(
    scale_set_round_trip,
    duplicate_entity_group_name_is_a_conflict,
    stale_generation_is_refused_and_row_unchanged,
    new_github_id_resets_cursor_and_session,
    delete_checks_generation_and_instances,
    unknown_enum_text_is_a_corrupt_row_error,
    delete_during_a_fenced_write_does_not_deadlock,
    progress_writes_what_it_names_in_one_fenced_commit,
    a_later_known_never_overwrites_a_stored_created,
    waiting_since_provider_failure_and_samples_are_kept_as_the_page_reads_them,
    each_retry_request_is_later_than_the_last_and_an_unknown_set_is_not_found,
    a_watch_reads_only_the_rows_written_since_its_revision,
);

/// The worker's watch keeps a copy of every row and reads only what changed: every write of a
/// row or of its health (the API's edit, a fenced progress write, an operator's retry) is read
/// once after the revision before it, an unchanged row is not read again, and a delete shows
/// in the count and the ids.
async fn a_watch_reads_only_the_rows_written_since_its_revision(db: TestDb) {
    let store = db.open().await;
    let edited = crate::helpers::scale_set(&store, "edited").await;
    let retried = crate::helpers::scale_set(&store, "retried").await;
    let progressed = crate::helpers::scale_set(&store, "progressed").await;
    let ids = |changes: &scaleset_store::ScaleSetChanges| {
        let mut ids: Vec<_> = changes.changed.iter().map(|s| s.id).collect();
        ids.sort();
        ids
    };
    let sorted = |mut ids: Vec<scaleset_store::ScaleSetId>| {
        ids.sort();
        ids
    };

    let first = store.scale_sets_changed_since(None).await.unwrap();
    assert_eq!(
        ids(&first),
        sorted(vec![edited.id, retried.id, progressed.id])
    );
    let deletions = first.deletions;
    let quiet = store
        .scale_sets_changed_since(Some(first.revision))
        .await
        .unwrap();
    assert_eq!(ids(&quiet), vec![], "nothing was written since");
    assert_eq!(quiet.deletions, deletions);
    assert_eq!(quiet.revision, first.revision);

    let more = i64::from(edited.spec.max_runners()) + 1;
    store
        .modify_scale_set(edited.id, &mut |s| {
            s.spec.change(|r| r.max_runners = Some(more)).unwrap();
        })
        .await
        .unwrap();
    let asked = store.request_retry(retried.id).await.unwrap();
    let held = lease(&store, progressed.id, "worker-a").await;
    store
        .record_progress(&held, progress(Some(7), Some(3), Some(2)))
        .await
        .unwrap();
    let written = store
        .scale_sets_changed_since(Some(first.revision))
        .await
        .unwrap();
    assert_eq!(
        ids(&written),
        sorted(vec![edited.id, retried.id, progressed.id])
    );
    assert!(written.revision > first.revision);
    let by_id = |id| written.changed.iter().find(|s| s.id == id).unwrap();
    assert_eq!(i64::from(by_id(edited.id).spec.max_runners()), more);
    assert_eq!(by_id(retried.id).retry_requested_at, Some(asked));
    assert_eq!(by_id(progressed.id).last_message_id, 7);

    let deleted = store.get_scale_set(edited.id).await.unwrap();
    store
        .delete_scale_set(deleted.id, deleted.generation)
        .await
        .unwrap();
    let after_delete = store
        .scale_sets_changed_since(Some(written.revision))
        .await
        .unwrap();
    assert_eq!(ids(&after_delete), vec![]);
    assert_eq!(
        after_delete.deletions,
        deletions + 1,
        "the delete is counted"
    );
    assert_eq!(
        store.list_scale_set_ids().await.unwrap(),
        sorted(vec![retried.id, progressed.id])
    );
}

/// An operator's "retry now" travels through the store to the worker holding the lease, which
/// acts on a change of the time: two requests in one millisecond must still be two changes.
async fn each_retry_request_is_later_than_the_last_and_an_unknown_set_is_not_found(db: TestDb) {
    let store = db.open().await;
    let set = crate::helpers::scale_set(&store, "retried").await;
    assert_eq!(
        store
            .get_scale_set(set.id)
            .await
            .unwrap()
            .retry_requested_at,
        None
    );
    let first = store.request_retry(set.id).await.unwrap();
    let second = store.request_retry(set.id).await.unwrap();
    assert!(second > first, "{second:?} after {first:?}");
    assert_eq!(
        store
            .get_scale_set(set.id)
            .await
            .unwrap()
            .retry_requested_at,
        Some(second)
    );
    let listed = store.list_scale_sets(None).await.unwrap();
    assert_eq!(listed[0].retry_requested_at, Some(second));
    let err = store
        .request_retry(scaleset_store::ScaleSetId::generate())
        .await
        .expect_err("an unknown scale set");
    assert!(err.is_not_found(), "{err:?}");
}

/// A [`Progress`] naming these figures, in the order of `figures` below (`None`: left as is).
fn progress(
    last_message_id: Option<i64>,
    desired_runners: Option<u32>,
    jobs_waiting: Option<u32>,
) -> Progress {
    Progress {
        last_message_id,
        desired_runners,
        jobs_waiting,
    }
}

/// Asserts that scale set `id` is no longer stored: reading it is `NotFound`.
async fn assert_deleted(store: &dyn scaleset_store::Store, id: scaleset_store::ScaleSetId) {
    let err = store
        .get_scale_set(id)
        .await
        .expect_err("the scale set is deleted");
    assert!(err.is_not_found(), "{err:?}");
}

/// Issue 29 item 3: provenance is history. The worker's ensure after the API's create sees the
/// stored id and reports `Known`; writing that must keep the stored `Created` of the same GitHub
/// scale set, or the delete later detaches a scale set this controller created.
async fn a_later_known_never_overwrites_a_stored_created(db: TestDb) {
    let store = db.open().await;
    let mut set = crate::helpers::scale_set(&store, "ours").await;
    set.github_id = Some(8);
    let ours = Some(Provenance::Created(crate::helpers::creation(8)));
    set.provenance = ours.clone();
    set.evidence = vec![Evidence::CreatedThisRun];
    let created = store.update_scale_set(&set).await.unwrap();
    assert_eq!(created.provenance, ours);

    let mut ensured = created.clone();
    ensured.provenance = Some(Provenance::Known);
    ensured.evidence = vec![Evidence::StoredId, Evidence::OwnerLabel];
    ensured.state_reason = "ready again".into();
    let written = store.update_scale_set(&ensured).await.unwrap();
    assert_eq!(written.provenance, ours, "{written:?}");
    assert_eq!(written.state_reason, "ready again", "the rest is written");
    assert_eq!(
        written.evidence, ensured.evidence,
        "evidence is this ensure's"
    );
    let read = store.get_scale_set(set.id).await.unwrap();
    assert_eq!(read.provenance, ours, "{read:?}");

    // Nor does an `adopted` or a cleared provenance for the same GitHub id.
    for other in [Some(Provenance::Adopted), None] {
        let mut again = store.get_scale_set(set.id).await.unwrap();
        again.provenance = other.clone();
        let written = store.update_scale_set(&again).await.unwrap();
        assert_eq!(written.provenance, ours, "{other:?}");
    }

    // A record of creation is for one GitHub scale set: it cannot be moved to another.
    let mut moved = store.get_scale_set(set.id).await.unwrap();
    moved.github_id = Some(10);
    let err = store.update_scale_set(&moved).await.unwrap_err();
    assert!(
        matches!(
            err,
            Error::Invalid {
                field: "provenance",
                ..
            }
        ),
        "{err:?}"
    );

    // Another GitHub scale set (the old one gone, this one found by owner label) has its own
    // history: the new provenance is written.
    let mut moved = store.get_scale_set(set.id).await.unwrap();
    moved.github_id = Some(9);
    moved.provenance = Some(Provenance::Adopted);
    let written = store.update_scale_set(&moved).await.unwrap();
    assert_eq!(written.provenance, Some(Provenance::Adopted));
}

/// `record_progress` is the listener's one commit per message: the cursor with the figures
/// that changed; a `None` leaves its column, a lost lease writes none of them.
async fn progress_writes_what_it_names_in_one_fenced_commit(db: TestDb) {
    let store = db.open().await;
    let created = crate::helpers::scale_set(&store, "progress").await;
    let held = lease(&store, created.id, "worker-a").await;
    let figures =
        |s: &scaleset_store::ScaleSet| (s.last_message_id, s.desired_runners, s.jobs_waiting);
    store
        .record_progress(&held, progress(Some(7), Some(3), Some(2)))
        .await
        .unwrap();
    let row = store.get_scale_set(created.id).await.unwrap();
    assert_eq!(figures(&row), (7, 3, 2));
    assert!(
        row.last_message_at.is_some(),
        "a handled message stamps the time"
    );

    // Only the cursor moved: the figures stay.
    store
        .record_progress(&held, progress(Some(8), None, None))
        .await
        .unwrap();
    assert_eq!(
        figures(&store.get_scale_set(created.id).await.unwrap()),
        (8, 3, 2)
    );
    // Only the desired count: the cursor and its time stay.
    store
        .record_progress(&held, progress(None, Some(0), None))
        .await
        .unwrap();
    let row = store.get_scale_set(created.id).await.unwrap();
    assert_eq!(figures(&row), (8, 0, 2));
    assert!(row.last_message_at.is_some());

    // Another holder: nothing lands.
    store.release_lease(&held).await.unwrap();
    let _other = lease(&store, created.id, "worker-b").await;
    let lost = store
        .record_progress(&held, progress(Some(9), Some(5), Some(5)))
        .await
        .unwrap_err();
    assert!(lost.is_lease_lost(), "{lost:?}");
    assert_eq!(
        figures(&store.get_scale_set(created.id).await.unwrap()),
        (8, 0, 2)
    );
}

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
    changed
        .spec
        .change(|r| r.labels = vec!["gpu".into()])
        .unwrap();
    changed.spec.set_runner_group_id(Some(42));
    changed.spec.set_disable_update(true);
    changed
        .spec
        .change(|r| r.max_runners = Some(i64::from(10)))
        .unwrap();
    changed
        .spec
        .change(|r| r.min_idle = Some(i64::from(0)))
        .unwrap();
    changed
        .spec
        .change(|r| r.bootstrap_timeout = Some(std::time::Duration::from_secs(1200)))
        .unwrap();
    changed
        .spec
        .change(|r| r.extra_specs = Some(serde_json::json!({"zone": "b", "tags": [1, 2]})))
        .unwrap();
    changed.spec.set_enabled(false);
    changed.spec.set_adoption_policy(AdoptionPolicy::Any);
    changed.spec.set_repair(true);
    changed
        .spec
        .change(|r| r.runner_prefix = Some("pfx".into()))
        .unwrap();
    changed.github_id = Some(7);
    changed.provenance = Some(Provenance::Adopted);
    changed.evidence = vec![Evidence::OwnerLabel];
    changed.state = ScaleSetState::Drifted;
    changed.state_reason = "labels differ".into();
    // Issue 37: the takeover note of a set imported from GARM, read back whole.
    assert_eq!(created.takeover, None);
    changed.takeover = Some(scaleset_adopt::Takeover {
        controller_id: "89a4130b-9de1-47c5-8ca8-e2640daa0e13".into(),
        github_id: scaleset_adopt::GithubScaleSetId(7),
        pool_id: Some("round-df2a9b56-d0d9-4e79-ad71-44d114828592".into()),
        runner_prefix: Some("garm".into()),
    });
    let updated = store.update_scale_set(&changed).await.unwrap();
    assert_eq!(updated.takeover, changed.takeover);
    assert_eq!(updated.generation, 2);
    assert_eq!(updated.spec, changed.spec);
    assert_eq!(
        (
            updated.github_id,
            updated.provenance.clone(),
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
    store.set_jobs_waiting(&held, 4).await.unwrap();
    let fenced = store.get_scale_set(created.id).await.unwrap();
    assert_eq!(
        (
            fenced.last_message_id,
            fenced.session_id.as_deref(),
            fenced.desired_runners,
            fenced.jobs_waiting,
            fenced.generation
        ),
        (99, Some("session-1"), 3, 4, 2)
    );
    assert!(
        fenced.last_message_at.is_some(),
        "a handled message stamps the time"
    );
    // A reset handled no message: no time.
    store.set_message_cursor(&held, 0).await.unwrap();
    let reset = store.get_scale_set(created.id).await.unwrap();
    assert_eq!(reset.last_message_at, None);
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
    a.spec
        .change(|r| r.max_runners = Some(i64::from(5)))
        .unwrap();
    let after_a = store.update_scale_set(&a).await.unwrap();

    let mut b = read_by_b;
    b.spec
        .change(|r| r.max_runners = Some(i64::from(9)))
        .unwrap();
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
        .append_event(
            scale_set.id,
            scaleset_store::ReasonCode::CreatedByOperator,
            "test",
        )
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
    assert_deleted(&store, scale_set.id).await;
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

    // Each bad value in turn, the one before it put right: the error names its column.
    for (set, column) in [
        ("state = 'ready', labels = 'not json'", "labels"),
        ("labels = '[]', max_runners = -1", "max_runners"),
        ("max_runners = 1, provenance = 'stolen'", "provenance"),
    ] {
        raw_sql(
            &db,
            &format!("UPDATE scale_sets SET {set} WHERE id = '{id}'"),
        )
        .await;
        let err = store.get_scale_set(id).await.unwrap_err();
        assert!(
            matches!(err, Error::Corrupt { column: c, .. } if c == column),
            "{column}: {err:?}"
        );
    }
}

/// A fenced write locks the lease row, then writes the scale set; a delete must take its locks
/// in the same order. Deleting the scale set row first and then cascading to the lease row
/// would deadlock on PostgreSQL against a fenced write between its two steps.
async fn delete_during_a_fenced_write_does_not_deadlock(db: TestDb) {
    use diesel::connection::SimpleConnection as _;
    use diesel::{Connection as _, RunQueryDsl as _};

    let store = db.open().await;
    let scale_set = crate::helpers::scale_set(&store, "order").await;
    lease(&store, scale_set.id, "w").await;
    let id = scale_set.id.to_string();

    // A second connection stands for a worker's fenced write, paused after its fence check.
    let (checked_tx, checked_rx) = tokio::sync::oneshot::channel();
    let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
    let url = db.url.clone();
    let writer = std::thread::spawn(move || -> Result<(), String> {
        let fence = format!("UPDATE leases SET token = token WHERE scale_set_id = '{id}'");
        let write = format!("UPDATE scale_sets SET last_message_id = 5 WHERE id = '{id}'");
        let run = |conn: &mut dyn FnMut(&str) -> Result<(), String>| {
            conn(&fence)?;
            checked_tx.send(()).map_err(|()| "test gone".to_owned())?;
            go_rx.recv().map_err(|e| e.to_string())?;
            conn(&write)?;
            conn("COMMIT")
        };
        match &url {
            scaleset_store::DatabaseUrl::Sqlite { path } => {
                let mut conn = diesel::SqliteConnection::establish(path).unwrap();
                conn.batch_execute("BEGIN IMMEDIATE").unwrap();
                run(&mut |sql| conn.batch_execute(sql).map_err(|e| e.to_string()))
            }
            scaleset_store::DatabaseUrl::Postgres { url } => {
                let mut conn = diesel::PgConnection::establish(url).unwrap();
                conn.batch_execute("BEGIN").unwrap();
                run(&mut |sql| {
                    diesel::sql_query(sql)
                        .execute(&mut conn)
                        .map(|_| ())
                        .map_err(|e| e.to_string())
                })
            }
        }
    });
    checked_rx.await.unwrap();

    let delete = tokio::spawn({
        let store = store.clone();
        async move {
            store
                .delete_scale_set(scale_set.id, scale_set.generation)
                .await
        }
    });
    if db.backend == crate::helpers::Backend::Postgres {
        // Let the delete reach its lock wait before the writer continues.
        assert!(
            crate::helpers::lock_waiter_seen(&db, || delete.is_finished()).await,
            "the delete never waited for the fenced write's lock"
        );
    }
    go_tx.send(()).unwrap();
    let written = tokio::task::spawn_blocking(move || writer.join().unwrap())
        .await
        .unwrap();
    assert_eq!(written, Ok(()), "the fenced write commits");
    delete.await.unwrap().expect("the delete runs after it");
    assert_deleted(&store, scale_set.id).await;
}

/// Issue 32 items 2 and 3: since when jobs wait (dated when the figure leaves 0, kept while it
/// stays above, cleared at 0), the provider's failure (the first of a run keeps its time, a
/// success clears it; fenced), and the samples (an hour kept, pruned on write, oldest first,
/// gone with the scale set), read back by `get` and `list` alike.
async fn waiting_since_provider_failure_and_samples_are_kept_as_the_page_reads_them(db: TestDb) {
    use scaleset_store::{Clock as _, ProviderError, Sample};
    use std::time::Duration;
    let store = db.open().await;
    let set = crate::helpers::scale_set(&store, "linux").await;
    let held = lease(&store, set.id, "worker-a").await;
    let read = || async { store.get_scale_set(set.id).await.unwrap() };
    assert_eq!(read().await.jobs_waiting_since, None);
    let t0 = db.clock.now();
    store.set_jobs_waiting(&held, 3).await.unwrap();
    db.clock.advance(Duration::from_secs(60));
    store.set_jobs_waiting(&held, 5).await.unwrap();
    let shown = read().await;
    assert_eq!(
        (shown.jobs_waiting, shown.jobs_waiting_since),
        (5, Some(t0))
    );
    let listed = store.list_scale_sets(None).await.unwrap();
    assert_eq!(listed[0].jobs_waiting_since, Some(t0), "list reads it too");
    store.set_jobs_waiting(&held, 0).await.unwrap();
    assert_eq!(read().await.jobs_waiting_since, None, "cleared at 0");
    let t1 = db.clock.now();
    store.set_jobs_waiting(&held, 1).await.unwrap();
    assert_eq!(
        read().await.jobs_waiting_since,
        Some(t1),
        "a new wait, a new date"
    );

    store
        .set_provider_error(&held, Some("quota exceeded"))
        .await
        .unwrap();
    db.clock.advance(Duration::from_secs(60));
    store
        .set_provider_error(&held, Some("still no quota"))
        .await
        .unwrap();
    assert_eq!(
        read().await.provider_error,
        Some(ProviderError {
            message: "still no quota".to_owned(),
            at: t1
        })
    );
    assert_eq!(
        store.list_scale_sets(None).await.unwrap()[0].provider_error,
        read().await.provider_error
    );
    store.set_provider_error(&held, None).await.unwrap();
    assert_eq!(read().await.provider_error, None);

    let sample = |minutes: u64, busy: u32| Sample {
        at: scaleset_store::Timestamp::from_unix_millis(
            t0.unix_millis() + i64::try_from(minutes * 60_000).unwrap(),
        ),
        jobs_waiting: 2,
        idle: 1,
        busy,
        starting: 0,
        start_latency: Some(Duration::from_millis(1500)),
    };
    let record = |minutes, busy| {
        let (store, held) = (&store, &held);
        async move {
            store
                .record_sample(held, &sample(minutes, busy))
                .await
                .unwrap();
        }
    };
    let list = |since: scaleset_store::Timestamp| {
        let store = &store;
        async move { store.list_samples(&[set.id], since).await.unwrap() }
    };
    let everything = scaleset_store::Timestamp::from_unix_millis(0);
    for (minutes, busy) in [(0, 1), (30, 2), (30, 3), (61, 4)] {
        record(minutes, busy).await;
    }
    assert_eq!(
        list(everything).await,
        vec![
            (set.id, sample(0, 1)),
            (set.id, sample(30, 3)),
            (set.id, sample(61, 4))
        ],
        "the minute-0 sample is the newest before the hour, so it stays (its figures hold \
         into the hour); the second at minute 30 replaced the first"
    );
    record(92, 5).await;
    assert_eq!(
        list(everything).await,
        vec![
            (set.id, sample(30, 3)),
            (set.id, sample(61, 4)),
            (set.id, sample(92, 5))
        ],
        "minute 0 fell out once minute 30 was before the hour too"
    );
    assert_eq!(
        list(sample(62, 0).at).await,
        vec![(set.id, sample(61, 4)), (set.id, sample(92, 5))],
        "the newest sample before `since` comes first, its figures holding into the window"
    );
    assert_eq!(
        list(sample(93, 0).at).await,
        vec![(set.id, sample(92, 5))],
        "with none in the window, the held one alone"
    );

    // A worker that lost the lease writes none of it.
    db.clock.advance(Duration::from_secs(31));
    let taken = lease(&store, set.id, "worker-b").await;
    for answer in [
        store.set_provider_error(&held, Some("late")).await,
        store.record_sample(&held, &sample(93, 9)).await,
    ] {
        assert!(answer.is_err_and(|e| e.is_lease_lost()));
    }
    assert_eq!(read().await.provider_error, None);
    store
        .set_provider_error(&taken, Some("new holder"))
        .await
        .unwrap();
    store.release_lease(&taken).await.unwrap();
    let current = read().await;
    store
        .delete_scale_set(set.id, current.generation)
        .await
        .unwrap();
    let gone = store
        .list_samples(&[set.id], scaleset_store::Timestamp::from_unix_millis(0))
        .await
        .unwrap();
    assert!(gone.is_empty(), "{gone:?}");
}
