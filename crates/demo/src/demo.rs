//! Starting and stopping the whole demo in one process: the data directory, the simulated
//! GitHub, a configuration over them, the process built by the one composition root
//! (`scaleset_app::App`, as the worker and the server are) and the job stream.

use std::fs::File;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use nix::fcntl::Flock;
use scaleset_app::{App, Env, LoopError, Running};
use scaleset_config::Config;
use scaleset_control::{ControllerIdentity, Settings};
use scaleset_sim::{SimConfig, Simulator};
use scaleset_store::Store;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use crate::data_dir::DataDir;
use crate::error::Error;
use crate::fleet;
use crate::github::{Github, sim_config};
use crate::jobs::{self, JobStream};
use crate::machine::SimBoot;

/// How to run the demo.
#[derive(Debug, Clone)]
pub struct DemoOptions {
    /// Where everything is kept.
    pub data_dir: PathBuf,
    /// Where the simulated GitHub listens (its `/_sim/` control API included).
    pub github_listen: SocketAddr,
    /// Delete everything in the data directory first.
    pub reset: bool,
    /// The job stream; `None` feeds no jobs.
    pub jobs: Option<JobStream>,
    /// The control loop's settings.
    pub settings: Settings,
    /// The simulated GitHub's settings.
    pub github: SimConfig,
    /// How long a stop waits for the control loop to delete its sessions before it gives up
    /// (as the worker's `shutdown_timeout`; default 30 s).
    pub shutdown_timeout: Duration,
}

impl DemoOptions {
    /// The defaults for `data_dir`: GitHub on `127.0.0.1:8081`, the default job stream, and
    /// control settings that react within seconds (a scale set added through the API is
    /// picked up within 2 s, reconciliation every 30 s, runners must boot within 60 s).
    pub fn new(data_dir: PathBuf) -> Self {
        let mut settings = Settings {
            worker: "scaleset-demo".to_owned(),
            ..Settings::default()
        };
        settings.watch_interval = Duration::from_secs(2);
        settings.reconcile_interval = Duration::from_secs(30);
        settings.default_bootstrap_timeout = Duration::from_secs(60);
        settings.refused_recheck = Duration::from_secs(30);
        settings.foreign_session_recheck = Duration::from_secs(30);
        Self {
            data_dir,
            github_listen: SocketAddr::from(([127, 0, 0, 1], 8081)),
            reset: false,
            jobs: Some(JobStream::default()),
            settings,
            github: sim_config(),
            shutdown_timeout: Duration::from_secs(30),
        }
    }
}

/// A running demo.
pub struct Demo {
    dir: DataDir,
    _lock: Flock<File>,
    controller_id: Uuid,
    github: Github,
    app: Running,
    first_run: bool,
    declared: usize,
    stop_jobs: CancellationToken,
    jobs: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for Demo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Demo")
            .field("data_dir", &self.dir.root())
            .field("controller_id", &self.controller_id)
            .field("github", &self.github.addr)
            .finish_non_exhaustive()
    }
}

/// The demo's configuration, as a person would write it for a worker on this data directory:
/// SQLite and the encryption key in the directory, the pinned controller id, the `fake`
/// provider keeping its machines under `instances/`; then the options' settings and the
/// demo's fleet for the simulated GitHub at `github_url`.
fn config(
    dir: &DataDir,
    controller_id: Uuid,
    github_url: &str,
    options: &DemoOptions,
) -> Result<Config, Error> {
    // JSON string escapes are TOML basic-string escapes: any path is quoted safely.
    let quote =
        |path: &std::path::Path| serde_json::Value::from(path.to_string_lossy()).to_string();
    let database = serde_json::Value::from(format!("sqlite://{}", dir.database().display()));
    let text = format!(
        "controller_id = \"{controller_id}\"\n\
         [database]\nurl = {database}\n\
         [encryption]\nprimary_key_id = \"demo\"\n\
         [[encryption.keys]]\nid = \"demo\"\nfile = {key}\n\
         [[provider]]\nname = \"{provider}\"\nkind = \"fake\"\n\
         [fake]\nallow = true\nstate_dir = {instances}\n",
        key = quote(&dir.encryption_key_file()),
        provider = fleet::PROVIDER,
        instances = quote(&dir.instances()),
    );
    let mut config = Config::parse("the demo's configuration", &text, &Default::default())?;
    config.settings = options.settings.clone();
    config.worker.name = options.settings.worker.clone();
    config.worker.shutdown_timeout = options.shutdown_timeout;
    let key = scaleset_store::SecretString::from(dir.app_key()?);
    config.fleet = fleet::declared(github_url, key)?;
    config.source = "the demo's built-in fleet (crates/demo/src/fleet.rs)".to_owned();
    Ok(config)
}

