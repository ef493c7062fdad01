//! `App::build` as the worker, `scaleset-server --with-worker` and the demo use it, against the
//! simulator on loopback: the declared fleet is applied (and a restart changes nothing), the
//! `fake` provider is the one `[fake]` configures (machines kept as files in `state_dir`, booted
//! over the simulator at `simulator_url`), and `/readyz` has one meaning in every process.

use std::path::Path;
use std::time::Duration;

use http_body_util::BodyExt as _;
use scaleset_app::{App, Env, FleetApplied, Running, Stopped};
use scaleset_config::Config;
use scaleset_eventually::eventually;
use scaleset_sim::{SimConfig, Simulator};
use tokio_util::sync::CancellationToken;
use tower::ServiceExt as _;

/// The simulator, served on a free loopback port until `stop`.
async fn simulator() -> (Simulator, String, CancellationToken) {
    let config = SimConfig {
        // Short long-polls: a stop does not wait out a 50 s poll.
        long_poll_hold: Duration::from_millis(100),
        ..SimConfig::default()
    };
    let sim = Simulator::new(config).expect("a simulator");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a port");
    let base = format!("http://{}", listener.local_addr().expect("its address"));
    let stop = CancellationToken::new();
    tokio::spawn({
        let (sim, stop) = (sim.clone(), stop.clone());
        async move { sim.serve(listener, stop.cancelled_owned()).await }
    });
    (sim, base, stop)
}

/// A worker's configuration on `dir` with `extra` appended.
fn config(dir: &Path, extra: &str) -> Config {
    let key = dir.join("key");
    std::fs::write(&key, "AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE=").expect("the key file");
    let text = format!(
        "controller_id = \"3f2a9c1e-77b0-4d4e-9a55-0123456789ab\"\n\
         [database]\nurl = \"sqlite://{db}\"\n\
         [encryption]\nprimary_key_id = \"k1\"\n[[encryption.keys]]\nid = \"k1\"\nfile = \"{key}\"\n\
         [worker]\nname = \"w1\"\nwatch_interval = \"100ms\"\nbackoff_base = \"50ms\"\n\
         [[provider]]\nname = \"fake\"\nkind = \"fake\"\n[fake]\nallow = true\n{extra}",
        db = dir.join("scaleset.db").display(),
        key = key.display(),
    );
    Config::parse("test.toml", &text, &Default::default()).expect("a valid configuration")
}

/// One scale set `linux` keeping one idle runner, in organization `acme` of the simulator at
/// `base`; the fake provider's machines in `state` and booted over the simulator (the keys of
/// `[fake]`, which [`config`] opens).
fn fleet(dir: &Path, base: &str, state: &Path) -> String {
    let token = dir.join("token");
    std::fs::write(&token, "ghp_simulator").expect("the token file");
    format!(
        "state_dir = \"{state}\"\nsimulator_url = \"{base}\"\n\
         [[credentials]]\nname = \"sim\"\nbase_url = \"{base}\"\ntoken_file = \"{token}\"\n\
         [[scale_set]]\nname = \"linux\"\ncredentials = \"sim\"\norganization = \"acme\"\n\
         labels = [\"linux\"]\nprovider = \"fake\"\nimage = \"ubuntu\"\nflavor = \"small\"\n\
         min_idle = 1\nmax_runners = 2\n",
        state = state.display(),
        token = token.display(),
    )
}

/// `GET path` on `router`: the status and the JSON body.
async fn get(router: axum::Router, path: &str) -> (u16, serde_json::Value) {
    let response = router
        .oneshot(
            http::Request::get(path)
                .body(axum::body::Body::empty())
                .expect("a request"),
        )
        .await
        .expect("an answer");
    let status = response.status().as_u16();
    let bytes = response
        .into_body()
        .collect()
        .await
        .expect("the body")
        .to_bytes();
    let body = serde_json::from_slice(&bytes).unwrap_or_else(|_| {
        serde_json::Value::String(String::from_utf8_lossy(&bytes).into_owned())
    });
    (status, body)
}

