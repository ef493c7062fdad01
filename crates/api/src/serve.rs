//! Serving the router on an already-bound listener until a shutdown future completes: HTTP/1.1
//! and HTTP/2 through hyper-util's auto builder, optionally behind TLS (rustls with `ring`,
//! ALPN `h2` and `http/1.1`). On shutdown the listener stops accepting, open connections get a
//! graceful close (answers in flight are sent), and the call returns when they are done.
//!
//! Every port holds against hostile clients ([`ConnectionLimits`]): a connection must deliver
//! its request headers within the header-read timeout (the TLS handshake included) and is closed
//! after the idle timeout with no request in flight; at most `max_connections` are served at
//! once (one more is closed on accept); HTTP/2 streams and header lists are bounded; and a
//! failing `accept` (no file descriptor left) backs off instead of spinning.

use std::future::Future;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use tokio::net::TcpListener;
use tokio::sync::{Semaphore, watch};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// A TLS failure while loading the certificate or key.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// A file could not be read or parsed.
    #[error("cannot load the TLS {what} from {path}: {reason}")]
    Load {
        /// `certificate` or `private key`.
        what: &'static str,
        /// The file.
        path: String,
        /// Why.
        reason: String,
    },
    /// rustls refused the pair.
    #[error("the TLS certificate and key do not form a usable server identity: {0}")]
    Config(#[from] rustls::Error),
}

/// A rustls server configuration from PEM files (the certificate chain and its private key),
/// with the `ring` provider and ALPN `h2`, `http/1.1`.
pub fn tls_config(cert: &Path, key: &Path) -> Result<Arc<rustls::ServerConfig>, TlsError> {
    use rustls_pki_types::pem::PemObject as _;
    use rustls_pki_types::{CertificateDer, PrivateKeyDer};
    let load = |what: &'static str, path: &Path, reason: String| TlsError::Load {
        what,
        path: path.display().to_string(),
        reason,
    };
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
        .map_err(|e| load("certificate", cert, e.to_string()))?
        .collect::<Result<_, _>>()
        .map_err(|e| load("certificate", cert, e.to_string()))?;
    if chain.is_empty() {
        return Err(load(
            "certificate",
            cert,
            "no PEM certificate in the file".to_owned(),
        ));
    }
    let key_der =
        PrivateKeyDer::from_pem_file(key).map_err(|e| load("private key", key, e.to_string()))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_single_cert(chain, key_der)?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// How a served port holds against slow, idle and numerous clients. [`Default`] is what every
/// port gets unless configured (`[server]` keys, docs/configuration.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionLimits {
    /// How long a connection may take to deliver a request's headers: from the accept to the
    /// end of its first request's headers (TLS handshake and protocol detection included), and
    /// for each later HTTP/1.1 request, from the moment the server waits for it.
    pub header_read_timeout: Duration,
    /// How long a connection may stay open with no request in flight (HTTP/1.1 keep-alive and
    /// HTTP/2 alike); then it is closed.
    pub idle_timeout: Duration,
    /// How many connections are served at once; one more is closed as soon as it is accepted.
    pub max_connections: usize,
    /// HTTP/2: the most streams (requests) one connection may have open at once.
    pub http2_max_concurrent_streams: u32,
    /// HTTP/2: the largest header list of a request, in bytes.
    pub http2_max_header_list_size: u32,
}

impl Default for ConnectionLimits {
    fn default() -> Self {
        Self {
            header_read_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(60),
            max_connections: 1024,
            http2_max_concurrent_streams: 100,
            http2_max_header_list_size: 64 * 1024,
        }
    }
}

/// Serves `app` on `listener` (TLS when `tls` is given) with the default
/// [`ConnectionLimits`] until `shutdown` completes, then closes connections gracefully and
/// returns.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    tls: Option<Arc<rustls::ServerConfig>>,
    shutdown: impl Future<Output = ()> + Send,
) {
    serve_with(listener, app, tls, ConnectionLimits::default(), shutdown).await;
}

