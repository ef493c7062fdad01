//! The HTTP transport: pooled hyper clients over rustls (ring provider; built-in web PKI roots,
//! the system trust store or a CA bundle; plain `http://` allowed), direct or tunnelled through
//! an HTTP proxy with `CONNECT`, single attempts with a timeout and a body limit.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Method, Request};
use http_body_util::{BodyExt as _, Full, Limited};
use hyper_rustls::ConfigBuilderExt as _;
use hyper_rustls::{HttpsConnector, HttpsConnectorBuilder};
use hyper_util::client::legacy::Client as HyperClient;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::connect::proxy::Tunnel;
use hyper_util::client::proxy::matcher::{Intercept, Matcher};
use hyper_util::rt::TokioExecutor;
use url::Url;

use crate::ca_bundle::ca_bundle_roots;
use crate::config::{Http2Config, ProxyConfig, TrustRoots, redacted_proxy};
use crate::endpoint::Endpoint;
use crate::error::{Error, Result};
use crate::h2pool::{H2Pool, PoolError};

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

type Direct = HyperClient<HttpsConnector<HttpConnector>, Full<Bytes>>;
type Tunnelled = HyperClient<HttpsConnector<Tunnel<HttpConnector>>, Full<Bytes>>;

/// The shared, pooled HTTP clients: one direct, and one per configured proxy.
#[derive(Clone)]
pub(crate) struct Transport {
    direct: Direct,
    proxies: Option<Proxies>,
    /// Calls to hosts that speak HTTP/2 (not through a proxy).
    h2: Arc<H2Pool>,
}

/// The proxy route: which destinations are intercepted, and the tunnelling client per scheme.
#[derive(Clone)]
struct Proxies {
    matcher: Arc<Matcher>,
    http: Option<Tunnelled>,
    https: Option<Tunnelled>,
}

impl Transport {
    pub(crate) fn new(
        trust: &TrustRoots,
        proxy: &ProxyConfig,
        http2: &Http2Config,
        connect_timeout: Duration,
    ) -> Result<Self> {
        let tls = tls_config(trust)?;
        let h2 = Arc::new(H2Pool::new(http2.clone(), &tls, connect_timeout));
        let mut http = HttpConnector::new();
        http.enforce_http(false);
        http.set_connect_timeout(Some(connect_timeout));
        http.set_nodelay(true);
        let direct = pooled(&tls, http.clone());
        // `*` means "no proxy for any host", IP addresses included (hyper-util's matcher
        // applies it to host names only).
        let bypass_all = proxy.no_proxy.split(',').any(|entry| entry.trim() == "*");
        let proxies = if proxy.is_none() || bypass_all {
            None
        } else {
            let tunnelled = |value: &Option<String>| -> Result<Option<Tunnelled>> {
                let Some(value) = value else { return Ok(None) };
                let intercept = proxy_intercept(value)?;
                let mut tunnel = Tunnel::new(intercept.uri().clone(), http.clone());
                if let Some(auth) = intercept.basic_auth() {
                    tunnel = tunnel.with_auth(auth.clone());
                }
                Ok(Some(pooled(&tls, tunnel)))
            };
            let mut matcher = Matcher::builder().no(proxy.no_proxy.as_str());
            if let Some(value) = &proxy.http {
                matcher = matcher.http(value.as_str());
            }
            if let Some(value) = &proxy.https {
                matcher = matcher.https(value.as_str());
            }
            Some(Proxies {
                matcher: Arc::new(matcher.build()),
                http: tunnelled(&proxy.http)?,
                https: tunnelled(&proxy.https)?,
            })
        };
        Ok(Self {
            direct,
            proxies,
            h2,
        })
    }

    /// Whether a call to `uri` goes through a proxy.
    fn proxied(&self, uri: &http::Uri) -> bool {
        self.proxies
            .as_ref()
            .is_some_and(|proxies| proxies.matcher.intercept(uri).is_some())
    }

    /// Sends through the proxy that intercepts `uri`, or direct.
    async fn request(
        &self,
        request: Request<Full<Bytes>>,
    ) -> Result<http::Response<hyper::body::Incoming>, hyper_util::client::legacy::Error> {
        let via = self.proxies.as_ref().and_then(|proxies| {
            proxies.matcher.intercept(request.uri())?;
            match request.uri().scheme_str() {
                Some("https") => proxies.https.as_ref(),
                _ => proxies.http.as_ref(),
            }
        });
        match via {
            Some(client) => client.request(request).await,
            None => self.direct.request(request).await,
        }
    }

