//! Serving the router on an already-bound listener until a shutdown future completes: HTTP/1.1
//! and HTTP/2 through hyper-util's auto builder, optionally behind TLS (rustls with `ring`,
//! ALPN `h2` and `http/1.1`). On shutdown the listener stops accepting, open connections get a
//! graceful close (answers in flight are sent), and the call returns when they are done.

use std::future::Future;
use std::path::Path;
use std::sync::Arc;

use axum::Router;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
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

/// Serves `app` on `listener` (TLS when `tls` is given) until `shutdown` completes, then
/// closes connections gracefully and returns.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    tls: Option<Arc<rustls::ServerConfig>>,
    shutdown: impl Future<Output = ()> + Send,
) {
    let acceptor = tls.map(tokio_rustls::TlsAcceptor::from);
    let stop = CancellationToken::new();
    let tracker = TaskTracker::new();
    tokio::pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    tracing::warn!(error = %e, "accepting a connection failed");
                    continue;
                }
            },
        };
        let app = app.clone();
        let acceptor = acceptor.clone();
        let stop = stop.clone();
        tracker.spawn(async move {
            match acceptor {
                None => connection(TokioIo::new(stream), app, stop).await,
                Some(acceptor) => match acceptor.accept(stream).await {
                    Ok(tls) => connection(TokioIo::new(tls), app, stop).await,
                    Err(e) => tracing::debug!(%peer, error = %e, "TLS handshake failed"),
                },
            }
        });
    }
    stop.cancel();
    tracker.close();
    tracker.wait().await;
}

async fn connection<I>(io: I, app: Router, stop: CancellationToken)
where
    I: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
{
    let service = TowerToHyperService::new(app);
    let builder = auto::Builder::new(TokioExecutor::new());
    let conn = builder.serve_connection_with_upgrades(io, service);
    tokio::pin!(conn);
    tokio::select! {
        result = conn.as_mut() => {
            if let Err(error) = result {
                tracing::debug!(%error, "connection ended with an error");
            }
            return;
        }
        () = stop.cancelled() => {}
    }
    conn.as_mut().graceful_shutdown();
    if let Err(error) = conn.await {
        tracing::debug!(%error, "connection ended with an error while closing");
    }
}
