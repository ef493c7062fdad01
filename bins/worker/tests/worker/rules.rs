//! Rules of the worker with no scenario of their own: a GitHub runner of our scale set that
//! has no instance is removed once idle and left while busy; `shutdown_timeout` bounds a
//! shutdown whose GitHub calls hang; `/readyz` answers 503 when the store is unreachable.

use std::time::Duration;

use nix::sys::signal::Signal;
use scaleset_github::ExposeSecret as _;
use scaleset_github::{Client, ClientConfig, ConfigUrl, Credentials, JitConfigRequest};

use crate::helpers::{self, RunningSim, Worker, eventually, get, worker_env, worker_env_with};
use crate::start_serving;

/// A GitHub client of the simulated organization, standing for someone registering runners
/// outside of the worker (a leftover of a lost database, or a hand-started runner).
fn outside_client(sim: &RunningSim) -> Client {
    let url = ConfigUrl::parse(&format!("http://{}/acme", sim.addr)).expect("config url");
    let api = url::Url::parse(&format!("http://{}/api/v3", sim.addr)).expect("api url");
    Client::new(ClientConfig::new(url, Credentials::pat("ghp_simulator")).with_api_base(api))
        .expect("client")
}

/// The simulated agent named `name`, with its status.
fn agent_status(sim: &RunningSim, name: &str) -> Option<String> {
    sim.sim
        .state()
        .agents
        .iter()
        .find(|a| a.name == name)
        .map(|a| a.status.clone())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_runner_without_an_instance_is_removed_when_idle_and_left_while_busy() {
    let (sim, site) = helpers::linux_site().await;
    // A first worker that reconciles only when its listener starts, so the strays below live
    // until the second worker meets them (jobs are assigned only while someone polls).
    let env = worker_env_with(&[("SCALESET_WORKER__RECONCILE_INTERVAL", "1h")]);
    let first = Worker::spawn(&site.config(), &env);
    let id = eventually("the scale set listens, reconciled once", || async {
        let id = sim.scale_set_id("linux")?;
        (sim.has_session(id) && sim.sim.request_count("list_agents") >= 1).then_some(id)
    })
    .await;

    // Three runners nobody recorded and no provider holds. Two carry our prefix (`linux-`):
    // one stays idle, one takes a job; the third is someone else's.
    let client = outside_client(&sim);
    let mut jit = Vec::new();
    for name in ["linux-strayidle", "linux-straybusy", "other-runner"] {
        let config = client
            .generate_jit_config(id.into(), &JitConfigRequest::new(name))
            .await
            .expect("generate a JIT config");
        jit.push(config.encoded_jit_config.expose_secret().to_owned());
    }
    sim.sim.start_runner(&jit[1]).expect("start the busy stray");
    sim.enqueue(id, 1);
    eventually("the stray with our prefix runs the job", || async {
        (agent_status(&sim, "linux-straybusy").as_deref() == Some("busy")).then_some(())
    })
    .await;
    assert_eq!(first.signal_and_wait(Signal::SIGTERM).await, Some(0));

    let worker = Worker::spawn(&site.config(), &worker_env());
    eventually("the idle stray is removed from GitHub", || async {
        agent_status(&sim, "linux-strayidle")
            .is_none()
            .then_some(())
    })
    .await;
    let removals = |events: Vec<scaleset_store::Event>, runner: &str| {
        events
            .iter()
            .filter(|e| {
                e.kind == scaleset_store::EventKind::StrayRunnerRemoved && e.reason.contains(runner)
            })
            .count()
    };
    eventually("the removal is an event naming the runner", || async {
        (removals(site.events("linux").await, "linux-strayidle") == 1).then_some(())
    })
    .await;
    // Three more reconciliations (every 200 ms here) meet the busy stray: it is left, and
    // the scale set keeps being served.
    let passes = sim.sim.request_count("list_agents");
    eventually("three more reconciliation passes", || async {
        (sim.sim.request_count("list_agents") >= passes + 3).then_some(())
    })
    .await;
    assert_eq!(
        agent_status(&sim, "linux-straybusy").as_deref(),
        Some("busy"),
        "a busy runner is never removed"
    );
    assert!(
        agent_status(&sim, "other-runner").is_some(),
        "a runner without our prefix is never touched"
    );
    assert_eq!(
        removals(site.events("linux").await, "linux-straybusy"),
        0,
        "no removal event for the busy stray"
    );
    let set = site.scale_set("linux").await.expect("stored");
    assert_eq!(
        set.state,
        scaleset_store::ScaleSetState::Ready,
        "a busy stray is not a failure: {}",
        set.state_reason
    );

    // Its job done, the ephemeral stray deregisters; the foreign runner is still left alone.
    sim.sim.advance(Duration::from_secs(120));
    eventually("the busy stray finished and left", || async {
        agent_status(&sim, "linux-straybusy")
            .is_none()
            .then_some(())
    })
    .await;
    assert!(agent_status(&sim, "other-runner").is_some());
    assert_eq!(worker.signal_and_wait(Signal::SIGTERM).await, Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_timeout_bounds_a_shutdown_whose_github_calls_hang() {
    let (sim, site) = helpers::linux_site().await;
    let env = worker_env_with(&[("SCALESET_WORKER__SHUTDOWN_TIMEOUT", "1s")]);
    let worker = Worker::spawn(&site.config(), &env);
    let id = sim.listening("the scale set listens", "linux").await;
    // From now on GitHub answers nothing for ten minutes: the session delete of the shutdown
    // hangs far past both the bound and the wait below.
    sim.sim.update_faults(|f| f.latency_ms = 600_000);
    let log = worker.log_handle();
    let code = worker.signal_and_wait(Signal::SIGTERM).await;
    assert_eq!(
        code,
        Some(3),
        "a stop the bound abandoned exits 3 (partially done), not 0: {}",
        log.log()
    );
    assert!(
        sim.has_session(id),
        "the hanging delete never reached the simulator (so the bound, not the call, ended it)"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readyz_answers_503_naming_the_store_when_the_database_is_unreachable() {
    let Some((db, sim, site)) =
        helpers::postgres_site("the unreachable-store /readyz test", &["linux"]).await
    else {
        return;
    };
    let (worker, _) = start_serving(&sim, &site, "linux").await;
    let addr = worker.listen().await;
    eventually("ready while serving", || async {
        (get(addr, "/readyz").await.0 == 200).then_some(())
    })
    .await;
    // The database goes away under the running worker (its connections are cut).
    db.drop_now();
    let body = eventually("/readyz answers 503", || async {
        let (status, body) = get(addr, "/readyz").await;
        (status == 503).then_some(body)
    })
    .await;
    let value: serde_json::Value = serde_json::from_str(&body).expect("readyz JSON");
    assert_eq!(value["ready"], false, "{body}");
    let store = value["store"].as_str().unwrap_or_default();
    assert!(
        store != "ok" && !store.is_empty(),
        "the store's error: {body}"
    );
    assert_eq!(
        get(addr, "/healthz").await.0,
        200,
        "still alive, only not ready"
    );
    let _ = worker.signal_and_wait(Signal::SIGKILL).await;
}
