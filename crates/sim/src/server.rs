//! Serving: the accept loop on an already-bound listener, one connection task per client
//! (plain HTTP/1.1 or h2c by prior knowledge; with TLS, the version ALPN chose), the timer task, and graceful shutdown when the shutdown future completes (held
//! long-polls answer 202 at once).

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::time::Duration;

use std::sync::Arc;
use std::sync::atomic::Ordering;

use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::Simulator;
use crate::error::Error;
use crate::request::Connection;
use crate::simulator::Shared;

impl Simulator {
    /// Serves the simulated GitHub (REST under `/api/v3/`, the Actions service under the
    /// configured base path, the queue on its path, the control API under `/_sim/`) on
    /// `listener` until `shutdown` completes, then answers held long-polls with 202, closes
    /// every connection and returns. A simulator is served once: after shutdown its long-polls
    /// no longer wait.
    #[allow(
        clippy::disallowed_methods,
        reason = "an accept error (EMFILE) backs off instead of spinning"
    )]
    pub async fn serve(
        &self,
        listener: TcpListener,
        shutdown: impl Future<Output = ()> + Send,
    ) -> Result<(), Error> {
        let shared = self.shared.clone();
        let tracker = TaskTracker::new();
        tracker.spawn(ticker(shared.clone()));
        tokio::pin!(shutdown);
        loop {
            tokio::select! {
                () = &mut shutdown => break,
                accepted = listener.accept() => match accepted {
                    Ok((stream, peer)) => {
                        let shared = shared.clone();
                        tracker.spawn(connection(shared, stream, peer));
                    }
                    Err(error) => {
                        // Typically EMFILE: back off instead of spinning.
                        tracing::warn!(%error, "accept failed");
                        tokio::time::sleep(Duration::from_millis(10)).await;
                    }
                },
            }
        }
        shared.shutdown.cancel();
        tracker.close();
        tracker.wait().await;
        Ok(())
    }
}

async fn ticker(shared: Arc<Shared>) {
    let mut interval = tokio::time::interval(shared.config.tick_interval);
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = interval.tick() => shared.tick(),
            () = shared.shutdown.cancelled() => return,
        }
    }
}

/// Counts one open connection for the lifetime of the guard.
struct OpenConnection(Arc<Shared>);

impl OpenConnection {
    fn new(shared: &Arc<Shared>) -> Self {
        shared.open_connections.fetch_add(1, Ordering::SeqCst);
        Self(shared.clone())
    }
}

impl Drop for OpenConnection {
    fn drop(&mut self) {
        self.0.open_connections.fetch_sub(1, Ordering::SeqCst);
    }
}

/// How long a client may take over the TLS handshake before its connection is dropped.
const TLS_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Which HTTP versions a connection may speak.
#[derive(Clone, Copy)]
enum Versions {
    /// Plain TCP: HTTP/1.1, or h2c when the client opens with the HTTP/2 preface.
    Either,
    /// ALPN chose `http/1.1`.
    Http1,
    /// ALPN chose `h2`.
    Http2,
}

async fn connection(shared: Arc<Shared>, stream: tokio::net::TcpStream, peer: SocketAddr) {
    let _open = OpenConnection::new(&shared);
    let Some(acceptor) = shared.tls.clone() else {
        serve_http(shared, TokioIo::new(stream), "http", Versions::Either, peer).await;
        return;
    };
    let stream = match tokio::time::timeout(TLS_HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await {
        Ok(Ok(stream)) => stream,
        Ok(Err(error)) => {
            tracing::debug!(%error, "TLS handshake failed");
            return;
        }
        Err(_) => {
            tracing::debug!("TLS handshake timed out");
            return;
        }
    };
    let versions = match stream.get_ref().1.alpn_protocol() {
        Some(b"h2") => Versions::Http2,
        Some(b"http/1.1") => Versions::Http1,
        // No ALPN: the client did not say; take either, as on plain TCP.
        _ => Versions::Either,
    };
    serve_http(shared, TokioIo::new(stream), "https", versions, peer).await;
}

/// Serves HTTP on one established connection until the client leaves, the `goaway` fault
/// closes it, or the simulator shuts down (both graceful: HTTP/2 `GOAWAY`, answers in flight
/// still sent).
async fn serve_http<I>(
    shared: Arc<Shared>,
    io: I,
    scheme: &'static str,
    versions: Versions,
    peer: SocketAddr,
) where
    I: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
{
    let goaway = CancellationToken::new();
    let context = Connection {
        scheme,
        goaway: goaway.clone(),
        peer: Some(peer),
    };
    let handler = shared.clone();
    let service = service_fn(move |mut req: hyper::Request<hyper::body::Incoming>| {
        let shared = handler.clone();
        if req.version() == http::Version::HTTP_2 {
            shared.http2_requests.fetch_add(1, Ordering::SeqCst);
        }
        req.extensions_mut().insert(context.clone());
        async move { Ok::<_, Infallible>(crate::service::handle(shared, req).await) }
    });
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder
        .http2()
        .max_concurrent_streams(shared.config.http2_max_concurrent_streams);
    let builder = match versions {
        Versions::Either => builder,
        Versions::Http1 => builder.http1_only(),
        Versions::Http2 => builder.http2_only(),
    };
    let conn = builder.serve_connection(io, service);
    tokio::pin!(conn);
    tokio::select! {
        result = conn.as_mut() => {
            if let Err(error) = result {
                tracing::debug!(%error, "connection ended with an error");
            }
            return;
        }
        () = shared.shutdown.cancelled() => {}
        () = goaway.cancelled() => {}
    }
    conn.as_mut().graceful_shutdown();
    if let Err(error) = conn.await {
        tracing::debug!(%error, "connection ended with an error while closing");
    }
}
