//! Shutdown during a GitHub outage (issue 29 item 8, issue 30 item 2): a worker asked to stop
//! while one scale set's ensure is retrying failed GitHub lookups stops within
//! `shutdown_timeout`, cleanly, with the session of the scale set it was serving deleted.

use std::time::{Duration, Instant};

use nix::sys::signal::Signal;
use scaleset_sim::Burst;

use crate::helpers::{self, RunningSim, Site, Worker, eventually, worker_env_with};

/// The bound the worker is given; far below the minutes an ensure retried for before.
const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(15);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_during_an_outage_stops_within_shutdown_timeout_with_sessions_deleted() {
    let sim = RunningSim::start().await;
    let site = Site::new(&sim, &["linux", "gpu"]);
    let env = worker_env_with(&[("SCALESET_WORKER__SHUTDOWN_TIMEOUT", "15s")]);

    // First run: both scale sets created and served; a clean stop.
    let first = Worker::spawn(&site.config(), &env);
    let linux = sim.listening("linux listens", "linux").await;
    let gpu = sim.listening("gpu listens", "gpu").await;
    assert_eq!(first.signal_and_wait(Signal::SIGTERM).await, Some(0));

    // GitHub loses `gpu` (its next ensure must look it up by name) and every lookup by name
    // fails from now on: `gpu` retries for as long as the outage lasts; `linux`, known by id,
    // is served.
    sim.sim.delete_scale_set(gpu).expect("delete gpu on GitHub");
    sim.sim.update_faults(|f| {
        f.server_errors = Some(Burst::new(1_000_000, 503).on("list_scale_sets"));
    });
    let retries_before = site
        .count_events("gpu", scaleset_store::EventKind::Retry)
        .await;
    let worker = Worker::spawn(&site.config(), &env);
    eventually("linux listens again and gpu's ensure retries", || async {
        let retrying = site
            .count_events("gpu", scaleset_store::EventKind::Retry)
            .await
            > retries_before;
        (retrying && sim.has_session(linux)).then_some(())
    })
    .await;

    let log = worker.log_handle();
    let asked = Instant::now();
    let code = worker.signal_and_wait(Signal::SIGTERM).await;
    let took = asked.elapsed();
    // Exit 0 is a clean stop; one the bound abandoned exits 3 (docs/operations.md).
    assert_eq!(code, Some(0), "a clean stop, not the bound: {}", log.log());
    assert!(
        took < SHUTDOWN_TIMEOUT,
        "stopped in {took:?}, within shutdown_timeout: {}",
        log.log()
    );
    assert!(
        !sim.has_session(linux),
        "the session of the scale set it served is deleted"
    );
    assert_eq!(
        helpers::RunningSim::scale_set_id(&sim, "gpu"),
        None,
        "nothing was created during the outage"
    );
}
