//! Concurrent writers from separate connections and separate pools lose no update.

use std::sync::Arc;

use scaleset_store::Store;

use crate::helpers::{TestDb, store_tests};

store_tests!(concurrent_read_modify_write_loses_no_update);

/// Tasks per store; two stores (pools) stand for two processes.
const TASKS_PER_STORE: u32 = 8;

async fn concurrent_read_modify_write_loses_no_update(db: TestDb) {
    let first: Arc<dyn Store> = Arc::new(db.open().await);
    let second: Arc<dyn Store> = Arc::new(db.open().await);
    let scale_set = crate::helpers::scale_set(first.as_ref(), "counter").await;
    let barrier = Arc::new(tokio::sync::Barrier::new((2 * TASKS_PER_STORE) as usize));
    let mut tasks = Vec::new();
    for store in [first.clone(), second.clone()] {
        for _ in 0..TASKS_PER_STORE {
            let store = store.clone();
            let barrier = barrier.clone();
            tasks.push(tokio::spawn(async move {
                barrier.wait().await;
                let mut retries = 0_u32;
                loop {
                    let mut current = store.get_scale_set(scale_set.id).await.unwrap();
                    let more = i64::from(current.spec.max_runners()) + 1;
                    current.spec.change(|r| r.max_runners = Some(more)).unwrap();
                    match store.update_scale_set(&current).await {
                        Ok(_) => return retries,
                        Err(e) if e.is_stale() => retries += 1,
                        Err(e) => panic!("unexpected error: {e:?}"),
                    }
                }
            }));
        }
    }
    let mut total_retries = 0;
    for task in tasks {
        total_retries += task.await.unwrap();
    }
    let end = second.get_scale_set(scale_set.id).await.unwrap();
    assert_eq!(
        end.spec.max_runners(),
        scale_set.spec.max_runners() + 2 * TASKS_PER_STORE,
        "no update lost"
    );
    assert_eq!(end.generation, 1 + i64::from(2 * TASKS_PER_STORE));
    eprintln!(
        "{} updates, {total_retries} retries on Stale",
        2 * TASKS_PER_STORE
    );
}
