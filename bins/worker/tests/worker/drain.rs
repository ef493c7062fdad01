//! Issue 33 item 4, upgrades and drains, with real worker processes sharing one PostgreSQL
//! database: a worker stopped with SIGTERM while its runner runs a job leaves the runner
//! running, and the worker that takes the lease keeps it (nothing recreated) and retires it
//! when its job ends; a drained worker hands its scale sets to the other before it is stopped.

use nix::sys::signal::Signal;
use scaleset_store::test_util::test_key;
use scaleset_store::{DieselStore, Keyring, StoreOptions, WorkerStore as _};

use crate::helpers::{self, Worker, eventually, worker_env_with};
use crate::{assert_served_once, leases_held};

fn env_named(name: &str) -> Vec<(&'static str, String)> {
    worker_env_with(&[("SCALESET_WORKER__NAME", name)])
}

/// The instances of our controller in the fake cloud.
fn ours(site: &helpers::Site) -> Vec<(String, String)> {
    site.instances()
        .into_iter()
        .filter(|(key, _)| key.starts_with(helpers::CONTROLLER))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_postgres_a_sigterm_mid_job_leaves_the_runner_and_the_taker_retires_it() {
    let Some((_db, sim, site)) =
        helpers::postgres_site("the SIGTERM mid-job PostgreSQL test", &["linux"]).await
    else {
        return;
    };
    let a = Worker::spawn(&site.config(), &env_named("worker-a"));
    let id = sim.listening("worker a listens", "linux").await;
    eventually("worker a holds the lease", || async {
        (leases_held(&a).await == 1).then_some(())
    })
    .await;
    let b = Worker::spawn(&site.config(), &env_named("worker-b"));
    eventually("worker b stands by", || async {
        (leases_held(&b).await == 0).then_some(())
    })
    .await;

    sim.enqueue(id, 1);
    sim.all_running("the job runs on a's runner", id, 1).await;
    let busy = ours(&site);
    assert_eq!(busy.len(), 1, "{busy:?}");
    assert_eq!(a.signal_and_wait(Signal::SIGTERM).await, Some(0));
    assert_eq!(ours(&site), busy, "SIGTERM leaves the busy runner running");
    assert_eq!(sim.job_states(id), ["running"], "its job runs on");

    eventually("worker b takes the lease and listens", || async {
        (leases_held(&b).await == 1 && sim.has_session(id)).then_some(())
    })
    .await;
    assert_eq!(ours(&site), busy, "b keeps the busy runner");
    assert_eq!(sim.job_states(id), ["running"]);

    // The job ends: b hears it and retires the runner and its machine.
    sim.sim.advance(std::time::Duration::from_secs(120));
    eventually("the job completed and its runner is retired", || async {
        let done = sim.job_states(id).iter().all(|s| s == "completed");
        (done && ours(&site).is_empty() && sim.sim.state().agents.is_empty()).then_some(())
    })
    .await;
    assert_served_once(&sim, id);
    assert_eq!(
        b.metric("scaleset_provider_calls_total", &[("command", "create")])
            .await,
        0.0,
        "b created no machine: it kept a's busy runner"
    );
    assert_eq!(b.signal_and_wait(Signal::SIGTERM).await, Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_postgres_a_drained_worker_hands_its_scale_sets_to_the_other() {
    let names = ["s1", "s2", "s3", "s4"];
    let Some((db, sim, site)) =
        helpers::postgres_site("the worker drain PostgreSQL test", &names).await
    else {
        return;
    };
    let a = Worker::spawn(&site.config(), &env_named("worker-a"));
    let ids = eventually("every scale set listens", || async {
        let ids: Vec<i64> = names.iter().filter_map(|n| sim.scale_set_id(n)).collect();
        (ids.len() == names.len() && ids.iter().all(|id| sim.has_session(*id))).then_some(ids)
    })
    .await;
    let b = Worker::spawn(&site.config(), &env_named("worker-b"));
    eventually("a and b hold two each", || async {
        (leases_held(&a).await == 2 && leases_held(&b).await == 2).then_some(())
    })
    .await;

    // What `POST /api/v1/workers/worker-a/drain` does (the API and CLI tests cover the door).
    let store = DieselStore::open(StoreOptions::new(
        scaleset_store::DatabaseUrl::parse(&db.url).expect("the test database URL"),
        Keyring::new(test_key("k1", 1)),
    ))
    .await
    .expect("open the store");
    assert!(store.drain_worker("worker-a").await.expect("drain"));
    eventually("a hands every scale set to b", || async {
        (leases_held(&a).await == 0 && leases_held(&b).await == 4).then_some(())
    })
    .await;
    sim.all_listening("every scale set listens again, through b", &ids)
        .await;
    // a is still running, serving nothing: stopping it now interrupts nothing.
    for id in &ids {
        crate::serve_jobs(&sim, &site, *id, 1).await;
        assert_served_once(&sim, *id);
    }
    assert_eq!(
        leases_held(&a).await,
        0,
        "a drained worker takes nothing back"
    );
    assert_eq!(a.signal_and_wait(Signal::SIGTERM).await, Some(0));
    assert_eq!(b.signal_and_wait(Signal::SIGTERM).await, Some(0));
}
