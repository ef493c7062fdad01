//! Starting and stopping the whole demo in one process: the data directory, the simulated
//! GitHub, the store, the declared fleet, the fake cloud, the control loop and the job stream.

use std::collections::BTreeMap;
use std::fs::File;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use nix::fcntl::Flock;
use prometheus_client::registry::Registry;
use scaleset_control::{Controller, ControllerIdentity, Metrics, Settings, StoreClientFactory};
use scaleset_provider::{DirectoryProvider, Provider};
use scaleset_sim::{SimConfig, Simulator};
use scaleset_store::{DatabaseUrl, DieselStore, EncryptionKey, Keyring, Store, StoreOptions};
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
    store: Arc<dyn Store>,
    github: Github,
    registry: Option<Registry>,
    metrics: Arc<Metrics>,
    settings: Settings,
    shutdown_timeout: Duration,
    first_run: bool,
    declared: usize,
    cancel: CancellationToken,
    controller: Option<JoinHandle<Result<(), scaleset_control::Error>>>,
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

impl Demo {
    /// Starts everything. On a data directory used before, the simulated GitHub, the fake
    /// cloud and the database are the ones left there; a missing database is rebuilt from the
    /// declared fleet, and the control loop adopts what GitHub has.
    pub async fn start(options: DemoOptions) -> Result<Self, Error> {
        let dir = DataDir::create(&options.data_dir)?;
        let lock = dir.lock()?;
        if options.reset {
            dir.reset()?;
        }
        let controller_id = dir.controller_id()?;
        let key = EncryptionKey::from_bytes("demo", &dir.encryption_key()?)
            .map_err(Error::store("loading the encryption key"))?;
        let identity = ControllerIdentity::new(controller_id);

        let (github, first_run) =
            Github::start(options.github, dir.github_state(), options.github_listen).await?;
        if first_run {
            fleet::seed_github(&github.sim, &identity)?;
            github.save()?;
        }

        let url = DatabaseUrl::Sqlite {
            path: dir.database().to_string_lossy().into_owned(),
        };
        let store = DieselStore::open(
            StoreOptions::new(url, Keyring::new(key)).controller_id(Some(controller_id)),
        )
        .await
        .map_err(Error::store("opening the database"))?;
        let store: Arc<dyn Store> = Arc::new(store);
        let declared = fleet::declare(store.as_ref(), &github.url()).await?;

        let cloud = DirectoryProvider::new(dir.instances(), controller_id)
            .with_boot(Arc::new(SimBoot::new(github.sim.clone())));
        let mut providers: BTreeMap<String, Arc<dyn Provider>> = BTreeMap::new();
        providers.insert(fleet::PROVIDER.to_owned(), Arc::new(cloud));
        let mut registry = Registry::default();
        let settings = options.settings.clone();
        let shutdown_timeout = options.shutdown_timeout;
        let controller = Controller::new(
            store.clone(),
            Arc::new(StoreClientFactory::new(store.clone())),
            providers,
            identity,
            options.settings,
            &mut registry,
        );
        let metrics = controller.metrics();
        let cancel = CancellationToken::new();
        let controller = Some(tokio::spawn(controller.run(cancel.clone())));
        let jobs = options
            .jobs
            .map(|stream| tokio::spawn(jobs::run(github.sim.clone(), stream, cancel.clone())));
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
            store,
            github,
            registry: Some(registry),
            metrics,
            settings,
            shutdown_timeout,
            first_run,
            declared,
            cancel,
            controller,
            jobs,
        })
    }

    /// The store the control loop writes (what the API and the status page read).
    pub fn store(&self) -> Arc<dyn Store> {
        self.store.clone()
    }

    /// The control loop's metrics registry (once; `None` after the first call).
    pub fn take_registry(&mut self) -> Option<Registry> {
        self.registry.take()
    }

    /// The control loop's metrics (to share with an API served in the same process).
    pub fn metrics(&self) -> Arc<Metrics> {
        self.metrics.clone()
    }

    /// The controller's identity.
    pub fn identity(&self) -> ControllerIdentity {
        ControllerIdentity::new(self.controller_id)
    }

    /// The control loop's settings.
    pub fn settings(&self) -> &Settings {
        &self.settings
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

    /// How many of the fleet's scale sets this start declared in the store (3 on a new or
    /// wiped database, 0 on a resumed one).
    pub fn declared(&self) -> usize {
        self.declared
    }

    /// Waits until the control loop ends by itself (an error: it runs until stopped).
    /// Cancel-safe: dropping the future leaves the loop running.
    pub async fn failed(&mut self) -> Error {
        let Some(handle) = &mut self.controller else {
            return Error::Ended;
        };
        let ended = handle.await;
        self.controller = None;
        match ended {
            Ok(Ok(())) => Error::Ended,
            Ok(Err(e)) => Error::Control(e),
            Err(e) => Error::Panicked(e.to_string()),
        }
    }

    /// Stops the job stream and the control loop (which deletes its message sessions and
    /// leaves the machines running), then the simulated GitHub, saving its world. A control
    /// loop that takes longer than [`DemoOptions::shutdown_timeout`] is abandoned (its sessions
    /// expire), so a stop is bounded whatever GitHub does.
    pub async fn stop(self) -> Result<(), Error> {
        self.cancel.cancel();
        if let Some(jobs) = self.jobs {
            let _ = jobs.await;
        }
        let ended = match self.controller {
            Some(mut handle) => {
                match tokio::time::timeout(self.shutdown_timeout, &mut handle).await {
                    Ok(ended) => ended,
                    Err(_) => {
                        handle.abort();
                        tracing::warn!(
                            timeout = ?self.shutdown_timeout,
                            "the control loop took longer than the shutdown timeout; stopping anyway"
                        );
                        Ok(Ok(()))
                    }
                }
            }
            None => Ok(Ok(())),
        };
        let saved = self.github.stop().await;
        match ended {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return Err(Error::Control(e)),
            Err(e) => return Err(Error::Panicked(e.to_string())),
        }
        saved
    }
}