/// [`serve`] with the given limits.
///
/// A failing `accept` (the process is out of file descriptors, `EMFILE`/`ENFILE`, or out of
/// memory) is retried after a pause that doubles from 5 ms up to 1 s and resets on the next
/// accepted connection; it is logged when it starts and then at most every 10 s, with the
/// number of failures since the last line. The connections waiting in the kernel's queue are
/// accepted once descriptors are free, and the loop never spins. A connection beyond `max_connections` is closed at once.
#[allow(
    clippy::disallowed_methods,
    reason = "an accept error of the process (no descriptor) backs off instead of spinning"
)]
pub async fn serve_with(
    listener: TcpListener,
    app: Router,
    tls: Option<Arc<rustls::ServerConfig>>,
    limits: ConnectionLimits,
    shutdown: impl Future<Output = ()> + Send,
) {
    let acceptor = tls.map(tokio_rustls::TlsAcceptor::from);
    let stop = CancellationToken::new();
    let tracker = TaskTracker::new();
    let slots = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let mut failures = Throttled::new("accepting a connection failed; retrying with backoff");
    let mut refused = Throttled::new(
        "a connection was closed at once: server.max_connections connections are open",
    );
    let mut pause = ACCEPT_PAUSE_MIN;
    tokio::pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) if is_connection_error(&e) => continue,
                Err(e) => {
                    failures.note(&e);
                    // The error is the process's (no descriptor, no memory), not the peer's:
                    // retrying at once would spin on it.
                    tokio::select! {
                        () = &mut shutdown => break,
                        () = tokio::time::sleep(pause) => {}
                    }
                    pause = (pause * 2).min(ACCEPT_PAUSE_MAX);
                    continue;
                }
            },
        };
        pause = ACCEPT_PAUSE_MIN;
        failures.recovered("accepting connections again");
        let Ok(slot) = Arc::clone(&slots).try_acquire_owned() else {
            refused.note(&format!("{} connections open", limits.max_connections));
            drop(stream);
            continue;
        };
        refused.recovered("connections below server.max_connections again");
        let app = app.clone();
        let acceptor = acceptor.clone();
        let stop = stop.clone();
        tracker.spawn(async move {
            let _slot = slot;
            let activity = Activity::new();
            let opened = connection_opened(acceptor, stream, app, stop, limits, activity);
            opened.await;
            tracing::trace!(%peer, "connection closed");
        });
    }
    stop.cancel();
    tracker.close();
    tracker.wait().await;
}

/// The first pause after a failed accept, and the longest.
const ACCEPT_PAUSE_MIN: Duration = Duration::from_millis(5);
const ACCEPT_PAUSE_MAX: Duration = Duration::from_secs(1);

/// An accept error that concerns one connection (the peer gave up before it was accepted),
/// not the listener: the next accept may succeed at once.
fn is_connection_error(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::ConnectionRefused
            | std::io::ErrorKind::ConnectionAborted
            | std::io::ErrorKind::ConnectionReset
            | std::io::ErrorKind::Interrupted
    )
}

/// A warning that repeats while a condition lasts, logged when it starts and then at most every
/// [`Throttled::EVERY`], with the number of occurrences in between.
struct Throttled {
    message: &'static str,
    last: Option<Instant>,
    since_last: u64,
    total: u64,
}

impl Throttled {
    const EVERY: Duration = Duration::from_secs(10);

    fn new(message: &'static str) -> Self {
        Self {
            message,
            last: None,
            since_last: 0,
            total: 0,
        }
    }

    fn note(&mut self, error: &dyn std::fmt::Display) {
        self.total += 1;
        self.since_last += 1;
        let now = Instant::now();
        if self
            .last
            .is_none_or(|last| now.duration_since(last) >= Self::EVERY)
        {
            tracing::warn!(error = %error, occurrences = self.since_last, "{}", self.message);
            self.last = Some(now);
            self.since_last = 0;
        }
    }

    fn recovered(&mut self, message: &'static str) {
        if self.total > 0 {
            tracing::info!(occurrences = self.total, "{message}");
            *self = Self::new(self.message);
        }
    }
}

/// Whether a connection has a request in flight, and since when it has had none: what the
/// header-read and idle deadlines are measured from.
#[derive(Clone)]
struct Activity(Arc<watch::Sender<Phase>>);

