//! [`App`]: everything a scaleset process runs, assembled in one place from the configuration
//! and the environment, and [`Running`]: it started.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use prometheus_client::registry::Registry;
use scaleset_api::{AppState, Limits};
use scaleset_config::Config;
use scaleset_control::{
    ClientFactory, Controller, ControllerIdentity, Metrics, Settings, StoreClientFactory,
};
use scaleset_fleet::{Action, ConfiguredFleet, DecommissionSource, apply_declared};
use scaleset_provider::Provider;
use scaleset_store::{ControllerBinding, DieselStore, Store, WriterLock, WriterLockError};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use crate::env::{Env, Vars};
use crate::error::{BuildError, LoopError};

/// What applying the declared fleet on start changed (the plan's counts).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FleetApplied {
    /// Scale sets stored anew (created or adopted by the control loop next).
    pub created: usize,
    /// Scale sets whose stored spec was changed to the declared one.
    pub updated: usize,
    /// Scale sets already as declared.
    pub unchanged: usize,
    /// Declared scale sets refused (each logged with its reason).
    pub refused: usize,
}

/// One scaleset process, built and not started: the store (migrated), the controller binding
/// and identity, the GitHub clients, and, when it runs the control loop, the SQLite lock, the
/// declared fleet applied, the providers and the [`Controller`].
pub struct App {
    id: Uuid,
    store: Arc<dyn Store>,
    identity: ControllerIdentity,
    clients: Arc<dyn ClientFactory>,
    /// The same factory, for handing it rotated secrets.
    store_clients: Arc<StoreClientFactory>,
    /// The declared secrets in files, watched for rotation, and the credentials they belong to.
    secret_files: Vec<scaleset_config::SecretFile>,
    /// The configuration's fleet and file: what the API refuses to change.
    configured: ConfiguredFleet,
    declared: Vec<scaleset_store::NewCredentials>,
    settings: Settings,
    provider_names: Vec<String>,
    limits: Limits,
    /// Browsers reach the server over HTTPS (`ServerConfig::https`).
    https: bool,
    shutdown_timeout: Duration,
    clock: Arc<dyn scaleset_store::Clock>,
    registry: Registry,
    controller: Option<(Controller, Arc<Metrics>)>,
    /// The decommissions the API serves: with the control loop's providers, so only then.
    decommission: Option<DecommissionSource>,
    applied: Option<FleetApplied>,
    database: String,
    lock: Option<WriterLock>,
}

impl std::fmt::Debug for App {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("App")
            .field("identity", &self.identity)
            .field("database", &self.database)
            .field("control_loop", &self.controller.is_some())
            .field("applied", &self.applied)
            .finish_non_exhaustive()
    }
}

impl App {
    /// A process that runs the control loop (`scaleset-worker`, `scaleset-server
    /// --with-worker`, the demo): takes the one-worker lock of a SQLite file, opens the store,
    /// reads the controller binding, applies the declared fleet (`apply_declared`: a wiped
    /// database is rebuilt from it; the start-up apply never prunes), builds the providers and
    /// the [`Controller`]. Nothing runs until [`App::start`].
    ///
    /// # Errors
    ///
    /// [`BuildError`]: the lock, the store, or the fleet.
    pub async fn build(config: &Config, env: &Env) -> Result<Self, BuildError> {
        let lock = lock_sqlite(config)?;
        let mut app = Self::open(config, env).await?;
        app.lock = lock;
        app.applied = Some(apply(app.store.as_ref(), &app.identity, config).await?);
        let providers: BTreeMap<String, Arc<dyn Provider>> =
            crate::providers::build(config, env, app.id);
        let mut controller = Controller::new(
            app.store.clone(),
            app.clients.clone(),
            providers.clone(),
            app.identity.clone(),
            app.settings.clone(),
            &mut app.registry,
        );
        // The one clock of the process: the API's and the loop's bootstrap deadlines read the
        // same time (a test's manual clock moves both).
        controller = controller.with_clock(env.clock.clone());
        if let Some(hook) = crate::crash::from_vars(&env.vars) {
            controller = controller.with_checkpoints(hook);
        }
        let metrics = controller.metrics();
        // The very providers the loop uses (an in-memory cloud built again would be empty),
        // and the loop told to let a scale set go while a decommission takes it.
        let proxy = scaleset_github::ProxyConfig::from_env(&Vars(&env.vars));
        let release = app
            .settings
            .lease_ttl
            .saturating_add(app.settings.watch_interval);
        app.decommission = Some(
            DecommissionSource::new(
                app.identity.clone(),
                config.fleet.clone(),
                providers,
                app.store.clone(),
                Arc::new(move |c| c.with_proxy(proxy.clone())),
            )
            .with_hands_off(controller.hands_off(), release),
        );
        app.controller = Some((controller, metrics));
        Ok(app)
    }

