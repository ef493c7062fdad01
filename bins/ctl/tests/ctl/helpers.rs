//! Runs the `scalesetctl` binary with a clean environment and collects what it printed; and
//! [`Server`], the real API it talks to, with a worker's control loop beside it (as
//! `scaleset-server --with-worker` runs them) over a fake cloud whose runners boot in the
//! simulator.

use std::process::Command;
use std::sync::Arc;

use prometheus_client::registry::Registry;
use scaleset_api::AppState;
use scaleset_control::{
    Controller, ControllerIdentity, Settings as ControlSettings, StoreClientFactory,
};
use scaleset_fleet::{DecommissionSource, Fleet};
use scaleset_provider::{CreatedRunner, FakeCloud, Provider};
use scaleset_sim::{SimConfig, Simulator};
use scaleset_store::ExposeSecret as _;
use scaleset_store::{
    ApiTokenStore as _, DatabaseUrl, DieselStore, EncryptionKey, Keyring, Store, StoreOptions,
};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

/// What one run of the binary printed, and its exit code.
#[derive(Debug)]
pub(crate) struct Run {
    pub(crate) code: i32,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
}

/// Runs `scalesetctl args…` with only `env` (plus a PATH) in its environment, so that no
/// configuration of the person running the tests leaks in.
pub(crate) fn ctl_with_env(args: &[&str], env: &[(&str, &str)]) -> Run {
    let mut command = Command::new(env!("CARGO_BIN_EXE_scalesetctl"));
    command.args(args).env_clear().env("PATH", "/usr/bin:/bin");
    for (key, value) in env {
        command.env(key, value);
    }
    let output = command.output().expect("scalesetctl runs");
    Run {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// A real API router over a real SQLite store on `127.0.0.1:0`, with the simulator serving
/// as GitHub, each on its own runtime thread; and a token for the CLI. Dropped: both stop.
pub(crate) struct Server {
    /// `http://127.0.0.1:<port>`.
    pub(crate) url: String,
    /// A valid API token.
    pub(crate) token: String,
    /// The simulator's base URL (`http://127.0.0.1:<port>`), the credentials' endpoint.
    pub(crate) github: String,
    /// The simulator, to look at GitHub's side and to plant foreign scale sets.
    pub(crate) sim: Simulator,
    /// The worker's fake cloud, to look at its instances and to plant foreign ones.
    pub(crate) cloud: FakeCloud,
    runtime: Option<tokio::runtime::Runtime>,
    stop: CancellationToken,
    _dir: tempfile::TempDir,
}

impl Server {
    /// Starts the simulator and the API.
    pub(crate) fn start() -> Self {
        Self::start_with(|_| {})
    }

    /// [`Server::start`] with the simulator's configuration changed by `configure`.
    pub(crate) fn start_with(configure: impl FnOnce(&mut SimConfig)) -> Self {
        Self::start_serving(configure, |_| {}, true)
    }

    /// [`Server::start`] with the worker's settings changed by `tune`.
    pub(crate) fn start_tuned(tune: impl FnOnce(&mut ControlSettings)) -> Self {
        Self::start_serving(|_| {}, tune, true)
    }

    /// [`Server::start`] whose API, as an API-only server's, serves no decommission (it has
    /// no providers), beside a worker that still runs.
    pub(crate) fn start_without_decommission() -> Self {
        Self::start_serving(|_| {}, |_| {}, false)
    }

    fn start_serving(
        configure: impl FnOnce(&mut SimConfig),
        tune: impl FnOnce(&mut ControlSettings),
        decommission: bool,
    ) -> Self {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("a runtime");
        let dir = tempfile::tempdir().expect("a temporary directory");
        let stop = CancellationToken::new();
        let (url, token, github, sim, cloud) = runtime.block_on(async {
            // Short long-poll holds (a stop does not wait out a 50 s poll), busy seen at once,
            // and jobs that run until the test ends them.
            let mut config = SimConfig {
                long_poll_hold: std::time::Duration::from_millis(100),
                tick_interval: std::time::Duration::from_millis(20),
                job_started_delay: std::time::Duration::ZERO,
                runner_job_duration: std::time::Duration::from_secs(3600),
                ..SimConfig::default()
            };
            configure(&mut config);
            let sim = Simulator::new(config).expect("the simulator");
            let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
            let github = format!("http://{}", listener.local_addr().expect("addr"));
            tokio::spawn({
                let (sim, stop) = (sim.clone(), stop.clone());
                async move { sim.serve(listener, stop.cancelled_owned()).await }
            });

            let path = dir.path().join("scaleset.db");
            let key = EncryptionKey::from_bytes("k1", &[7; 32]).expect("key");
            let options = StoreOptions::new(
                DatabaseUrl::Sqlite {
                    path: path.to_string_lossy().into_owned(),
                },
                Keyring::new(key),
            )
            .controller_id(Some(CONTROLLER_ID.parse().expect("uuid")));
            let store = Arc::new(DieselStore::open(options).await.expect("open the store"));
            let (_, secret) = store
                .create_api_token("tests")
                .await
                .expect("an API token");

            let identity = ControllerIdentity::new(CONTROLLER_ID.parse().expect("uuid"));
            let dyn_store: Arc<dyn Store> = store.clone();
            let clients = Arc::new(StoreClientFactory::new(dyn_store.clone()));
            let mut settings = ControlSettings {
                worker: "ctl-test-worker".to_owned(),
                watch_interval: std::time::Duration::from_millis(100),
                drain_interval: std::time::Duration::from_millis(200),
                backoff_base: std::time::Duration::from_millis(50),
                backoff_max: std::time::Duration::from_millis(500),
                // A foreign session that ends (a GARM stopped after an import) is seen soon.
                foreign_session_recheck: std::time::Duration::from_millis(500),
                ..ControlSettings::default()
            };
            tune(&mut settings);
            // The worker: a fake cloud whose runners register and take jobs in the simulator.
            let cloud = FakeCloud::new();
            cloud.on_create({
                let sim = sim.clone();
                move |runner: &CreatedRunner| {
                    if let Some(jit) = &runner.jit_config {
                        sim.start_runner(jit.expose_secret())
                            .expect("the simulator boots the runner");
                    }
                }
            });
            let provider: Arc<dyn Provider> = Arc::new(cloud.provider(identity.id()));
            let providers = std::collections::BTreeMap::from([("fake".to_owned(), provider)]);
            let mut registry = Registry::default();
            let controller = Controller::new(
                dyn_store.clone(),
                clients.clone(),
                providers.clone(),
                identity.clone(),
                settings.clone(),
                &mut registry,
            );
            // As `App::build` wires it for `scaleset-server --with-worker`.
            let source = DecommissionSource::new(
                identity.clone(),
                Fleet::default(),
                providers,
                dyn_store.clone(),
                Arc::new(|c| c),
            )
            .with_hands_off(
                controller.hands_off(),
                settings.lease_ttl.saturating_add(settings.watch_interval),
            );
            tokio::spawn(controller.run(stop.clone()));
            let mut state = AppState::new(
                dyn_store,
                clients,
                identity,
                settings,
                None,
                Registry::default(),
            );
            if decommission {
                state = state.with_decommission(source);
            }
            let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
            let url = format!("http://{}", listener.local_addr().expect("addr"));
            // Two items a page: every list the CLI reads in these tests is more than one page
            // as soon as it holds three items, so each command is seen following `next_cursor`.
            let limits = scaleset_api::Limits {
                page_size: 2,
                ..scaleset_api::Limits::default()
            };
            let app = scaleset_api::router(Arc::new(
                state
                    .with_providers(["fake".to_owned()])
                    .with_limits(limits),
            ));
            tokio::spawn({
                let stop = stop.clone();
                async move {
                    scaleset_api::serve(listener, app, None, stop.cancelled_owned()).await
                }
            });
            (url, secret.expose_secret().to_owned(), github, sim, cloud)
        });
        Self {
            url,
            token,
            github,
            sim,
            cloud,
            runtime: Some(runtime),
            stop,
            _dir: dir,
        }
    }

    /// Runs `scalesetctl args…` against this server with its token (through the environment).
    pub(crate) fn ctl(&self, args: &[&str]) -> Run {
        self.ctl_env(args, &[])
    }

    /// Runs `scalesetctl args…`, which must exit 0.
    pub(crate) fn ok(&self, args: &[&str]) -> Run {
        let run = self.ctl(args);
        assert_eq!(run.code, 0, "scalesetctl {}: {run:?}", args.join(" "));
        run
    }

    /// Runs `scalesetctl args…`, which must exit 0 and print `prefix` first.
    pub(crate) fn ok_starting_with(&self, args: &[&str], prefix: &str) -> Run {
        let run = self.ok(args);
        assert!(
            run.stdout.starts_with(prefix),
            "scalesetctl {} does not start with {prefix:?}: {run:?}",
            args.join(" ")
        );
        run
    }

    /// Runs `scalesetctl scale-set create NAME --entity acme --provider fake --max-runners MAX
    /// extra…`, a scale set of the organization [`Server::with_acme`] makes. Its exit code is
    /// the caller's to assert: a create can be refused (2).
    pub(crate) fn create_scale_set(&self, name: &str, max_runners: u32, extra: &[&str]) -> Run {
        let max_runners = max_runners.to_string();
        let mut args = vec![
            "scale-set",
            "create",
            name,
            "--entity",
            "acme",
            "--provider",
            "fake",
            "--max-runners",
            &max_runners,
        ];
        args.extend_from_slice(extra);
        self.ctl(&args)
    }

    /// Runs `scalesetctl args…` with more environment.
    pub(crate) fn ctl_env(&self, args: &[&str], env: &[(&str, &str)]) -> Run {
        let mut all = vec![
            ("SCALESET_URL", self.url.as_str()),
            ("SCALESET_TOKEN", self.token.as_str()),
        ];
        all.extend_from_slice(env);
        ctl_with_env(args, &all)
    }

    /// Runs `scalesetctl -o json args…` and parses stdout.
    pub(crate) fn json(&self, args: &[&str]) -> (i32, serde_json::Value) {
        let mut all = vec!["-o", "json"];
        all.extend_from_slice(args);
        let run = self.ctl(&all);
        let value = serde_json::from_str(&run.stdout)
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {run:?}"));
        (run.code, value)
    }

    /// Polls `check` (which may run the CLI) until it answers `Some`, within the workspace's
    /// one bound.
    pub(crate) fn eventually<T>(&self, what: &str, mut check: impl FnMut() -> Option<T>) -> T {
        let runtime = self.runtime.as_ref().expect("the runtime runs");
        runtime.block_on(scaleset_eventually::eventually(what, || {
            let found = check();
            async move { found }
        }))
    }

    /// Runs `future` on the server's runtime (a test's own GitHub client, as GARM's).
    pub(crate) fn block_on<F: std::future::Future>(&self, future: F) -> F::Output {
        self.runtime
            .as_ref()
            .expect("the runtime runs")
            .block_on(future)
    }

    /// The runtime the server runs on, to drive async helpers from a test.
    pub(crate) fn runtime(&self) -> &tokio::runtime::Runtime {
        self.runtime.as_ref().expect("the runtime runs")
    }

    /// A directory for the test's files (removed with the server).
    pub(crate) fn dir(&self) -> &std::path::Path {
        self._dir.path()
    }

    /// Credentials `sim` for the simulator and an organization entity `acme` using them,
    /// created through the CLI.
    pub(crate) fn with_acme(&self) {
        let pat = self._dir.path().join("pat");
        std::fs::write(&pat, "ghp_simulator\n").expect("write the PAT");
        let run = self.ctl(&[
            "credential",
            "create",
            "sim",
            "--pat-file",
            pat.to_str().expect("utf-8"),
            "--base-url",
            &self.github,
            "--api-base-url",
            &format!("{}/api/v3", self.github),
        ]);
        assert_eq!(run.code, 0, "{run:?}");
        let run = self.ctl(&[
            "entity",
            "create",
            "organization",
            "acme",
            "--credentials",
            "sim",
        ]);
        assert_eq!(run.code, 0, "{run:?}");
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.cancel();
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_timeout(std::time::Duration::from_secs(5));
        }
    }
}

/// The controller id every test server has.
pub(crate) const CONTROLLER_ID: &str = "4b0d7c36-6a4e-4f5e-9b1c-2d8f0c1e7a55";
