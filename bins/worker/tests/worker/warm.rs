//! Warm runners survive a restart: a worker stopped cleanly, killed with -9, or whose lease
//! another worker takes over, leaves its idle runner (`min_idle = 1`) in place, and the worker
//! that serves the scale set next keeps it: no provider create and no delete, counted by the
//! worker's own metrics and the fake cloud's ledger, until well after its recovery landed.

use nix::sys::signal::Signal;

use crate::helpers::{self, RunningSim, Site, Worker, eventually, get, worker_env_with};
use crate::leases_held;

/// The value of `scaleset_provider_calls_total` for the fake provider's `command`.
async fn provider_calls(worker: &Worker, command: &str) -> f64 {
    let (_, text) = get(worker.listen().await, "/metrics").await;
    let wanted = format!("command=\"{command}\"");
    text.lines()
        .filter(|line| line.starts_with("scaleset_provider_calls_total{"))
        .find(|line| line.contains("provider=\"fake\"") && line.contains(&wanted))
        .and_then(|line| line.rsplit(' ').next())
        .and_then(|value| value.parse().ok())
        .unwrap_or_else(|| panic!("scaleset_provider_calls_total for {command} in\n{text}"))
}

/// Sets `min_idle = 1` on every scale set of the site.
fn keep_one_warm(site: &Site) {
    let text = std::fs::read_to_string(site.config()).expect("config");
    let warm = text.replace("max_runners = 10\n", "max_runners = 10\nmin_idle = 1\n");
    assert_ne!(warm, text, "min_idle was set");
    std::fs::write(site.config(), warm).expect("config");
}

/// Every create the fake cloud ever made (its ledger, one line each).
fn ledger(site: &Site) -> usize {
    std::fs::read_to_string(site.cloud().join(scaleset_provider::LEDGER))
        .unwrap_or_default()
        .lines()
        .count()
}

/// Waits until the scale set `id` has its one warm runner: one instance, its runner idle on
/// GitHub. Returns the instances.
async fn warm(sim: &RunningSim, site: &Site, id: i64) -> Vec<(String, String)> {
    eventually("one idle runner is warm", || async {
        let instances = site.instances();
        let state = sim.sim.state();
        let idle: Vec<_> = state
            .agents
            .iter()
            .filter(|a| a.scale_set_id == id && a.status == "idle")
            .collect();
        (instances.len() == 1 && idle.len() == 1 && idle[0].name == instances[0].1)
            .then_some(instances)
    })
    .await
}

/// Waits until `worker` has listed the provider's instances three times (the recovery's list
/// and two periodic reconciliations after it landed), then checks it created and deleted
/// nothing and the warm runner is the one left before.
async fn kept(
    worker: &Worker,
    sim: &RunningSim,
    site: &Site,
    id: i64,
    before: &[(String, String)],
) {
    let creates = ledger(site);
    eventually(
        "the recovery landed and two reconciliations ran after it",
        || async { (provider_calls(worker, "list").await >= 3.0).then_some(()) },
    )
    .await;
    assert_eq!(
        provider_calls(worker, "delete").await,
        0.0,
        "no instance deleted"
    );
    assert_eq!(
        provider_calls(worker, "create").await,
        0.0,
        "no instance created"
    );
    assert_eq!(ledger(site), creates, "the cloud made nothing");
    assert_eq!(site.instances(), before, "the same warm instance");
    assert_eq!(
        warm(sim, site, id).await,
        before,
        "its runner is still idle"
    );
}

fn env_named(name: &str) -> Vec<(&'static str, String)> {
    worker_env_with(&[("SCALESET_WORKER__NAME", name)])
}

/// Regression: at start a worker planned with no warm pool until its recovery landed: it
/// removed its idle runner and made a new one about a second later, at every restart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clean_restart_and_a_kill_9_keep_the_warm_runner_and_make_none() {
    let (sim, site) = helpers::linux_site().await;
    keep_one_warm(&site);
    let first = Worker::spawn(&site.config(), &env_named("worker-a"));
    let id = sim.listening("the scale set listens", "linux").await;
    let before = warm(&sim, &site, id).await;
    assert_eq!(first.signal_and_wait(Signal::SIGTERM).await, Some(0));

    let second = Worker::spawn(&site.config(), &env_named("worker-a"));
    kept(&second, &sim, &site, id, &before).await;
    assert_eq!(second.signal_and_wait(Signal::SIGKILL).await, None);

    let third = Worker::spawn(&site.config(), &env_named("worker-a"));
    kept(&third, &sim, &site, id, &before).await;
    assert_eq!(third.signal_and_wait(Signal::SIGTERM).await, Some(0));
}

/// A lease taken over on PostgreSQL (the holder killed): the taker keeps the warm runner.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_postgres_a_worker_taking_over_the_lease_keeps_the_warm_runner() {
    let Some((_db, sim, site)) =
        helpers::postgres_site("the warm takeover PostgreSQL test", &["linux"]).await
    else {
        return;
    };
    keep_one_warm(&site);
    let a = Worker::spawn(&site.config(), &env_named("worker-a"));
    let id = sim.listening("worker a listens", "linux").await;
    let before = warm(&sim, &site, id).await;
    let b = Worker::spawn(&site.config(), &env_named("worker-b"));
    eventually("worker b stands by", || async {
        (leases_held(&b).await == 0).then_some(())
    })
    .await;
    assert_eq!(a.signal_and_wait(Signal::SIGKILL).await, None);
    eventually("worker b takes the lease", || async {
        (leases_held(&b).await == 1).then_some(())
    })
    .await;
    kept(&b, &sim, &site, id, &before).await;
    assert_eq!(b.signal_and_wait(Signal::SIGTERM).await, Some(0));
}
