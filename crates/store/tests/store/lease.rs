//! Leases: one winner per race, take-over after expiry with a greater fencing token, and
//! fenced writes refused once the lease moved on.

use std::time::Duration;

use scaleset_store::{
    Acquisition, InstanceStatus, InstanceStore as _, LeaseStore as _, NewInstance, ScaleSetId,
    ScaleSetStore as _,
};

use crate::helpers::{Backend, HeldTransaction, TestDb, lease, lock_waiter_seen, store_tests};

store_tests!(
    racing_holders_have_exactly_one_winner,
    expired_lease_is_taken_over_with_a_greater_token,
    released_lease_is_retaken_with_a_greater_token,
    renewal_extends_and_keeps_the_token,
    renewing_together_fences_each_lease_by_its_own_token,
    samples_recorded_together_are_each_fenced_and_answered_in_order,
    sample_and_renewal_batches_of_the_same_leases_in_any_order_never_deadlock,
    stale_token_writes_are_lease_lost,
    fenced_write_waits_for_a_take_over_in_flight,
    lease_on_unknown_scale_set_is_not_found,
);

const TTL: Duration = Duration::from_secs(30);

/// The stored message cursor (`last_message_id`) of `scale_set`, the fenced write these tests
/// watch land or not.
async fn message_cursor(store: &scaleset_store::DieselStore, scale_set: ScaleSetId) -> i64 {
    let row = store.get_scale_set(scale_set).await.unwrap();
    row.last_message_id
}

/// One commit renews many leases, and each is still fenced on its own: a taken-over lease's
/// answer is `LeaseLost`, and the new holder's lease is untouched.
async fn renewing_together_fences_each_lease_by_its_own_token(db: TestDb) {
    let store = db.open().await;
    let a = crate::helpers::scale_set(&store, "batch-a").await;
    let b = crate::helpers::scale_set(&store, "batch-b").await;
    let held_a = lease(&store, a.id, "w").await;
    let held_b = lease(&store, b.id, "w").await;
    store.release_lease(&held_b).await.unwrap();
    let taken_b = lease(&store, b.id, "other").await;

    let answers = store
        .renew_leases(&[held_a.clone(), held_b.clone()], Duration::from_secs(600))
        .await
        .unwrap();
    assert_eq!(answers.len(), 2);
    let renewed_a = answers[0].as_ref().expect("a is still ours");
    assert_eq!(renewed_a.token(), held_a.token());
    assert!(
        renewed_a.expires_at() > held_a.expires_at(),
        "a was extended"
    );
    assert!(
        answers[1].as_ref().is_err_and(|e| e.is_lease_lost()),
        "{:?}",
        answers[1]
    );
    let stored_b = store.get_lease(b.id).await.unwrap().expect("b's lease row");
    assert_eq!(
        (
            stored_b.holder.as_str(),
            stored_b.token,
            stored_b.expires_at
        ),
        (taken_b.holder(), taken_b.token(), taken_b.expires_at()),
        "the new holder's lease is untouched"
    );
}

fn sample_at(millis: i64, busy: u32) -> scaleset_store::Sample {
    scaleset_store::Sample {
        at: scaleset_store::Timestamp::from_unix_millis(millis),
        jobs_waiting: 0,
        idle: 1,
        busy,
        starting: 0,
        start_latency: None,
    }
}

/// One commit stores many scale sets' samples, each fenced by its own lease: a taken-over
/// lease's sample is answered `LeaseLost` and not written, the others are; the answers follow
/// the order given (not the order the rows are locked in).
async fn samples_recorded_together_are_each_fenced_and_answered_in_order(db: TestDb) {
    let store = db.open().await;
    let mut sets = Vec::new();
    for name in ["samples-a", "samples-b", "samples-c"] {
        sets.push(crate::helpers::scale_set(&store, name).await);
    }
    let mut held = Vec::new();
    for set in &sets {
        held.push(lease(&store, set.id, "w").await);
    }
    store.release_lease(&held[1]).await.unwrap();
    let _taken = lease(&store, sets[1].id, "other").await;
    // Given in an order unlike the scale-set order the rows are locked in.
    let mut batch: Vec<_> = held
        .iter()
        .enumerate()
        .map(|(at, lease)| (lease.clone(), sample_at(60_000, u32::try_from(at).unwrap())))
        .collect();
    batch.sort_by_key(|(lease, _)| std::cmp::Reverse(lease.scale_set_id()));

    let answers = store.record_samples(&batch).await.unwrap();
    assert_eq!(answers.len(), 3);
    for ((lease, _), answer) in batch.iter().zip(&answers) {
        if lease.scale_set_id() == sets[1].id {
            assert!(
                answer.as_ref().is_err_and(|e| e.is_lease_lost()),
                "{answer:?}"
            );
        } else {
            assert!(answer.is_ok(), "{answer:?}");
        }
    }
    let ids: Vec<ScaleSetId> = sets.iter().map(|s| s.id).collect();
    let mut stored = store
        .list_samples(&ids, scaleset_store::Timestamp::from_unix_millis(0))
        .await
        .unwrap();
    stored.sort_by_key(|(id, _)| ids.iter().position(|i| i == id));
    assert_eq!(
        stored,
        vec![
            (sets[0].id, sample_at(60_000, 0)),
            (sets[2].id, sample_at(60_000, 2))
        ],
        "each sample of a lease still held, none of the lost one"
    );
}