    /// A process that serves the API without the control loop (`scaleset-server`): opens the
    /// store and reads the controller binding; takes no lock, applies no fleet, builds no
    /// provider.
    ///
    /// # Errors
    ///
    /// [`BuildError::Open`] when the store cannot be opened.
    pub async fn build_api_only(config: &Config, env: &Env) -> Result<Self, BuildError> {
        Self::open(config, env).await
    }

    async fn open(config: &Config, env: &Env) -> Result<Self, BuildError> {
        let url = config.store.url().clone();
        let database = url.redacted().to_string();
        let store = DieselStore::open(config.store.clone())
            .await
            .map_err(|source| BuildError::Open {
                database: database.clone(),
                source,
            })?;
        let id = binding(store.controller_binding());
        let store: Arc<dyn Store> = Arc::new(store);
        let identity = ControllerIdentity::new(id).with_owner_label(config.owner_label);
        // GitHub through HTTPS_PROXY / HTTP_PROXY / NO_PROXY, as the official client does.
        let proxy = scaleset_github::ProxyConfig::from_env(&Vars(&env.vars));
        tracing::info!(proxy = %proxy, "GitHub proxy settings from the environment");
        let clients = Arc::new(
            StoreClientFactory::new(store.clone())
                .with_config(move |config| config.with_proxy(proxy.clone())),
        );
        let limits = Limits {
            max_body_bytes: config.server.max_body_size,
            ..Limits::default()
        };
        let https = config.server.https();
        Ok(Self {
            id,
            store,
            identity,
            clients: clients.clone(),
            store_clients: clients,
            secret_files: config.secret_files.clone(),
            declared: config.fleet.credentials.clone(),
            configured: ConfiguredFleet {
                file: config.source.clone(),
                fleet: config.fleet.clone(),
            },
            settings: config.settings.clone(),
            provider_names: config.providers.iter().map(|p| p.name.clone()).collect(),
            limits,
            https,
            shutdown_timeout: config.worker.shutdown_timeout,
            clock: env.clock.clone(),
            registry: Registry::default(),
            controller: None,
            decommission: None,
            applied: None,
            database,
            lock: None,
        })
    }

    /// The store.
    pub fn store(&self) -> Arc<dyn Store> {
        self.store.clone()
    }

    /// The controller id the store is bound to.
    pub fn controller_id(&self) -> Uuid {
        self.id
    }

    /// What applying the declared fleet changed (`None` without the control loop).
    pub fn applied(&self) -> Option<FleetApplied> {
        self.applied
    }

    /// The clock the control loop reads (`None` without the control loop): the process's one
    /// clock, [`Env::clock`], so a test's manual clock moves the loop's deadlines too.
    pub fn loop_clock(&self) -> Option<Arc<dyn scaleset_store::Clock>> {
        self.controller
            .as_ref()
            .map(|(controller, _)| controller.clock())
    }

    /// The database URL, its password redacted (for logs).
    pub fn database(&self) -> &str {
        &self.database
    }

    /// Starts the control loop (when built with one) and builds the HTTP state shared by the
    /// API and the probes. Stop it with [`Running::stop`].
    pub fn start(self) -> Running {
        let (controller, metrics) = match self.controller {
            Some((controller, metrics)) => (Some(controller), Some(metrics)),
            None => (None, None),
        };
        let mut state = AppState::new(
            self.store.clone(),
            self.clients,
            self.identity,
            self.settings.clone(),
            metrics,
            self.registry,
        )
        .with_limits(self.limits)
        .with_https(self.https)
        .with_providers(self.provider_names)
        .with_configured(self.configured)
        .with_clock(self.clock);
        if controller.is_some() {
            state = state.with_worker(self.settings.worker.clone());
        }
        if let Some(source) = self.decommission {
            state = state.with_decommission(source);
        }
        let cancel = CancellationToken::new();
        if !self.secret_files.is_empty() {
            let (store, clients, stop) = (self.store.clone(), self.store_clients, cancel.clone());
            let (files, declared) = (self.secret_files, self.declared);
            tokio::spawn(async move {
                crate::rotation::watch(files, &declared, store, clients, stop).await;
            });
        }
        let task = controller.map(|c| tokio::spawn(c.run(cancel.clone())));
        Running {
            state: Arc::new(state),
            task,
            cancel,
            http_stop: CancellationToken::new(),
            shutdown_timeout: self.shutdown_timeout,
            _lock: self.lock,
        }
    }
}

/// How a stop went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stopped {
    /// The control loop deleted its sessions and released its leases (or none ran).
    Cleanly,
    /// It took longer than `worker.shutdown_timeout` and was abandoned (logged; the process
    /// exits 3, [`crate::Exit::Partial`]).
    TimedOut,
}

/// A started [`App`]: the control loop running (when it has one) and the routers to serve.
pub struct Running {
    state: Arc<AppState>,
    task: Option<JoinHandle<Result<(), scaleset_control::Error>>>,
    cancel: CancellationToken,
    /// Fired by [`Running::serve_until`] to stop the HTTP server (`crate::lifecycle`).
    pub(crate) http_stop: CancellationToken,
    shutdown_timeout: Duration,
    _lock: Option<WriterLock>,
}