impl Demo {
    /// Starts everything. On a data directory used before, the simulated GitHub, the fake
    /// cloud and the database are the ones left there; a missing database is rebuilt from the
    /// declared fleet (by `apply_declared`, as a worker's start does), and the control loop
    /// adopts what GitHub has.
    pub async fn start(options: DemoOptions) -> Result<Self, Error> {
        let dir = DataDir::create(&options.data_dir)?;
        let lock = dir.lock()?;
        if options.reset {
            dir.reset()?;
        }
        let controller_id = dir.controller_id()?;
        // Generated (owner-only) on the first run; the configuration reads it as a key file.
        dir.encryption_key()?;
        let identity = ControllerIdentity::new(controller_id);

        let (github, first_run) = Github::start(
            options.github.clone(),
            dir.github_state(),
            options.github_listen,
        )
        .await?;
        if first_run {
            fleet::seed_github(&github.sim, &identity)?;
            fleet::seed_foreign(&github.sim, &dir.instances())?;
            github.save()?;
        }

        let config = config(&dir, controller_id, &github.url(), &options)?;
        // No process variables: the demo talks to loopback only, so no proxy applies.
        let env =
            Env::new(Default::default()).with_fake_boot(Arc::new(SimBoot::new(github.sim.clone())));
        let app = App::build(&config, &env).await?;
        let declared = app.applied().map_or(0, |applied| applied.created);
        let app = app.start();
        let stop_jobs = CancellationToken::new();
        let jobs = options
            .jobs
            .map(|stream| tokio::spawn(jobs::run(github.sim.clone(), stream, stop_jobs.clone())));
        tracing::info!(
            data_dir = %dir.root().display(),
            github = %github.url(),
            controller_id = %controller_id,
            first_run,
            declared,
            "demo started"
        );
        Ok(Self {
            dir,
            _lock: lock,
            controller_id,
            github,
            app,
            first_run,
            declared,
            stop_jobs,
            jobs,
        })
    }

    /// The store the control loop writes (what the API and the status page read).
    pub fn store(&self) -> Arc<dyn Store> {
        self.app.store()
    }

    /// The running process: its API router (the API, the status page and the probes over the
    /// demo's store, sharing the control loop's metrics), identity and settings.
    pub fn app(&self) -> &Running {
        &self.app
    }

    /// The simulated GitHub, to steer it (add a foreign scale set, enqueue jobs, inspect).
    pub fn simulator(&self) -> &Simulator {
        &self.github.sim
    }

    /// The simulated GitHub's address (`http://ADDR/`; its control API is under `/_sim/`).
    pub fn github_url(&self) -> String {
        self.github.url()
    }

    /// The data directory's files.
    pub fn data_dir(&self) -> &DataDir {
        &self.dir
    }

    /// The pinned controller id.
    pub fn controller_id(&self) -> Uuid {
        self.controller_id
    }

    /// Whether the simulated GitHub was created by this start (a new data directory).
    pub fn first_run(&self) -> bool {
        self.first_run
    }

    /// How many of the fleet's scale sets this start stored anew (3 on a new or wiped
    /// database, 0 on a resumed one).
    pub fn declared(&self) -> usize {
        self.declared
    }

    /// Waits until the control loop ends by itself (an error: it runs until stopped).
    /// Cancel-safe: dropping the future leaves the loop running.
    pub async fn failed(&mut self) -> Error {
        self.app.failed().await.into()
    }

    /// Stops the job stream and the control loop (which deletes its message sessions and
    /// leaves the machines running), then the simulated GitHub, saving its world. A control
    /// loop that takes longer than [`DemoOptions::shutdown_timeout`] is abandoned (its sessions
    /// expire), so a stop is bounded whatever GitHub does.
    pub async fn stop(self) -> Result<(), Error> {
        self.stop_jobs.cancel();
        if let Some(jobs) = self.jobs {
            let _ = jobs.await;
        }
        let ended = self.app.stop().await;
        let saved = self.github.stop().await;
        ended.map_err(Error::from)?;
        saved
    }
}

impl From<LoopError> for Error {
    fn from(e: LoopError) -> Self {
        match e {
            LoopError::Failed(e) => Self::Control(e),
            LoopError::Ended => Self::Ended,
            LoopError::Panicked(e) => Self::Panicked(e),
        }
    }
}