/// A worker's sample batch and renewal batch hold leases of the same scale sets; given in
/// opposite orders, at once, over and over, every batch commits. On PostgreSQL, two
/// transactions that lock the same lease rows in different orders deadlock (one is aborted
/// with "deadlock detected"): both batches lock in scale-set order.
async fn sample_and_renewal_batches_of_the_same_leases_in_any_order_never_deadlock(db: TestDb) {
    let store = db.open().await;
    let mut held = Vec::new();
    for at in 0..16 {
        let set = crate::helpers::scale_set(&store, &format!("order-{at:02}")).await;
        held.push(lease(&store, set.id, "w").await);
    }
    for round in 0..30i64 {
        let mut reversed = held.clone();
        reversed.reverse();
        let samples: Vec<_> = reversed
            .iter()
            .map(|lease| (lease.clone(), sample_at(60_000 * (round + 1), 0)))
            .collect();
        let (renewed, sampled) = tokio::join!(
            store.renew_leases(&held, Duration::from_secs(600)),
            store.record_samples(&samples),
        );
        let renewed = renewed.unwrap_or_else(|e| panic!("round {round}: renewals: {e}"));
        let sampled = sampled.unwrap_or_else(|e| panic!("round {round}: samples: {e}"));
        assert!(
            renewed.iter().all(Result::is_ok),
            "round {round}: {renewed:?}"
        );
        assert!(
            sampled.iter().all(Result::is_ok),
            "round {round}: {sampled:?}"
        );
        held = renewed.into_iter().map(Result::unwrap).collect();
    }
}

/// Take-over races run after the first acquisition race.
const TAKE_OVER_ROUNDS: u32 = 20;

/// Eight holders, named by `holder`, acquire `id`'s lease at the same instant, alternating
/// between the two stores; their outcomes.
async fn race(
    stores: &[scaleset_store::DieselStore; 2],
    id: ScaleSetId,
    holder: impl Fn(usize) -> String,
) -> Vec<Acquisition> {
    let barrier = std::sync::Arc::new(tokio::sync::Barrier::new(8));
    let mut tasks = Vec::new();
    for i in 0..8 {
        let store = stores[i % 2].clone();
        let barrier = barrier.clone();
        let holder = holder(i);
        tasks.push(tokio::spawn(async move {
            barrier.wait().await;
            store.acquire_lease(id, &holder, TTL).await
        }));
    }
    let mut outcomes = Vec::new();
    for task in tasks {
        outcomes.push(task.await.unwrap().unwrap());
    }
    outcomes
}