    /// Sends one attempt and reads the whole body, bounded by `outgoing.timeout`: over HTTP/2
    /// when the host speaks it (and no proxy is in the way), else over HTTP/1.1.
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
        let head = builder.body(()).map_err(|e| {
            AttemptError::Build(Error::InvalidConfig {
                reason: format!("cannot build the {endpoint} request: {e}"),
            })
        })?;
        let body = outgoing.body.unwrap_or_default();
        let url = outgoing.url;
        let exchange = async {
            // The request moves into the HTTP/2 pool (no copy of its headers stays here while
            // a long-poll waits) and comes back when the host speaks only HTTP/1.1.
            let head = if self.h2.wants(&url) && !self.proxied(head.uri()) {
                // Each transport's future is boxed, so a request holds only the one it uses.
                match Box::pin(self.h2.send(&url, head, body.clone(), MAX_BODY_BYTES)).await {
                    Ok(Ok((parts, body))) => {
                        return Ok(Incoming {
                            status: parts.status.as_u16(),
                            headers: parts.headers,
                            body,
                        });
                    }
                    // The host offered only HTTP/1.1 through ALPN.
                    Ok(Err(head)) => head,
                    Err(error) => return Err(pool_error(endpoint, &host, error)),
                }
            } else {
                head
            };
            let (parts, ()) = head.into_parts();
            Box::pin(self.http1(endpoint, &host, Request::from_parts(parts, Full::new(body)))).await
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

    /// One exchange through the HTTP/1.1 pool (hyper-util's legacy client).
    async fn http1(
        &self,
        endpoint: Endpoint,
        host: &str,
        request: Request<Full<Bytes>>,
    ) -> Result<Incoming, AttemptError> {
        let response = self.request(request).await.map_err(|e| {
            if is_tls_error(&e) {
                AttemptError::Transport {
                    error: Error::Tls {
                        endpoint,
                        host: host.to_owned(),
                        source: Box::new(e),
                    },
                    retryable: false,
                }
            } else {
                AttemptError::Transport {
                    error: Error::Transport {
                        endpoint,
                        host: host.to_owned(),
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
                    host: host.to_owned(),
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
    }
}

/// The attempt error of a failed HTTP/2 exchange.
fn pool_error(endpoint: Endpoint, host: &str, error: PoolError) -> AttemptError {
    let host = host.to_owned();
    match error {
        PoolError::Tls(source) => AttemptError::Transport {
            error: Error::Tls {
                endpoint,
                host,
                source: Box::new(source),
            },
            retryable: false,
        },
        PoolError::Transport(source) => AttemptError::Transport {
            error: Error::Transport {
                endpoint,
                host,
                source,
            },
            retryable: true,
        },
        PoolError::TooLarge(limit) => AttemptError::Transport {
            error: Error::Transport {
                endpoint,
                host,
                source: format!("the response body exceeds {limit} bytes").into(),
            },
            retryable: true,
        },
    }
}

/// One pooled client over `connector`, speaking `http://` and `https://` with `tls`.
fn pooled<C>(
    tls: &rustls::ClientConfig,
    connector: C,
) -> HyperClient<HttpsConnector<C>, Full<Bytes>>
where
    HttpsConnector<C>: hyper_util::client::legacy::connect::Connect + Clone + Send + Sync + 'static,
{
    let connector = HttpsConnectorBuilder::new()
        .with_tls_config(tls.clone())
        .https_or_http()
        .enable_http1()
        .wrap_connector(connector);
    HyperClient::builder(TokioExecutor::new())
        .pool_idle_timeout(Duration::from_secs(90))
        .build(connector)
}

/// The rustls configuration for the chosen trust roots (ring provider).
fn tls_config(trust: &TrustRoots) -> Result<rustls::ClientConfig> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| Error::InvalidConfig {
            reason: format!("tls setup failed: {e}"),
        })?;
    let builder = match trust {
        TrustRoots::BuiltIn => builder.with_webpki_roots(),
        TrustRoots::System => builder
            .with_native_roots()
            .map_err(|e| Error::InvalidConfig {
                reason: format!(
                    "cannot use the system trust store: {e}; install the CA certificates \
                 (e.g. the ca-certificates package) or give a CA bundle"
                ),
            })?,
        TrustRoots::CaBundle(pem) => builder.with_root_certificates(ca_bundle_roots(pem)?),
    };
    Ok(builder.with_no_client_auth())
}

/// Where one configured proxy is and how to authenticate to it; only `http://` proxies (the
/// tunnel to the proxy itself is plain TCP).
fn proxy_intercept(value: &str) -> Result<Intercept> {
    let shown = redacted_proxy(value);
    let invalid = |why: &str| Error::InvalidConfig {
        reason: format!("invalid proxy {shown:?}: {why}"),
    };
    let url = if value.contains("://") {
        value.trim().to_owned()
    } else {
        format!("http://{}", value.trim())
    };
    let parsed = Url::parse(&url).map_err(|e| invalid(&e.to_string()))?;
    if parsed.scheme() != "http" {
        return Err(invalid(
            "only http:// proxies are supported (requests are tunnelled with CONNECT, TLS stays \
             end to end)",
        ));
    }
    if parsed.host_str().is_none_or(str::is_empty) {
        return Err(invalid("no host"));
    }
    // The matcher parses the same text; a catch-all one yields its intercept.
    Matcher::builder()
        .all(url)
        .build()
        .intercept(&http::Uri::from_static("http://proxy.check/"))
        .ok_or_else(|| invalid("not a proxy URL"))
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
