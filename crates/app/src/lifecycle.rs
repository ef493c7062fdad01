//! The process lifecycle, written once for `scaleset-worker` and `scaleset-server`: install the
//! signal handlers, build the [`App`], bind the listener, start, serve until a signal or a
//! failure of the control loop ([`Running::serve_until`]), then stop in one order.
//!
//! **The order.** HTTP stops first (no new request is accepted; those in flight finish), then
//! the control loop (its sessions deleted, its leases released, bounded by
//! `worker.shutdown_timeout`). A request in flight (an apply, a delete, a decommission, which
//! run through the loop's providers and its hands-off) completes against a live loop, and
//! nothing is accepted by a process that no longer serves its scale sets. A loop that fails by
//! itself is stopped the same way: HTTP stops, then [`Running::stop`] runs (it cancels the
//! secret-file watch and releases the SQLite lock), and only then is the failure returned.

use std::future::Future;
use std::net::SocketAddr;

use scaleset_config::Config;
use tokio_util::sync::CancellationToken;

use crate::app::{App, Running, Stopped};
use crate::env::Env;
use crate::error::{BuildError, LoopError};
use crate::signals::Deferred;

/// Which process is served.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// `scaleset-worker`: the control loop, and `/healthz`, `/readyz`, `/metrics` on
    /// `worker.listen`.
    Worker,
    /// `scaleset-server`: the API and the status page on `server.listen`, with the control loop
    /// in the process when `with_worker`.
    Server {
        /// `--with-worker`.
        with_worker: bool,
    },
}

impl Role {
    fn program(self) -> &'static str {
        match self {
            Self::Worker => "scaleset-worker",
            Self::Server { .. } => "scaleset-server",
        }
    }
}

