//! The worker registry (heartbeats expire, a clean shutdown removes the entry at once, two
//! processes see each other) and the list of live leases the spreading of scale sets reads.

use std::time::Duration;

use scaleset_store::{LeaseStore as _, WorkerStore as _};

use crate::helpers::{TestDb, lease, store_tests};

store_tests!(
    heartbeats_keep_workers_live_until_they_expire,
    a_removed_worker_is_gone_at_once_and_removing_twice_is_fine,
    live_leases_list_only_unexpired_unreleased_leases,
    every_lease_row_is_listed_held_expired_or_released,
    a_drained_worker_stays_draining_until_it_leaves_the_registry,
);

const TTL: Duration = Duration::from_secs(30);

async fn heartbeats_keep_workers_live_until_they_expire(db: TestDb) {
    // Two pools, as two worker processes would have.
    let (a, b) = (db.open().await, db.open().await);
    assert!(a.live_workers().await.unwrap().is_empty());
    a.heartbeat_worker("worker-b", TTL).await.unwrap();
    b.heartbeat_worker("worker-a", TTL).await.unwrap();
    assert_eq!(b.live_workers().await.unwrap(), ["worker-a", "worker-b"]);

    // A repeated heartbeat extends its own entry only (and does not duplicate it).
    db.clock.advance(Duration::from_secs(20));
    a.heartbeat_worker("worker-a", TTL).await.unwrap();
    assert_eq!(a.live_workers().await.unwrap(), ["worker-a", "worker-b"]);
    db.clock.advance(Duration::from_secs(10));
    // worker-b's heartbeat is exactly TTL old: expired.
    assert_eq!(a.live_workers().await.unwrap(), ["worker-a"]);
    db.clock.advance(Duration::from_secs(20));
    assert!(b.live_workers().await.unwrap().is_empty());

    // An expired worker comes back with its next heartbeat.
    b.heartbeat_worker("worker-b", TTL).await.unwrap();
    assert_eq!(a.live_workers().await.unwrap(), ["worker-b"]);
}

async fn a_removed_worker_is_gone_at_once_and_removing_twice_is_fine(db: TestDb) {
    let store = db.open().await;
    store.heartbeat_worker("worker-a", TTL).await.unwrap();
    store.heartbeat_worker("worker-b", TTL).await.unwrap();
    store.remove_worker("worker-a").await.unwrap();
    assert_eq!(store.live_workers().await.unwrap(), ["worker-b"]);
    store.remove_worker("worker-a").await.unwrap();
    store.remove_worker("never-seen").await.unwrap();
    assert_eq!(store.live_workers().await.unwrap(), ["worker-b"]);
}

async fn live_leases_list_only_unexpired_unreleased_leases(db: TestDb) {
    let store = db.open().await;
    let one = crate::helpers::scale_set(&store, "live-1").await;
    let two = crate::helpers::scale_set(&store, "live-2").await;
    let three = crate::helpers::scale_set(&store, "live-3").await;
    assert!(store.live_leases().await.unwrap().is_empty());

    let a = lease(&store, one.id, "worker-a").await;
    let released = lease(&store, two.id, "worker-b").await;
    store.release_lease(&released).await.unwrap();
    db.clock.advance(Duration::from_secs(20));
    let b = lease(&store, three.id, "worker-b").await;

    let mut live = store.live_leases().await.unwrap();
    live.sort_by_key(|l| l.holder.clone());
    let seen: Vec<_> = live
        .iter()
        .map(|l| (l.scale_set_id, l.holder.as_str(), l.expires_at))
        .collect();
    assert_eq!(
        seen,
        [
            (one.id, "worker-a", a.expires_at()),
            (three.id, "worker-b", b.expires_at()),
        ],
        "the released lease is free"
    );

    // worker-a's lease expires (exactly TTL old); worker-b's is 20 s younger and stays.
    db.clock.advance(Duration::from_secs(10));
    let live = store.live_leases().await.unwrap();
    assert_eq!(live.len(), 1, "{live:?}");
    assert_eq!(
        (live[0].scale_set_id, live[0].holder.as_str()),
        (three.id, "worker-b")
    );
}

/// The API and the status page say who serves each scale set, and which lease is in doubt
/// (expired without a release), from one read of every lease row.
async fn every_lease_row_is_listed_held_expired_or_released(db: TestDb) {
    let store = db.open().await;
    let one = crate::helpers::scale_set(&store, "rows-1").await;
    let two = crate::helpers::scale_set(&store, "rows-2").await;
    let never = crate::helpers::scale_set(&store, "rows-3").await;
    assert!(store.leases().await.unwrap().is_empty());

    let a = lease(&store, one.id, "worker-a").await;
    let released = lease(&store, two.id, "worker-b").await;
    store.release_lease(&released).await.unwrap();
    // worker-a's lease runs out: still listed, with its holder and past expiry.
    db.clock.advance(Duration::from_secs(31));

    let rows = store.leases().await.unwrap();
    let seen: std::collections::BTreeMap<_, _> = rows
        .iter()
        .map(|(id, r)| (*id, (r.holder.as_str(), r.token, r.expires_at)))
        .collect();
    assert_eq!(seen.len(), 2, "{rows:?}");
    assert_eq!(
        seen.get(&one.id),
        Some(&("worker-a", a.token(), a.expires_at()))
    );
    assert_eq!(
        seen.get(&two.id),
        Some(&(
            "worker-b",
            released.token(),
            scaleset_store::Timestamp::EPOCH
        ))
    );
    assert!(
        !seen.contains_key(&never.id),
        "a set never leased has no row"
    );
}

async fn a_drained_worker_stays_draining_until_it_leaves_the_registry(db: TestDb) {
    let store = db.open().await;
    store.heartbeat_worker("worker-a", TTL).await.unwrap();
    store.heartbeat_worker("worker-b", TTL).await.unwrap();
    assert!(store.draining_workers().await.unwrap().is_empty());
    assert!(store.drain_worker("worker-b").await.unwrap());
    assert!(
        !store.drain_worker("never-seen").await.unwrap(),
        "no such worker"
    );
    assert_eq!(store.draining_workers().await.unwrap(), ["worker-b"]);
    // Still live, and heartbeats do not end the drain.
    store.heartbeat_worker("worker-b", TTL).await.unwrap();
    assert_eq!(
        store.live_workers().await.unwrap(),
        ["worker-a", "worker-b"]
    );
    assert_eq!(store.draining_workers().await.unwrap(), ["worker-b"]);
    // Leaving the registry (a stop, or a start of the same name) ends it.
    store.remove_worker("worker-b").await.unwrap();
    store.heartbeat_worker("worker-b", TTL).await.unwrap();
    assert!(store.draining_workers().await.unwrap().is_empty());
    // An expired worker cannot be drained, and is not listed as draining.
    assert!(store.drain_worker("worker-a").await.unwrap());
    db.clock.advance(TTL);
    assert!(!store.drain_worker("worker-a").await.unwrap());
    assert!(store.draining_workers().await.unwrap().is_empty());
}