async fn racing_holders_have_exactly_one_winner(db: TestDb) {
    // Two stores (two pools, as two processes would have), eight holders racing.
    let stores = [db.open().await, db.open().await];
    let scale_set = crate::helpers::scale_set(&stores[0], "race").await;
    let outcomes = race(&stores, scale_set.id, |i| format!("worker-{i}")).await;
    let mut winners = Vec::new();
    let mut holders_seen = Vec::new();
    for outcome in outcomes {
        match outcome {
            Acquisition::Acquired(lease) => winners.push(lease),
            Acquisition::Held { holder, .. } => holders_seen.push(holder),
        }
    }
    assert_eq!(winners.len(), 1, "exactly one winner: {winners:?}");
    let winner = &winners[0];
    assert_eq!(winner.token(), 1);
    assert_eq!(holders_seen.len(), 7);
    assert!(
        holders_seen.iter().all(|h| h == winner.holder()),
        "{holders_seen:?}"
    );
    let stored = stores[1].get_lease(scale_set.id).await.unwrap().unwrap();
    assert_eq!((stored.holder.as_str(), stored.token), (winner.holder(), 1));

    // Once it expires, eight new holders race to take it over: again exactly one wins, with
    // the next token. The race is repeated because a check-then-act take-over loses only when
    // two racers interleave between their read and their write, which one round may not hit.
    for round in 0..TAKE_OVER_ROUNDS {
        db.clock.advance(TTL + Duration::from_millis(1));
        let takers: Vec<_> = race(&stores, scale_set.id, |i| format!("round-{round}-{i}"))
            .await
            .into_iter()
            .filter_map(|outcome| match outcome {
                Acquisition::Acquired(lease) => Some(lease),
                _ => None,
            })
            .collect();
        assert_eq!(
            takers.len(),
            1,
            "round {round}: exactly one take-over: {takers:?}"
        );
        assert_eq!(takers[0].token(), 2 + i64::from(round), "round {round}");
    }
}

async fn expired_lease_is_taken_over_with_a_greater_token(db: TestDb) {
    let store = db.open().await;
    let scale_set = crate::helpers::scale_set(&store, "expire").await;
    let a = lease(&store, scale_set.id, "worker-a").await;
    match store
        .acquire_lease(scale_set.id, "worker-b", TTL)
        .await
        .unwrap()
    {
        Acquisition::Held { holder, expires_at } => {
            assert_eq!((holder.as_str(), expires_at), ("worker-a", a.expires_at()));
        }
        other => panic!("expected Held, got {other:?}"),
    }
    db.clock.advance(TTL + Duration::from_millis(1));
    let b = lease(&store, scale_set.id, "worker-b").await;
    assert!(b.token() > a.token(), "{} > {}", b.token(), a.token());
    // A's lease is gone for good: renew and release fail, B's stays.
    assert!(
        store
            .renew_lease(&a, TTL)
            .await
            .unwrap_err()
            .is_lease_lost()
    );
    assert!(store.release_lease(&a).await.unwrap_err().is_lease_lost());
    db.clock.advance(TTL + Duration::from_millis(1));
    // And again: every change of hands increases the token, even back to an old holder.
    let a2 = lease(&store, scale_set.id, "worker-a").await;
    assert!(a2.token() > b.token());
}

async fn released_lease_is_retaken_with_a_greater_token(db: TestDb) {
    let store = db.open().await;
    let scale_set = crate::helpers::scale_set(&store, "release").await;
    let a = lease(&store, scale_set.id, "worker-a").await;
    store.release_lease(&a).await.unwrap();
    // No waiting for expiry after a release.
    let b = lease(&store, scale_set.id, "worker-b").await;
    assert!(b.token() > a.token());
    store.release_lease(&b).await.unwrap();
    let b2 = lease(&store, scale_set.id, "worker-b").await;
    assert!(
        b2.token() > b.token(),
        "a re-acquire after release is a new tenure"
    );
}

async fn renewal_extends_and_keeps_the_token(db: TestDb) {
    let store = db.open().await;
    let scale_set = crate::helpers::scale_set(&store, "renew").await;
    let a = lease(&store, scale_set.id, "worker-a").await;
    db.clock.advance(Duration::from_secs(20));
    let renewed = store.renew_lease(&a, TTL).await.unwrap();
    assert_eq!(renewed.token(), a.token());
    assert!(renewed.expires_at() > a.expires_at());
    // Past the original expiry but within the renewed one, B still cannot take it.
    db.clock.advance(Duration::from_secs(20));
    assert!(matches!(
        store
            .acquire_lease(scale_set.id, "worker-b", TTL)
            .await
            .unwrap(),
        Acquisition::Held { .. }
    ));
    // Re-acquiring while holding it extends it and keeps the token.
    let again = lease(&store, scale_set.id, "worker-a").await;
    assert_eq!(again.token(), a.token());
}