/// Why serving failed, or ended with a failure.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The signal handlers could not be installed.
    #[error("installing the SIGTERM and SIGINT handlers")]
    Signals(#[source] std::io::Error),
    /// The server's certificate or key could not be loaded.
    #[error("loading server.tls_cert_file and server.tls_key_file")]
    Tls(#[source] scaleset_api::TlsError),
    /// The process could not be built (lock, store, fleet).
    #[error(transparent)]
    Build(#[from] BuildError),
    /// The listener could not be bound.
    #[error("cannot listen on {addr} ({key})")]
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// The configuration key that names it.
        key: &'static str,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// The control loop ended by itself; HTTP and the loop were stopped before this returned.
    #[error("the control loop stopped serving")]
    Loop(#[source] LoopError),
    /// The control loop failed while it was stopping.
    #[error("stopping the control loop")]
    Stop(#[source] LoopError),
    /// The HTTP server's task panicked (a bug: please report it).
    #[error("the HTTP server panicked: {0}")]
    HttpPanicked(String),
}

/// Serves `role` with `config` until SIGTERM or SIGINT (or a failure of the control loop),
/// then stops in the one order of [`Running::serve_until`]. The whole start/stop sequence of
/// both binaries.
///
/// # Errors
///
/// [`ServeError`]: what failed to start, or how serving ended badly.
pub async fn serve(
    role: Role,
    config: &Config,
    env: &Env,
    signals: Deferred,
) -> Result<Stopped, ServeError> {
    // Before anything a signal must stop cleanly; one that came while the process was starting
    // is delivered now, and the process stops right after it started.
    let signals = signals.install().map_err(ServeError::Signals)?;
    let tls = match (role, &config.server.tls) {
        (Role::Server { .. }, Some(files)) => {
            Some(scaleset_api::tls_config(&files.cert, &files.key).map_err(ServeError::Tls)?)
        }
        _ => None,
    };
    let mut signalled = Box::pin(signals.wait());
    let build = async {
        match role {
            Role::Server { with_worker: false } => App::build_api_only(config, env).await,
            Role::Worker | Role::Server { with_worker: true } => App::build(config, env).await,
        }
    };
    // The build is raced with a signal: it waits on the database (the connection, the
    // migrations, the fleet's apply), which a partition holds for as long as TCP retries, and a
    // SIGTERM must still end the process (the partition soak found one that never did).
    let app = tokio::select! {
        app = build => app?,
        signal = &mut signalled => {
            tracing::info!(signal, "stopped while starting: nothing was served yet");
            return Ok(Stopped::Cleanly);
        }
    };
    let (addr, key) = match role {
        Role::Worker => (config.worker.listen, "worker.listen"),
        Role::Server { .. } => (config.server.listen, "server.listen"),
    };
    let bind = |source| ServeError::Bind { addr, key, source };
    let listener = tokio::net::TcpListener::bind(addr).await.map_err(bind)?;
    let listen = listener.local_addr().map_err(bind)?;
    let (controller_id, database) = (app.controller_id(), app.database().to_owned());
    let running = app.start();
    let stop = running.http_stop();
    let http: std::pin::Pin<Box<dyn Future<Output = ()> + Send>> = match role {
        Role::Worker => Box::pin(scaleset_api::serve(
            listener,
            running.probes_router(),
            None,
            stop,
        )),
        Role::Server { .. } => Box::pin(scaleset_api::serve_with(
            listener,
            running.api_router(),
            tls.clone(),
            scaleset_api::ConnectionLimits {
                header_read_timeout: config.server.header_read_timeout,
                idle_timeout: config.server.idle_timeout,
                max_connections: config.server.max_connections,
                http2_max_concurrent_streams: config.server.http2_max_concurrent_streams,
                http2_max_header_list_size: config.server.http2_max_header_list_size,
            },
            stop,
        )),
    };
    let program = role.program();
    tracing::info!(
        listen = %listen,
        worker = %config.settings.worker,
        controller_id = %controller_id,
        with_worker = !matches!(role, Role::Server { with_worker: false }),
        database = %database,
        "{program} started"
    );
    // The ready line, on stderr whatever the log format and filter: a supervisor (and a test)
    // learns the bound address from it, never from a log line.
    let scheme = if tls.is_some() { "https" } else { "http" };
    crate::errln!("{program} listening on {scheme}://{listen}");
    let stopped = running
        .serve_until(http, async move {
            let signal = signalled.await;
            tracing::info!(
                signal,
                "stopping: HTTP first, then the control loop (sessions deleted, leases \
                 released; instances stay running)"
            );
        })
        .await?;
    if stopped == Stopped::Cleanly {
        tracing::info!("stopped cleanly");
    }
    Ok(stopped)
}

impl Running {
    /// The future an HTTP server of this process is given as its shutdown:
    /// [`Running::serve_until`] completes it when it stops HTTP.
    pub fn http_stop(&self) -> tokio_util::sync::WaitForCancellationFutureOwned {
        self.http_stop.clone().cancelled_owned()
    }

    /// Runs `http` (a server given [`Running::http_stop`] as its shutdown) until `shutdown`
    /// completes or the control loop ends by itself, then stops HTTP and after it the control
    /// loop (module documentation: why this order), in both cases.
    ///
    /// # Errors
    ///
    /// [`ServeError::Loop`] when the loop ended by itself (after both were stopped),
    /// [`ServeError::Stop`] when it failed while stopping, [`ServeError::HttpPanicked`].
    pub async fn serve_until(
        self,
        http: impl Future<Output = ()> + Send + 'static,
        shutdown: impl Future<Output = ()>,
    ) -> Result<Stopped, ServeError> {
        let http_stop = self.http_stop.clone();
        sequence(self, http, http_stop, shutdown).await
    }
}

/// The control loop as the stop sequence sees it ([`Running`], or a test's fake).
pub(crate) trait Loop {
    /// Completes when the loop ended without being asked to.
    async fn failed(&mut self) -> LoopError;
    /// Stops the loop.
    async fn stop(self) -> Result<Stopped, LoopError>;
}

impl Loop for Running {
    async fn failed(&mut self) -> LoopError {
        Self::failed(self).await
    }

    async fn stop(self) -> Result<Stopped, LoopError> {
        Self::stop(self).await
    }
}

/// The one start/stop sequence: `http` runs until `shutdown` or a failure of `control`; then
/// `http_stop` fires and `http` is awaited, then `control` is stopped.
pub(crate) async fn sequence<L: Loop>(
    mut control: L,
    http: impl Future<Output = ()> + Send + 'static,
    http_stop: CancellationToken,
    shutdown: impl Future<Output = ()>,
) -> Result<Stopped, ServeError> {
    let server = tokio::spawn(http);
    let failed = tokio::select! {
        () = shutdown => None,
        failed = control.failed() => Some(failed),
    };
    http_stop.cancel();
    let served = server.await;
    let stopped = control.stop().await;
    if let Some(failed) = failed {
        return Err(ServeError::Loop(failed));
    }
    served.map_err(|e| ServeError::HttpPanicked(e.to_string()))?;
    stopped.map_err(ServeError::Stop)
}

#[cfg(test)]
mod tests;
