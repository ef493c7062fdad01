//! `scaleset-worker`: reads and validates the configuration, opens the store, applies the
//! declared fleet, and runs the control loop of `scaleset-control` with a small HTTP listener
//! for health and metrics, until SIGTERM or SIGINT. Thin on purpose: the behaviour lives in
//! `control`.
//!
//! Exit codes: 0 after a clean shutdown, 2 for an invalid configuration (nothing was opened),
//! 1 when starting failed (database, lock, port) or the loop failed.

#[macro_use]
mod console;
mod crash;
mod fake;
mod fleet;
mod http;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context as _, Result, bail};
use clap::{Parser, ValueEnum};
use prometheus_client::registry::Registry;
use scaleset_config::Config;
use scaleset_control::{Controller, ControllerIdentity, StoreClientFactory};
use scaleset_provider::{DirectoryProvider, FakeCloud, ProcessEnv, Provider, ProviderKind};
use scaleset_store::{
    ControllerBinding, DatabaseUrl, DieselStore, Store, WriterLock, WriterLockError,
};
use tokio_util::sync::CancellationToken;

/// Serves GitHub Actions runner scale sets from the configured fleet.
#[derive(Debug, Parser)]
#[command(name = "scaleset-worker", version)]
struct Args {
    /// The configuration file (TOML; every key overridable as SCALESET_<SECTION>__<KEY>).
    #[arg(long, value_name = "FILE")]
    config: PathBuf,
    /// Log format; the level is set by RUST_LOG (default: info).
    #[arg(long, value_enum, default_value_t = LogFormat::Text)]
    log_format: LogFormat,
    /// Validate the configuration, print "configuration ok" and exit.
    #[arg(long)]
    check: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line.
    Json,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let env: BTreeMap<String, String> = std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
        .collect();
    let config = match Config::load(&args.config, &env) {
        Ok(config) => config,
        Err(e) => {
            errln!("scaleset-worker: {e}");
            return ExitCode::from(2);
        }
    };
    if args.check {
        outln!("configuration ok");
        // Which App each key is for, without calling GitHub (issue 31).
        for credentials in &config.fleet.credentials {
            outln!("{}", scaleset_config::describe_credentials(credentials));
        }
        return ExitCode::SUCCESS;
    }
    init_tracing(args.log_format);
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            errln!("scaleset-worker: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(config, &env)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!(error = format!("{e:#}"), "scaleset-worker stopped");
            errln!("scaleset-worker: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// The environment the worker was started with, as the GitHub client's proxy settings read it
/// (the library never reads the process environment itself).
struct EnvMap<'a>(&'a BTreeMap<String, String>);

impl scaleset_github::Environment for EnvMap<'_> {
    fn var(&self, name: &str) -> Option<String> {
        self.0.get(name).cloned()
    }
}

fn init_tracing(format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    // Colour codes only for a terminal: in a file or a log collector they are noise.
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(ansi)
        .with_writer(std::io::stderr);
    match format {
        LogFormat::Text => builder.init(),
        LogFormat::Json => builder.json().flatten_event(true).init(),
    }
}

/// One machine, one writer: an exclusive lock beside the SQLite file, held for the process's
/// life (the kernel drops it when the process dies, even by kill -9).
fn lock_sqlite(url: &DatabaseUrl) -> Result<Option<WriterLock>> {
    match WriterLock::acquire(url) {
        Ok(lock) => Ok(lock),
        Err(WriterLockError::Held { database, lock }) => bail!(
            "another scaleset-worker already serves the SQLite database {database} (it holds \
             {lock}); SQLite serves one worker on one machine: stop the other worker, or \
             move to PostgreSQL to run several (docs/operations.md)"
        ),
        Err(e) => Err(e.into()),
    }
}

async fn run(config: Config, env: &BTreeMap<String, String>) -> Result<()> {
    let url = config.store.url().clone();
    let _lock = lock_sqlite(&url)?;
    let listener = tokio::net::TcpListener::bind(config.worker.listen)
        .await
        .with_context(|| format!("cannot listen on {} (worker.listen)", config.worker.listen))?;
    let listen = listener.local_addr().context("reading the bound address")?;

    let store = DieselStore::open(config.store)
        .await
        .with_context(|| format!("cannot open the database {}", url.redacted()))?;
    let id = match store.controller_binding() {
        ControllerBinding::Matched(id) | ControllerBinding::Adopted(id) => id,
        ControllerBinding::Stored(id) | ControllerBinding::Generated(id) => {
            tracing::warn!(
                controller_id = %id,
                "no controller_id is configured; pin this one in the configuration, or a \
                 wiped database will not find its scale sets and instances again"
            );
            id
        }
        _ => bail!("the database reports an unknown controller binding"),
    };
    let store: Arc<dyn Store> = Arc::new(store);
    let identity = ControllerIdentity::new(id).with_owner_label(config.owner_label);

    let applied = fleet::apply(store.as_ref(), &identity, &config.fleet)
        .await
        .context("applying the declared fleet to the database")?;
    tracing::info!(
        created = applied.created,
        updated = applied.updated,
        unchanged = applied.unchanged,
        refused = applied.refused,
        "fleet applied"
    );

    let cloud = FakeCloud::new();
    let mut providers: BTreeMap<String, Arc<dyn Provider>> = BTreeMap::new();
    for provider in &config.providers {
        let built: Arc<dyn Provider> = match (&provider.kind, &config.fake.state_dir) {
            (ProviderKind::Fake, Some(dir)) => {
                let directory = DirectoryProvider::new(dir.clone(), id);
                Arc::new(match config.fake.simulator_url.clone() {
                    Some(url) => directory.with_boot(Arc::new(fake::HttpBoot::new(url))),
                    None => directory,
                })
            }
            _ => provider.build(id, &ProcessEnv, &cloud),
        };
        providers.insert(provider.name.clone(), built);
    }

    let mut registry = Registry::default();
    // GitHub through HTTPS_PROXY / HTTP_PROXY / NO_PROXY, as the official client does by default.
    let proxy = scaleset_github::ProxyConfig::from_env(&EnvMap(env));
    tracing::info!(proxy = %proxy, "GitHub proxy settings from the environment");
    let clients = StoreClientFactory::new(store.clone())
        .with_config(move |config| config.with_proxy(proxy.clone()));
    let mut controller = Controller::new(
        store.clone(),
        Arc::new(clients),
        providers,
        identity,
        config.settings.clone(),
        &mut registry,
    );
    if let Some(hook) = crash::from_env(env) {
        controller = controller.with_checkpoints(hook);
    }
    let cancel = CancellationToken::new();
    let http_state = Arc::new(http::State {
        store: store.clone(),
        registry,
        worker: config.worker.name.clone(),
    });
    let http_stop = CancellationToken::new();
    let http_task = tokio::spawn(http::serve(listener, http_state, http_stop.clone()));
    tracing::info!(
        listen = %listen,
        worker = %config.worker.name,
        controller_id = %id,
        database = %url.redacted(),
        "scaleset-worker started"
    );
    let mut loop_task = tokio::spawn(controller.run(cancel.clone()));

    let signal = tokio::select! {
        signal = shutdown_signal() => signal?,
        ended = &mut loop_task => {
            http_stop.cancel();
            return match ended {
                Ok(Ok(())) => bail!("the control loop ended without being asked to"),
                Ok(Err(e)) => Err(e).context("the control loop failed"),
                Err(e) => Err(e).context("the control loop panicked"),
            };
        }
    };
    tracing::info!(
        signal,
        "stopping: deleting message sessions and releasing leases; instances stay running"
    );
    cancel.cancel();
    let stopped = tokio::time::timeout(config.worker.shutdown_timeout, &mut loop_task).await;
    http_stop.cancel();
    let _ = http_task.await;
    match stopped {
        Ok(Ok(Ok(()))) => {
            tracing::info!("stopped cleanly");
            Ok(())
        }
        Ok(Ok(Err(e))) => Err(e).context("the control loop failed while stopping"),
        Ok(Err(e)) => Err(e).context("the control loop panicked while stopping"),
        Err(_) => {
            loop_task.abort();
            tracing::warn!(
                timeout = ?config.worker.shutdown_timeout,
                "shutdown took longer than worker.shutdown_timeout; exiting anyway (leases \
                 expire, and the next start deletes our stale sessions)"
            );
            Ok(())
        }
    }
}

async fn shutdown_signal() -> Result<&'static str> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate()).context("installing the SIGTERM handler")?;
    let mut int = signal(SignalKind::interrupt()).context("installing the SIGINT handler")?;
    Ok(tokio::select! {
        _ = term.recv() => "SIGTERM",
        _ = int.recv() => "SIGINT",
    })
}
