//! Wiring for `serve`: bind the listener, load TLS, open the store (migrations), build the
//! API's state and router, optionally the worker's control loop, then serve until a signal.

use std::collections::BTreeMap;
use std::sync::Arc;

use anyhow::{Context as _, Result, bail};
use prometheus_client::registry::Registry;
use scaleset_api::{AppState, Limits};
use scaleset_config::Config;
use scaleset_control::{Controller, ControllerIdentity, StoreClientFactory};
use scaleset_provider::{FakeCloud, ProcessEnv, Provider};
use scaleset_store::{DatabaseUrl, DieselStore, Store, WriterLock, WriterLockError};
use tokio_util::sync::CancellationToken;

/// The process environment, as the GitHub client's proxy settings read it.
struct EnvMap<'a>(&'a BTreeMap<String, String>);

impl scaleset_github::Environment for EnvMap<'_> {
    fn var(&self, name: &str) -> Option<String> {
        self.0.get(name).cloned()
    }
}

pub(crate) async fn run(
    config: Config,
    env: &BTreeMap<String, String>,
    with_worker: bool,
) -> Result<()> {
    let tls = match &config.server.tls {
        Some(files) => Some(
            scaleset_api::tls_config(&files.cert, &files.key)
                .context("loading server.tls_cert_file and server.tls_key_file")?,
        ),
        None => None,
    };
    let url = config.store.url().clone();
    // One worker per SQLite file, shared with scaleset-worker's lock.
    let _lock = if with_worker {
        lock_sqlite(&url)?
    } else {
        None
    };
    let listener = tokio::net::TcpListener::bind(config.server.listen)
        .await
        .with_context(|| format!("cannot listen on {} (server.listen)", config.server.listen))?;
    let listen = listener.local_addr().context("reading the bound address")?;

    let store = DieselStore::open(config.store)
        .await
        .with_context(|| format!("cannot open the database {}", url.redacted()))?;
    let binding = store.controller_binding();
    if !binding.is_configured() {
        tracing::warn!(
            controller_id = %binding.id(),
            "no controller_id is configured; pin this one in the configuration, or a wiped \
             database will not find its scale sets and instances again"
        );
    }
    let id = binding.id();
    let store: Arc<dyn Store> = Arc::new(store);
    let identity = ControllerIdentity::new(id).with_owner_label(config.owner_label);
    let proxy = scaleset_github::ProxyConfig::from_env(&EnvMap(env));
    let clients = Arc::new(
        StoreClientFactory::new(store.clone())
            .with_config(move |config| config.with_proxy(proxy.clone())),
    );

    let mut registry = Registry::default();
    let cancel = CancellationToken::new();
    let mut worker = None;
    let mut metrics = None;
    if with_worker {
        let cloud = FakeCloud::new();
        let providers: BTreeMap<String, Arc<dyn Provider>> = config
            .providers
            .iter()
            .map(|p| (p.name.clone(), p.build(id, &ProcessEnv, &cloud)))
            .collect();
        let controller = Controller::new(
            store.clone(),
            clients.clone(),
            providers,
            identity.clone(),
            config.settings.clone(),
            &mut registry,
        );
        metrics = Some(controller.metrics());
        worker = Some(tokio::spawn(controller.run(cancel.clone())));
    }
    let limits = Limits {
        max_body_bytes: config.server.max_body_size,
        ..Limits::default()
    };
    let state = AppState::new(
        store,
        clients,
        identity,
        config.settings.clone(),
        metrics,
        registry,
    )
    .with_limits(limits)
    .with_providers(config.providers.iter().map(|p| p.name.clone()));
    let app = scaleset_api::router(Arc::new(state));
    let scheme = if tls.is_some() { "https" } else { "http" };
    // Installed before the ready line, so a signal sent as soon as it shows is handled.
    let signals = Signals::install()?;
    let server = tokio::spawn(scaleset_api::serve(
        listener,
        app,
        tls,
        cancel.clone().cancelled_owned(),
    ));
    tracing::info!(listen = %listen, controller_id = %id, with_worker, database = %url.redacted(), "scaleset-server started");
    errln!("scaleset-server listening on {scheme}://{listen}");

    let signal = signals.wait().await;
    tracing::info!(signal, "stopping");
    cancel.cancel();
    if let Some(worker) = worker {
        match tokio::time::timeout(config.worker.shutdown_timeout, worker).await {
            Ok(Ok(Ok(()))) => {}
            Ok(Ok(Err(e))) => return Err(e).context("the control loop failed while stopping"),
            Ok(Err(e)) => return Err(e).context("the control loop panicked while stopping"),
            Err(_) => tracing::warn!(
                "the control loop took longer than worker.shutdown_timeout; exiting anyway"
            ),
        }
    }
    server.await.context("the API server panicked")?;
    tracing::info!("stopped cleanly");
    Ok(())
}

/// The same lock `scaleset-worker` takes beside a SQLite file: one worker per file.
fn lock_sqlite(url: &DatabaseUrl) -> Result<Option<WriterLock>> {
    match WriterLock::acquire(url) {
        Ok(lock) => Ok(lock),
        Err(WriterLockError::Held { database, lock }) => bail!(
            "a worker already serves the SQLite database {database} (it holds {lock}); stop it, \
             or run scaleset-server without --with-worker"
        ),
        Err(e) => Err(e.into()),
    }
}

/// SIGTERM and SIGINT, installed before anything that a signal must stop cleanly.
pub(crate) struct Signals {
    term: tokio::signal::unix::Signal,
    int: tokio::signal::unix::Signal,
}

impl Signals {
    pub(crate) fn install() -> Result<Self> {
        use tokio::signal::unix::{SignalKind, signal};
        Ok(Self {
            term: signal(SignalKind::terminate()).context("installing the SIGTERM handler")?,
            int: signal(SignalKind::interrupt()).context("installing the SIGINT handler")?,
        })
    }

    pub(crate) async fn wait(mut self) -> &'static str {
        tokio::select! {
            _ = self.term.recv() => "SIGTERM",
            _ = self.int.recv() => "SIGINT",
        }
    }
}