/// Issue 30 item 3: `--with-worker` ignored the declared fleet and `[fake]`; every process
/// with a control loop now starts through `App::build`, which applies the fleet and builds the
/// providers as configured.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_declared_fleet_is_applied_and_served_with_the_fake_provider_as_configured() {
    let (sim, base, stop_sim) = simulator().await;
    let dir = tempfile::tempdir().expect("a directory");
    let state = dir.path().join("fake");
    let config = config(dir.path(), &fleet(dir.path(), &base, &state));
    let app = App::build(&config, &Env::new(Default::default()))
        .await
        .expect("built");
    assert_eq!(
        app.applied(),
        Some(FleetApplied {
            created: 1,
            ..FleetApplied::default()
        }),
        "the declared scale set is stored on start"
    );
    let stored = app.store().list_scale_sets(None).await.expect("listed");
    assert_eq!(
        stored
            .iter()
            .map(|s| s.spec.name().as_str())
            .collect::<Vec<_>>(),
        ["linux"]
    );
    let running = app.start();
    // The control loop creates it on GitHub and keeps one runner idle: a machine recorded as a
    // file in `[fake] state_dir` that booted its runner over `[fake] simulator_url`.
    let id = eventually("the scale set is listening on GitHub", || async {
        let state = sim.state();
        let set = state.scale_sets_named("linux").next()?;
        set.session.as_ref().map(|_| set.id)
    })
    .await;
    eventually("the machine booted its runner in the simulator", || async {
        let state = sim.state();
        state
            .agents
            .iter()
            .any(|a| a.scale_set_id == id && a.status == "idle")
            .then_some(())
    })
    .await;
    let machines = std::fs::read_dir(&state)
        .expect("the fake provider's directory")
        .count();
    assert!(machines >= 1, "the machine is a file in state_dir");
    assert_eq!(running.stop().await.expect("stopped"), Stopped::Cleanly);

    // A restart applies the same fleet: nothing changes.
    let again = App::build(&config, &Env::new(Default::default()))
        .await
        .expect("built again");
    assert_eq!(
        again.applied(),
        Some(FleetApplied {
            unchanged: 1,
            ..FleetApplied::default()
        })
    );
    drop(again);
    stop_sim.cancel();
}

/// The process has one clock: the one in [`Env`] is the one the control loop reads, so a
/// manual clock moved by a test moves the loop's bootstrap deadlines as it moves the API's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_control_loop_reads_the_processes_one_clock() {
    let dir = tempfile::tempdir().expect("a directory");
    let config = config(dir.path(), "");
    let start = scaleset_store::Timestamp::from_unix_millis(1_000_000_000_000);
    let manual = scaleset_store::ManualClock::new(start);
    let mut env = Env::new(Default::default());
    env.clock = std::sync::Arc::new(manual.clone());
    let app = App::build(&config, &env).await.expect("built");
    let clock = app.loop_clock().expect("a process with the control loop");
    assert_eq!(clock.now(), start, "the loop reads the manual clock");
    manual.advance(Duration::from_secs(3600));
    assert_eq!(
        clock.now().unix_millis(),
        start.unix_millis() + 3_600_000,
        "the loop's clock is the manual clock itself, not a copy of its time"
    );
    let api_only = App::build_api_only(&config, &Env::new(Default::default()))
        .await
        .expect("built");
    assert!(api_only.loop_clock().is_none(), "no loop, no loop clock");
}

/// `/readyz` had two meanings (the API: the database answers; the worker: it holds a lease).
/// Now one, in every process: the store answers. A worker that holds nothing (starting, or
/// standing by) is ready and says so; an API-only server reports no leases.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readyz_means_the_store_answers_in_every_process() {
    let dir = tempfile::tempdir().expect("a directory");
    let config = config(dir.path(), "");
    let env = Env::new(Default::default());

    let api = App::build_api_only(&config, &env)
        .await
        .expect("built")
        .start();
    let (status, body) = get(api.api_router(), "/readyz").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body, serde_json::json!({"ready": true, "store": "ok"}));
    assert_eq!(api.stop().await.expect("stopped"), Stopped::Cleanly);

    // The worker's process: no scale set, so no lease, and ready all the same.
    let worker: Running = App::build(&config, &env).await.expect("built").start();
    let expected = serde_json::json!({
        "ready": true, "store": "ok", "worker": "w1", "scaleSets": 0, "leasesHeld": 0,
    });
    for (router, name) in [
        (worker.probes_router(), "the worker's probes"),
        (worker.api_router(), "the server's API with the worker"),
    ] {
        let (status, body) = get(router, "/readyz").await;
        assert_eq!((status, &body), (200, &expected), "{name}");
    }
    let (status, _) = get(worker.probes_router(), "/healthz").await;
    assert_eq!(status, 200);
    let (status, metrics) = get(worker.probes_router(), "/metrics").await;
    assert_eq!(status, 200);
    assert!(
        metrics.as_str().unwrap_or_default().contains("scaleset_"),
        "the control loop's registry: {metrics}"
    );
    assert_eq!(worker.stop().await.expect("stopped"), Stopped::Cleanly);
}