async fn stale_token_writes_are_lease_lost(db: TestDb) {
    let store = db.open().await;
    let scale_set = crate::helpers::scale_set(&store, "fence").await;
    let old = lease(&store, scale_set.id, "worker-a").await;
    store
        .create_instance(&old, NewInstance::pending("fence-1", "c:1", None))
        .await
        .unwrap();
    store.set_message_cursor(&old, 10).await.unwrap();
    db.clock.advance(TTL + Duration::from_secs(1));
    let new = lease(&store, scale_set.id, "worker-b").await;

    assert!(
        store
            .set_message_cursor(&old, 11)
            .await
            .unwrap_err()
            .is_lease_lost()
    );
    assert!(
        store
            .set_message_session(&old, Some("s"))
            .await
            .unwrap_err()
            .is_lease_lost()
    );
    assert!(
        store
            .set_desired_runners(&old, 5)
            .await
            .unwrap_err()
            .is_lease_lost()
    );
    assert!(
        store
            .set_jobs_waiting(&old, 5)
            .await
            .unwrap_err()
            .is_lease_lost()
    );
    let new_instance = NewInstance::pending("fence-2", "c:1", None);
    assert!(
        store
            .create_instance(&old, new_instance.clone())
            .await
            .unwrap_err()
            .is_lease_lost()
    );
    assert!(
        store
            .transition_instance(&old, "fence-1", InstanceStatus::Creating)
            .await
            .unwrap_err()
            .is_lease_lost()
    );
    assert!(
        store
            .set_instance_ids(&old, "fence-1", Some("p"), Some(1))
            .await
            .unwrap_err()
            .is_lease_lost()
    );
    assert!(
        store
            .delete_instance(&old, "fence-1")
            .await
            .unwrap_err()
            .is_lease_lost()
    );

    // Nothing the old holder tried landed; the new holder's writes do.
    let row = store.get_scale_set(scale_set.id).await.unwrap();
    assert_eq!(
        (row.last_message_id, row.session_id, row.desired_runners),
        (10, None, 0)
    );
    assert_eq!(store.list_instances(scale_set.id).await.unwrap().len(), 1);
    assert_eq!(
        store.get_instance("fence-1").await.unwrap().status,
        InstanceStatus::Pending
    );
    store.set_message_cursor(&new, 11).await.unwrap();
    store
        .transition_instance(&new, "fence-1", InstanceStatus::Creating)
        .await
        .unwrap();
    store.create_instance(&new, new_instance).await.unwrap();
    assert_eq!(message_cursor(&store, scale_set.id).await, 11);
}

/// A fenced write locks the lease row (a no-op `UPDATE` matching holder and token), it does not
/// merely read it: a take-over in flight makes it wait, and once the take-over commits it is
/// `LeaseLost` and writes nothing. A raw transaction takes the lease over and stays open; on
/// PostgreSQL the fenced write must be seen waiting on a lock. Were the fence a plain `SELECT`,
/// it would read the committed (old) token without waiting and the write would land under a
/// lease that is already gone. On SQLite the write waits for the write lock instead.
async fn fenced_write_waits_for_a_take_over_in_flight(db: TestDb) {
    let store = db.open().await;
    let scale_set = crate::helpers::scale_set(&store, "in-flight").await;
    let a = lease(&store, scale_set.id, "worker-a").await;
    store.set_message_cursor(&a, 10).await.unwrap();

    let take_over = HeldTransaction::begin(
        &db,
        &format!(
            "UPDATE leases SET holder = 'worker-b', token = token + 1 WHERE scale_set_id = '{}'",
            scale_set.id
        ),
    )
    .await;
    let write = tokio::spawn({
        let (store, a) = (store.clone(), a.clone());
        async move { store.set_message_cursor(&a, 11).await }
    });
    if db.backend == Backend::Postgres {
        assert!(
            lock_waiter_seen(&db, || write.is_finished()).await,
            "the fenced write never waited for the take-over's lock on the lease row"
        );
    }
    take_over.commit().await;
    let err = write.await.unwrap().unwrap_err();
    assert!(err.is_lease_lost(), "{err:?}");
    assert_eq!(
        message_cursor(&store, scale_set.id).await,
        10,
        "nothing written under the lost lease"
    );
    let record = store.get_lease(scale_set.id).await.unwrap().unwrap();
    assert_eq!(
        (record.holder.as_str(), record.token),
        ("worker-b", a.token() + 1)
    );
}

async fn lease_on_unknown_scale_set_is_not_found(db: TestDb) {
    let store = db.open().await;
    let err = store
        .acquire_lease(ScaleSetId::generate(), "w", TTL)
        .await
        .unwrap_err();
    assert!(err.is_not_found(), "{err:?}");
}
