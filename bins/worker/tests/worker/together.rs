//! Three workers started at once on an empty PostgreSQL database: each runs the migrations,
//! binds the controller id and applies the declared fleet at the same moment, and every one of
//! them must come up and serve.

use crate::helpers::{self, Worker, eventually, get, worker_env_with};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_workers_started_at_once_on_an_empty_postgres_database_all_become_ready() {
    let names = ["t1", "t2", "t3"];
    let Some((_db, sim, site)) =
        helpers::postgres_site("the workers-started-together test", &names).await
    else {
        return;
    };
    let workers: Vec<Worker> = ["worker-a", "worker-b", "worker-c"]
        .iter()
        .map(|name| {
            Worker::spawn(
                &site.config(),
                &worker_env_with(&[("SCALESET_WORKER__NAME", name)]),
            )
        })
        .collect();
    for worker in &workers {
        let addr = worker.listen().await;
        eventually("the worker is ready", || async {
            (get(addr, "/readyz").await.0 == 200).then_some(())
        })
        .await;
    }
    let ids = eventually("every declared scale set listens", || async {
        let ids: Vec<i64> = names.iter().filter_map(|n| sim.scale_set_id(n)).collect();
        (ids.len() == names.len() && ids.iter().all(|id| sim.has_session(*id))).then_some(ids)
    })
    .await;
    assert_eq!(ids.len(), 3);
}