#[derive(Debug, Clone, Copy)]
enum Phase {
    /// Accepted; no request has reached the router yet.
    Opening { since: Instant },
    /// This many requests are being answered.
    Busy(usize),
    /// Between requests.
    Idle { since: Instant },
}

impl Activity {
    fn new() -> Self {
        Self(Arc::new(watch::Sender::new(Phase::Opening {
            since: Instant::now(),
        })))
    }

    /// A request reached the router; it is done when the guard drops.
    fn begin(&self) -> Busy {
        self.0.send_modify(|phase| {
            *phase = match *phase {
                Phase::Busy(n) => Phase::Busy(n + 1),
                Phase::Opening { .. } | Phase::Idle { .. } => Phase::Busy(1),
            }
        });
        Busy(self.clone())
    }

    /// When the connection is to be closed if nothing happens (`None` while busy).
    fn deadline(phase: Phase, limits: &ConnectionLimits) -> Option<Instant> {
        match phase {
            Phase::Opening { since } => Some(since + limits.header_read_timeout),
            Phase::Busy(_) => None,
            Phase::Idle { since } => Some(since + limits.idle_timeout),
        }
    }
}

/// One request in flight on a connection.
struct Busy(Activity);

impl Drop for Busy {
    fn drop(&mut self) {
        self.0.0.send_modify(|phase| {
            *phase = match *phase {
                Phase::Busy(n) if n > 1 => Phase::Busy(n - 1),
                _ => Phase::Idle {
                    since: Instant::now(),
                },
            }
        });
    }
}

/// A connection from its accept to its end: the TLS handshake (when serving TLS) and the
/// HTTP connection, closed when a deadline of `limits` passes with nothing in flight.
async fn connection_opened(
    acceptor: Option<tokio_rustls::TlsAcceptor>,
    stream: tokio::net::TcpStream,
    app: Router,
    stop: CancellationToken,
    limits: ConnectionLimits,
    activity: Activity,
) {
    match acceptor {
        None => connection(TokioIo::new(stream), app, stop, limits, activity).await,
        Some(acceptor) => {
            // The handshake counts against the header-read timeout, as the headers do.
            let handshake =
                tokio::time::timeout(limits.header_read_timeout, acceptor.accept(stream));
            match handshake.await {
                Ok(Ok(tls)) => connection(TokioIo::new(tls), app, stop, limits, activity).await,
                Ok(Err(e)) => tracing::debug!(error = %e, "TLS handshake failed"),
                Err(_) => tracing::debug!("TLS handshake timed out"),
            }
        }
    }
}

#[allow(clippy::disallowed_methods, reason = "a connection's idle deadline")]
async fn connection<I>(
    io: I,
    app: Router,
    stop: CancellationToken,
    limits: ConnectionLimits,
    activity: Activity,
) where
    I: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
{
    let mut phases = activity.0.subscribe();
    let counted = activity.clone();
    let service = hyper::service::service_fn(move |request: hyper::Request<Incoming>| {
        let busy = counted.begin();
        let app = app.clone();
        async move {
            let response = tower::ServiceExt::oneshot(app, request).await;
            drop(busy);
            response
        }
    });
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout);
    builder
        .http2()
        .timer(TokioTimer::new())
        .max_concurrent_streams(limits.http2_max_concurrent_streams)
        .max_header_list_size(limits.http2_max_header_list_size);
    let conn = builder.serve_connection_with_upgrades(io, service);
    tokio::pin!(conn);
    loop {
        let deadline = Activity::deadline(*phases.borrow_and_update(), &limits);
        let expired = async {
            match deadline {
                Some(deadline) => tokio::time::sleep_until(deadline.into()).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            result = conn.as_mut() => {
                if let Err(error) = result {
                    tracing::debug!(%error, "connection ended with an error");
                }
                return;
            }
            () = stop.cancelled() => break,
            changed = phases.changed() => {
                if changed.is_err() {
                    return;
                }
            }
            () = expired => {
                // Nothing in flight: dropping the connection closes it.
                tracing::debug!("closing a connection that sent no request in time");
                return;
            }
        }
    }
    conn.as_mut().graceful_shutdown();
    if let Err(error) = conn.await {
        tracing::debug!(%error, "connection ended with an error while closing");
    }
}