impl std::fmt::Debug for Running {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Running")
            .field("control_loop", &self.task.is_some())
            .finish_non_exhaustive()
    }
}

impl Running {
    /// The REST API, the status page and the probes (`scaleset-server`, the demo).
    pub fn api_router(&self) -> axum::Router {
        scaleset_api::router(self.state.clone())
    }

    /// Only `/healthz`, `/readyz` and `/metrics` (`scaleset-worker`): the same handlers as in
    /// [`Running::api_router`], so readiness means the same everywhere.
    pub fn probes_router(&self) -> axum::Router {
        scaleset_api::probes_router(self.state.clone())
    }

    /// The store.
    pub fn store(&self) -> Arc<dyn Store> {
        self.state.store.clone()
    }

    /// The control loop's metrics (shared with the API).
    pub fn metrics(&self) -> Arc<Metrics> {
        self.state.metrics.clone()
    }

    /// The controller's identity.
    pub fn identity(&self) -> &ControllerIdentity {
        &self.state.identity
    }

    /// The control loop's settings.
    pub fn settings(&self) -> &Settings {
        &self.state.settings
    }

    /// Waits until the control loop ends by itself (it runs until stopped, so this is an
    /// error); never returns without a control loop. Cancel-safe: dropping the future leaves
    /// the loop running.
    pub async fn failed(&mut self) -> LoopError {
        let Some(task) = &mut self.task else {
            return std::future::pending().await;
        };
        let ended = task.await;
        self.task = None;
        match ended {
            Ok(Ok(())) => LoopError::Ended,
            Ok(Err(e)) => LoopError::Failed(e),
            Err(e) => LoopError::Panicked(e.to_string()),
        }
    }

    /// Stops the control loop: it deletes its message sessions and releases its leases; the
    /// instances stay running. One that takes longer than `worker.shutdown_timeout` is
    /// abandoned (its leases expire, and the next start deletes the stale sessions), so a
    /// stop is bounded whatever GitHub does.
    ///
    /// # Errors
    ///
    /// [`LoopError`] when the loop failed or panicked while stopping.
    pub async fn stop(mut self) -> Result<Stopped, LoopError> {
        self.cancel.cancel();
        let Some(mut task) = self.task.take() else {
            return Ok(Stopped::Cleanly);
        };
        match tokio::time::timeout(self.shutdown_timeout, &mut task).await {
            Ok(Ok(Ok(()))) => Ok(Stopped::Cleanly),
            Ok(Ok(Err(e))) => Err(LoopError::Failed(e)),
            Ok(Err(e)) => Err(LoopError::Panicked(e.to_string())),
            Err(_) => {
                task.abort();
                tracing::warn!(
                    timeout = ?self.shutdown_timeout,
                    "shutdown took longer than worker.shutdown_timeout; exiting anyway (leases \
                     expire, and the next start deletes our stale sessions)"
                );
                Ok(Stopped::TimedOut)
            }
        }
    }
}

/// The id the store is bound to; an unpinned one is logged, because a wiped database must find
/// its scale sets and instances again by it.
fn binding(binding: ControllerBinding) -> Uuid {
    if !binding.is_configured() {
        tracing::warn!(
            controller_id = %binding.id(),
            "no controller_id is configured; pin this one in the configuration, or a wiped \
             database will not find its scale sets and instances again"
        );
    }
    binding.id()
}

/// One machine, one writer: an exclusive lock beside a SQLite file, held for the process's
/// life (the kernel drops it when the process dies, even by kill -9). `None` for PostgreSQL.
fn lock_sqlite(config: &Config) -> Result<Option<WriterLock>, BuildError> {
    match WriterLock::acquire(config.store.url()) {
        Ok(lock) => Ok(lock),
        Err(WriterLockError::Held { database, lock }) => Err(BuildError::Locked { database, lock }),
        Err(e) => Err(BuildError::Lock(e)),
    }
}

/// Applies the declared fleet through the one plan/apply path (`apply_declared`).
async fn apply(
    store: &dyn Store,
    identity: &ControllerIdentity,
    config: &Config,
) -> Result<FleetApplied, BuildError> {
    let applied = apply_declared(store, identity, &config.fleet)
        .await
        .map_err(BuildError::Fleet)?;
    let plan = &applied.plan;
    for step in &plan.scale_sets {
        if step.action == Action::Refuse {
            tracing::warn!(scale_set = %step.key, reason = %step.reason, "declared scale set refused");
        }
    }
    let counts = FleetApplied {
        created: plan.count(Action::Create) + plan.count(Action::Adopt),
        updated: plan.count(Action::Update),
        unchanged: plan.count(Action::Unchanged),
        refused: plan.count(Action::Refuse),
    };
    tracing::info!(
        created = counts.created,
        updated = counts.updated,
        unchanged = counts.unchanged,
        refused = counts.refused,
        "fleet applied"
    );
    Ok(counts)
}
