//! Each entity's runner downloads as the worker last read them: a good read replaces the list
//! and clears the failure, a failed read keeps the list, the row goes with its entity.

use std::time::Duration;

use scaleset_store::{
    Clock as _, EntityStore as _, RunnerDownloadStore as _, ScaleSetStore as _, Timestamp,
    ToolDownload,
};

use crate::helpers::{TestDb, raw_sql, store_tests};

store_tests!(
    a_read_list_is_kept_until_the_next_read_and_a_failure_keeps_it,
    a_failure_before_any_read_is_kept_without_a_list,
    the_row_goes_with_its_entity,
    a_row_with_a_list_but_no_read_time_is_corrupt,
);

fn download(os: &str, architecture: &str) -> ToolDownload {
    ToolDownload {
        os: os.to_owned(),
        architecture: architecture.to_owned(),
        filename: format!("actions-runner-{os}-{architecture}-2.330.0.tar.gz"),
        download_url: format!("https://example.test/{os}-{architecture}.tar.gz"),
        sha256_checksum: Some("ab".repeat(32)),
    }
}

async fn a_read_list_is_kept_until_the_next_read_and_a_failure_keeps_it(db: TestDb) {
    let store = db.open().await;
    let set = crate::helpers::scale_set(&store, "tools").await;
    let entity = set.entity_id;
    assert_eq!(store.runner_downloads(entity).await.unwrap(), None);

    let first = [download("linux", "x64"), download("win", "x64")];
    store.record_runner_downloads(entity, &first).await.unwrap();
    let read_at = db.clock.now();
    let stored = store.runner_downloads(entity).await.unwrap().unwrap();
    assert_eq!(stored.entity_id, entity);
    assert_eq!(stored.read, Some((first.to_vec(), read_at)));
    assert_eq!(stored.failure, None);

    // A failed read keeps the list read before, beside the failure.
    db.clock.advance(Duration::from_secs(60));
    store
        .record_runner_downloads_failure(entity, "GitHub answered 403")
        .await
        .unwrap();
    let stored = store.runner_downloads(entity).await.unwrap().unwrap();
    assert_eq!(stored.read, Some((first.to_vec(), read_at)));
    assert_eq!(
        stored.failure,
        Some(("GitHub answered 403".to_owned(), db.clock.now()))
    );

    // The next good read replaces the list and clears the failure.
    db.clock.advance(Duration::from_secs(60));
    let second = [download("linux", "arm64")];
    store
        .record_runner_downloads(entity, &second)
        .await
        .unwrap();
    let stored = store.runner_downloads(entity).await.unwrap().unwrap();
    assert_eq!(stored.read, Some((second.to_vec(), db.clock.now())));
    assert_eq!(stored.failure, None);
}

async fn a_failure_before_any_read_is_kept_without_a_list(db: TestDb) {
    let store = db.open().await;
    let set = crate::helpers::scale_set(&store, "tools-failed").await;
    store
        .record_runner_downloads_failure(set.entity_id, "connection refused")
        .await
        .unwrap();
    let stored = store
        .runner_downloads(set.entity_id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored.read, None);
    assert_eq!(
        stored.failure,
        Some(("connection refused".to_owned(), db.clock.now()))
    );
    // An empty list is a read, not a failure.
    store
        .record_runner_downloads(set.entity_id, &[])
        .await
        .unwrap();
    let stored = store
        .runner_downloads(set.entity_id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored.read, Some((Vec::new(), db.clock.now())));
    assert_eq!(stored.failure, None);
}

async fn the_row_goes_with_its_entity(db: TestDb) {
    let store = db.open().await;
    let set = crate::helpers::scale_set(&store, "tools-gone").await;
    store
        .record_runner_downloads(set.entity_id, &[download("linux", "x64")])
        .await
        .unwrap();
    store
        .delete_scale_set(set.id, set.generation)
        .await
        .unwrap();
    store.delete_entity(set.entity_id).await.unwrap();
    assert_eq!(store.runner_downloads(set.entity_id).await.unwrap(), None);
    // A worker that read the list of an entity deleted meanwhile is refused, not panicked.
    assert!(
        store
            .record_runner_downloads(set.entity_id, &[])
            .await
            .unwrap_err()
            .is_conflict()
    );
}

async fn a_row_with_a_list_but_no_read_time_is_corrupt(db: TestDb) {
    let store = db.open().await;
    let set = crate::helpers::scale_set(&store, "tools-corrupt").await;
    store
        .record_runner_downloads(set.entity_id, &[download("linux", "x64")])
        .await
        .unwrap();
    raw_sql(&db, "UPDATE runner_downloads SET read_at = NULL").await;
    let error = store.runner_downloads(set.entity_id).await.unwrap_err();
    assert!(
        matches!(error, scaleset_store::Error::Corrupt { .. }),
        "{error}"
    );
    raw_sql(
        &db,
        &format!(
            "UPDATE runner_downloads SET read_at = {}, downloads = 'not json'",
            Timestamp::EPOCH.unix_millis()
        ),
    )
    .await;
    let error = store.runner_downloads(set.entity_id).await.unwrap_err();
    assert!(error.to_string().contains("downloads"), "{error}");
}