/// Issue 31 item 3: a `token_file` replaced while the process runs is re-sealed in the store
/// (a half-written, empty one is not taken), and a restart with the rotated file finds
/// nothing to change.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rotated_token_file_is_resealed_in_the_store_without_a_restart() {
    let (sim, base, stop_sim) = simulator().await;
    sim.add_pat(scaleset_sim::PatSeed {
        token: "ghp_rotated".to_owned(),
        scopes: Vec::new(),
    });
    let dir = tempfile::tempdir().expect("a directory");
    let state = dir.path().join("fake");
    let config = config(dir.path(), &fleet(dir.path(), &base, &state));
    let app = App::build(&config, &Env::new(Default::default()))
        .await
        .expect("built");
    let running = app.start();
    let store = running.store();
    let secret = || async {
        match store
            .get_credentials_by_name("sim")
            .await
            .expect("stored")
            .auth
        {
            scaleset_store::Auth::Pat { token } => {
                scaleset_store::ExposeSecret::expose_secret(&token).to_owned()
            }
            other => panic!("a PAT was declared, got {other:?}"),
        }
    };
    assert_eq!(secret().await, "ghp_simulator");

    let token = dir.path().join("token");
    std::fs::write(&token, "\n").expect("an empty token file");
    std::fs::write(&token, "ghp_rotated\n").expect("the rotated token");
    eventually("the rotated token is sealed in the store", || async {
        (secret().await == "ghp_rotated").then_some(())
    })
    .await;
    assert_eq!(running.stop().await.expect("stopped"), Stopped::Cleanly);

    let again = App::build(
        &config_reread(dir.path(), &base, &state),
        &Env::new(Default::default()),
    )
    .await
    .expect("built again");
    assert_eq!(
        again.applied(),
        Some(FleetApplied {
            unchanged: 1,
            ..FleetApplied::default()
        })
    );
    stop_sim.cancel();
}

/// A Secret volume as the kubelet updates it in place: the key is a symlink through `..data` to
/// a timestamped directory, and an update writes a new directory and swaps `..data` atomically.
/// The path the configuration names never changes; the file behind it does. The rotation must
/// follow the link (a watcher that looked at the link itself would never see a change), so a
/// token rotated in a Kubernetes Secret is used without a rollout (docs/kubernetes.md).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_in_a_kubernetes_secret_volume_updated_in_place_is_resealed_without_a_restart() {
    let (sim, base, stop_sim) = simulator().await;
    sim.add_pat(scaleset_sim::PatSeed {
        token: "ghp_rotated".to_owned(),
        scopes: Vec::new(),
    });
    let dir = tempfile::tempdir().expect("a directory");
    let state = dir.path().join("fake");
    let text = fleet(dir.path(), &base, &state);
    let token = dir.path().join("token");
    let generation = |name: &str, content: &str| {
        let at = dir.path().join(name);
        std::fs::create_dir(&at).expect("a generation directory");
        std::fs::write(at.join("token"), content).expect("the generation's token");
    };
    let point_data_at = |name: &str| {
        let staged = dir.path().join("..data_tmp");
        std::os::unix::fs::symlink(name, &staged).expect("the staged link");
        std::fs::rename(&staged, dir.path().join("..data")).expect("the atomic swap");
    };
    std::fs::remove_file(&token).expect("the plain token file goes");
    generation("..2026_12_06_01_00_00.1", "ghp_simulator\n");
    point_data_at("..2026_12_06_01_00_00.1");
    std::os::unix::fs::symlink("..data/token", &token).expect("the key's link");
    let config = config(dir.path(), &text);
    let app = App::build(&config, &Env::new(Default::default()))
        .await
        .expect("built");
    let running = app.start();
    let store = running.store();
    let secret = || async {
        match store
            .get_credentials_by_name("sim")
            .await
            .expect("stored")
            .auth
        {
            scaleset_store::Auth::Pat { token } => {
                scaleset_store::ExposeSecret::expose_secret(&token).to_owned()
            }
            other => panic!("a PAT was declared, got {other:?}"),
        }
    };
    assert_eq!(secret().await, "ghp_simulator");

    generation("..2026_12_06_01_05_00.2", "ghp_rotated\n");
    point_data_at("..2026_12_06_01_05_00.2");
    std::fs::remove_dir_all(dir.path().join("..2026_12_06_01_00_00.1"))
        .expect("the old generation goes");
    eventually(
        "the token the swapped link points at is sealed in the store",
        || async { (secret().await == "ghp_rotated").then_some(()) },
    )
    .await;
    assert_eq!(running.stop().await.expect("stopped"), Stopped::Cleanly);
    stop_sim.cancel();
}

/// The configuration of [`fleet`] read again, its token file as it is now.
fn config_reread(dir: &Path, base: &str, state: &Path) -> Config {
    let token = dir.join("token");
    let rotated = std::fs::read_to_string(&token).expect("the token file");
    let text = fleet(dir, base, state);
    std::fs::write(&token, rotated).expect("the token file as it was");
    config(dir, &text)
}
