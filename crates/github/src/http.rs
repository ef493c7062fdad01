//! The HTTP transport: one pooled hyper client over rustls (ring provider, web PKI roots or a
//! custom CA bundle; plain `http://` allowed), single attempts with a timeout and a body limit.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Method, Request};
use http_body_util::{BodyExt as _, Full, Limited};
use hyper_rustls::{HttpsConnector, HttpsConnectorBuilder};
use hyper_util::client::legacy::Client as HyperClient;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use rustls_pki_types::CertificateDer;
use rustls_pki_types::pem::PemObject as _;
use url::Url;

use crate::endpoint::Endpoint;
use crate::error::{Error, Result};

/// Response bodies larger than this are refused.
const MAX_BODY_BYTES: usize = 16 * 1024 * 1024;

/// A request ready to send.
#[derive(Debug)]
pub(crate) struct Outgoing {
    pub(crate) method: Method,
    pub(crate) url: Url,
    pub(crate) headers: Vec<(&'static str, HeaderValue)>,
    pub(crate) body: Option<Bytes>,
    pub(crate) timeout: Duration,
}

/// A complete response.
#[derive(Debug)]
pub(crate) struct Incoming {
    pub(crate) status: u16,
    pub(crate) headers: HeaderMap,
    pub(crate) body: Bytes,
}

impl Incoming {
    pub(crate) fn header(&self, name: &str) -> Option<String> {
        self.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(|v| v.trim().to_owned())
            .filter(|v| !v.is_empty())
    }
}

/// Why a single attempt failed before a response arrived.
#[derive(Debug)]
pub(crate) enum AttemptError {
    /// A connection, TLS or protocol error; `retryable` is false for TLS errors.
    Transport { error: Error, retryable: bool },
    /// The request could not even be built (bad header value); never retried.
    Build(Error),
}

/// The shared, pooled HTTP client.
#[derive(Clone)]
pub(crate) struct Transport {
    client: HyperClient<HttpsConnector<HttpConnector>, Full<Bytes>>,
}

impl Transport {
    pub(crate) fn new(ca_bundle_pem: Option<&[u8]>, connect_timeout: Duration) -> Result<Self> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut http = HttpConnector::new();
        http.enforce_http(false);
        http.set_connect_timeout(Some(connect_timeout));
        http.set_nodelay(true);
        let builder = HttpsConnectorBuilder::new();
        let builder = match ca_bundle_pem {
            Some(pem) => {
                let mut roots = rustls::RootCertStore::empty();
                let mut added = 0usize;
                for cert in CertificateDer::pem_slice_iter(pem) {
                    let cert = cert.map_err(|e| Error::InvalidCaBundle {
                        reason: format!("cannot read a PEM certificate: {e}"),
                    })?;
                    roots.add(cert).map_err(|e| Error::InvalidCaBundle {
                        reason: format!("certificate rejected as a trust anchor: {e}"),
                    })?;
                    added += 1;
                }
                if added == 0 {
                    return Err(Error::InvalidCaBundle {
                        reason: "the bundle contains no PEM certificate".to_owned(),
                    });
                }
                let tls = rustls::ClientConfig::builder_with_provider(provider)
                    .with_safe_default_protocol_versions()
                    .map_err(|e| Error::InvalidCaBundle {
                        reason: format!("tls setup failed: {e}"),
                    })?
                    .with_root_certificates(roots)
                    .with_no_client_auth();
                builder.with_tls_config(tls)
            }
            None => builder
                .with_provider_and_webpki_roots(provider)
                .map_err(|e| Error::InvalidConfig {
                    reason: format!("tls setup failed: {e}"),
                })?,
        };
        let connector = builder.https_or_http().enable_http1().wrap_connector(http);
        let client = HyperClient::builder(TokioExecutor::new())
            .pool_idle_timeout(Duration::from_secs(90))
            .build(connector);
        Ok(Self { client })
    }

    /// Sends one attempt and reads the whole body, bounded by `outgoing.timeout`.
    pub(crate) async fn send(
        &self,
        endpoint: Endpoint,
        outgoing: Outgoing,
    ) -> Result<Incoming, AttemptError> {
        let host = outgoing.url.host_str().unwrap_or_default().to_owned();
        let timeout = outgoing.timeout;
        let mut builder = Request::builder()
            .method(outgoing.method)
            .uri(outgoing.url.as_str());
        for (name, value) in outgoing.headers {
            builder = builder.header(name, value);
        }
        let request = builder
            .body(Full::new(outgoing.body.unwrap_or_default()))
            .map_err(|e| {
                AttemptError::Build(Error::InvalidConfig {
                    reason: format!("cannot build the {endpoint} request: {e}"),
                })
            })?;
        let exchange = async {
            let response = self.client.request(request).await.map_err(|e| {
                if is_tls_error(&e) {
                    AttemptError::Transport {
                        error: Error::Tls {
                            endpoint,
                            host: host.clone(),
                            source: Box::new(e),
                        },
                        retryable: false,
                    }
                } else {
                    AttemptError::Transport {
                        error: Error::Transport {
                            endpoint,
                            host: host.clone(),
                            source: Box::new(e),
                        },
                        retryable: true,
                    }
                }
            })?;
            let (parts, body) = response.into_parts();
            let body = Limited::new(body, MAX_BODY_BYTES)
                .collect()
                .await
                .map_err(|e| AttemptError::Transport {
                    error: Error::Transport {
                        endpoint,
                        host: host.clone(),
                        source: e,
                    },
                    retryable: true,
                })?
                .to_bytes();
            Ok(Incoming {
                status: parts.status.as_u16(),
                headers: parts.headers,
                body,
            })
        };
        match tokio::time::timeout(timeout, exchange).await {
            Ok(result) => result,
            Err(_) => Err(AttemptError::Transport {
                error: Error::Timeout {
                    endpoint,
                    host,
                    timeout,
                },
                retryable: true,
            }),
        }
    }
}

/// True when the error chain holds a rustls error (an untrusted or missing certificate, a
/// refused handshake): a configuration problem, not worth retrying.
///
/// `io::Error::source` skips the wrapped error itself, so wrapped errors are entered through
/// `get_ref` (hyper-util nests rustls errors two `io::Error`s deep).
fn is_tls_error(error: &(dyn std::error::Error + 'static)) -> bool {
    let mut current: Option<&(dyn std::error::Error + 'static)> = Some(error);
    let mut depth = 0;
    while let Some(err) = current {
        depth += 1;
        if depth > 16 {
            return false;
        }
        if err.downcast_ref::<rustls::Error>().is_some() {
            return true;
        }
        current = match err
            .downcast_ref::<std::io::Error>()
            .and_then(std::io::Error::get_ref)
        {
            Some(inner) => Some(inner as &(dyn std::error::Error + 'static)),
            None => err.source(),
        };
    }
    false
}
