//! Controller id binding and migrations on open.

use scaleset_store::{ControllerBinding, ControllerStore as _, DieselStore, Error};
use uuid::Uuid;

use crate::helpers::{TestDb, store_tests};

store_tests!(
    empty_database_adopts_the_configured_id,
    configured_id_mismatch_is_refused,
    unconfigured_id_is_generated_once_and_kept,
    opening_twice_migrates_once,
    concurrent_first_starts_bind_exactly_one_id,
);

async fn empty_database_adopts_the_configured_id(db: TestDb) {
    let id = Uuid::new_v4();
    let store = DieselStore::open(db.options().controller_id(Some(id)))
        .await
        .unwrap();
    assert_eq!(store.controller_binding(), ControllerBinding::Adopted(id));
    assert_eq!(store.controller_id().await.unwrap(), Some(id));
    drop(store);
    let again = DieselStore::open(db.options().controller_id(Some(id)))
        .await
        .unwrap();
    assert_eq!(again.controller_binding(), ControllerBinding::Matched(id));
}

async fn configured_id_mismatch_is_refused(db: TestDb) {
    let ours = Uuid::new_v4();
    let theirs = Uuid::new_v4();
    DieselStore::open(db.options().controller_id(Some(theirs)))
        .await
        .unwrap();
    let err = DieselStore::open(db.options().controller_id(Some(ours)))
        .await
        .unwrap_err();
    match &err {
        Error::ControllerMismatch { stored, configured } => {
            assert_eq!((*stored, *configured), (theirs, ours));
        }
        other => panic!("expected ControllerMismatch, got {other:?}"),
    }
    assert!(err.to_string().contains(&theirs.to_string()), "{err}");
    // The stored id is untouched.
    let store = DieselStore::open(db.options()).await.unwrap();
    assert_eq!(store.controller_id().await.unwrap(), Some(theirs));
}

async fn unconfigured_id_is_generated_once_and_kept(db: TestDb) {
    let first = DieselStore::open(db.options()).await.unwrap();
    let ControllerBinding::Generated(id) = first.controller_binding() else {
        panic!(
            "expected a generated id, got {:?}",
            first.controller_binding()
        );
    };
    let second = DieselStore::open(db.options()).await.unwrap();
    assert_eq!(second.controller_binding(), ControllerBinding::Stored(id));
    assert_eq!(
        second.bind_controller(Some(id)).await.unwrap(),
        ControllerBinding::Matched(id)
    );
}

async fn opening_twice_migrates_once(db: TestDb) {
    use scaleset_store::{CredentialStore as _, ScaleSetStore as _};
    let first = db.open().await;
    let scale_set = crate::helpers::scale_set(&first, "twice").await;
    // A second open (a second process) re-runs the migration step: nothing is lost.
    let second = db.open().await;
    assert_eq!(second.get_scale_set(scale_set.id).await.unwrap(), scale_set);
    assert_eq!(second.list_credentials().await.unwrap().len(), 1);
    let third = db.open().await;
    assert_eq!(third.list_scale_sets(None).await.unwrap().len(), 1);
}

async fn concurrent_first_starts_bind_exactly_one_id(db: TestDb) {
    // Four processes start together on an empty database (migrations race too): two with our
    // id, two with another. Exactly one id is stored, and the others are refused.
    let ours = Uuid::new_v4();
    let theirs = Uuid::new_v4();
    let barrier = std::sync::Arc::new(tokio::sync::Barrier::new(4));
    let mut tasks = Vec::new();
    for id in [ours, theirs, ours, theirs] {
        let options = db.options().controller_id(Some(id));
        let barrier = barrier.clone();
        tasks.push(tokio::spawn(async move {
            barrier.wait().await;
            DieselStore::open(options)
                .await
                .map(|s| s.controller_binding())
        }));
    }
    let mut bound = Vec::new();
    let mut refused = 0;
    for task in tasks {
        match task.await.unwrap() {
            Ok(binding) => bound.push(binding),
            Err(Error::ControllerMismatch { .. }) => refused += 1,
            other => panic!("unexpected open outcome {other:?}"),
        }
    }
    assert_eq!((bound.len(), refused), (2, 2), "{bound:?}");
    let winner = bound[0].id();
    assert!(bound.iter().all(|b| b.id() == winner));
    let adopted = bound
        .iter()
        .filter(|b| matches!(b, ControllerBinding::Adopted(_)))
        .count();
    assert_eq!(adopted, 1, "exactly one start stored its id: {bound:?}");
    let store = db.open().await;
    assert_eq!(store.controller_id().await.unwrap(), Some(winner));
}
