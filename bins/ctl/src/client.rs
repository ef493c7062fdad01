//! The HTTP client of the REST API: one request per call to `/api/v1/…` with the bearer token,
//! JSON in and out, over hyper with rustls (`ring`) for `https://`. Failures are typed
//! ([`ApiError`]) so that the message can say what to do and `exit` can choose the code.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{Method, StatusCode, header};
use http_body_util::{BodyExt as _, Full, Limited};
use hyper_rustls::{HttpsConnector, HttpsConnectorBuilder};
use hyper_util::client::legacy::Client as HyperClient;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use rustls_pki_types::CertificateDer;
use rustls_pki_types::pem::PemObject as _;
use scaleset_api::v1::Paged;
use serde::Serialize;
use serde::de::DeserializeOwned;
use url::Url;

use crate::settings::{Settings, Token};

/// The largest response body read (a list of thousands of scale sets fits many times over).
const MAX_RESPONSE: usize = 64 * 1024 * 1024;

/// The error body every `/api/v1` failure carries. Decoded leniently (the code as text), so
/// that a code this client does not know yet still shows.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct ErrorBody {
    /// The stable code (`invalid_token`, `not_found`, …).
    pub(crate) code: String,
    /// What went wrong and what to do.
    pub(crate) message: String,
    /// The server's request id, for its log.
    #[serde(default)]
    pub(crate) request_id: String,
}

/// Why a request failed.
#[derive(Debug)]
pub(crate) enum ApiError {
    /// No connection, a refused connection, a TLS failure: nothing was answered.
    Unreachable {
        url: String,
        source: hyper_util::client::legacy::Error,
    },
    /// No complete answer within the timeout.
    Timeout { url: String, after: Duration },
    /// The server answered with an error status.
    Status {
        method: Method,
        url: String,
        status: StatusCode,
        /// The decoded error body, if the answer had one.
        body: Option<ErrorBody>,
        /// Where the token came from (for a 401's hint).
        token_source: Option<String>,
    },
    /// A success status with a body this client cannot read.
    Decode {
        url: String,
        source: serde_json::Error,
    },
    /// The body could not be read to its end (or was over the size limit).
    Body { url: String, reason: String },
}

impl ApiError {
    /// The server's error code, when it answered with one.
    pub(crate) fn code(&self) -> Option<&str> {
        match self {
            Self::Status { body: Some(b), .. } => Some(&b.code),
            _ => None,
        }
    }

    /// The code `-o json` prints for this failure: the server's, or one of the client's own
    /// (`unreachable`, `timeout`, `not_scaleset`, `invalid_answer`).
    pub(crate) fn json_code(&self) -> &str {
        match self {
            Self::Status { body: Some(b), .. } => &b.code,
            Self::Status { status, .. } if *status == StatusCode::NOT_FOUND => "not_scaleset",
            Self::Status { .. } | Self::Decode { .. } | Self::Body { .. } => "invalid_answer",
            Self::Unreachable { .. } => "unreachable",
            Self::Timeout { .. } => "timeout",
        }
    }
}

impl fmt::Display for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Unreachable { url, source } => {
                write!(f, "cannot reach the server at {url}: ")?;
                // hyper-util's error says only "client error (Connect)"; the cause says why.
                let mut cause: Option<&dyn std::error::Error> = std::error::Error::source(source);
                let mut last = source.to_string();
                while let Some(c) = cause {
                    last = c.to_string();
                    cause = c.source();
                }
                // rustls reading a plain-HTTP answer as a TLS record.
                if last.contains("InvalidContentType") || last.contains("corrupt message") {
                    let plain = url.replacen("https://", "http://", 1);
                    return write!(
                        f,
                        "{last}: the server speaks plain HTTP, not HTTPS; use {plain} (or \
                         configure server.tls_cert_file and server.tls_key_file on the server)"
                    );
                }
                write!(
                    f,
                    "{last}; is scaleset-server running there? Give the URL with --url, \
                     SCALESET_URL or url in the configuration file"
                )
            }
            Self::Timeout { url, after } => write!(
                f,
                "no answer from {url} within {}s; the server may be overloaded, or give a \
                 longer --timeout",
                after.as_secs_f64()
            ),
            Self::Status {
                method,
                url,
                status,
                body,
                token_source,
            } => {
                write!(f, "{method} {url}: {status}")?;
                if let Some(body) = body {
                    write!(f, ": {} ({}", body.message, body.code)?;
                    if !body.request_id.is_empty() {
                        write!(f, ", request {}", body.request_id)?;
                    }
                    f.write_str(")")?;
                }
                if body.is_none() && *status == StatusCode::NOT_FOUND {
                    return f.write_str(
                        " without scaleset's error body: the server there is not a \
                         scaleset-server (or not its API); give the URL scaleset-server listens \
                         on with --url, SCALESET_URL or url in the configuration file",
                    );
                }
                if *status == StatusCode::UNAUTHORIZED {
                    match token_source {
                        // The server's message says how to create one; the demo mints its own.
                        Some(source) => write!(
                            f,
                            "; the token from {source} was refused (against the demo, use the \
                             token its banner printed: it mints a new one at each start)"
                        )?,
                        None => f.write_str(
                            "; no token was given: pass it with --token-file, SCALESET_TOKEN \
                             or token_file in the configuration file (the demo's banner prints \
                             one)",
                        )?,
                    }
                }
                Ok(())
            }
            Self::Decode { url, source } => write!(
                f,
                "the answer from {url} is not what this scalesetctl expects ({source}); is \
                 the server a scaleset-server of the same version?"
            ),
            Self::Body { url, reason } => write!(f, "cannot read the answer from {url}: {reason}"),
        }
    }
}

impl std::error::Error for ApiError {}

/// A connection to one server, with its token.
#[derive(Clone)]
pub(crate) struct Api {
    http: HyperClient<HttpsConnector<HttpConnector>, Full<Bytes>>,
    base: Url,
    token: Option<Token>,
    token_source: Option<String>,
    timeout: Duration,
}

impl Api {
    /// A client for the server the settings name.
    pub(crate) fn new(settings: &Settings) -> anyhow::Result<Self> {
        let tls = tls_config(settings.ca_bundle.as_deref())?;
        let connector = HttpsConnectorBuilder::new()
            .with_tls_config(tls)
            .https_or_http()
            .enable_http1()
            .build();
        let http = HyperClient::builder(TokioExecutor::new()).build(connector);
        Ok(Self {
            http,
            base: settings.url.clone(),
            token: settings.token.clone(),
            token_source: settings.token_source.clone(),
            timeout: settings.timeout,
        })
    }

    /// How long one request may take.
    pub(crate) fn timeout(&self) -> Duration {
        self.timeout
    }

    /// The same connection with requests bounded by `timeout` instead (a decommission apply
    /// that waits for busy runners lasts as long as its wait).
    pub(crate) fn with_timeout(&self, timeout: Duration) -> Self {
        Self {
            timeout,
            ..self.clone()
        }
    }

    /// The URL of `/api/v1/<segments…>?<query>`; segments are percent-encoded.
    pub(crate) fn url(&self, segments: &[&str], query: &[(&str, &str)]) -> Url {
        let mut url = self.base.clone();
        if let Ok(mut path) = url.path_segments_mut() {
            path.pop_if_empty().extend(["api", "v1"]).extend(segments);
        }
        if !query.is_empty() {
            url.query_pairs_mut().extend_pairs(query);
        }
        url
    }

    /// `GET`.
    pub(crate) async fn get<T: DeserializeOwned>(&self, segments: &[&str]) -> Result<T, ApiError> {
        self.send(Method::GET, self.url(segments, &[]), None::<&()>)
            .await
    }

    /// `GET` of a list with query parameters, every page of it: asks again with each
    /// `next_cursor` until the last page, and answers the pages joined.
    pub(crate) async fn get_all<T: DeserializeOwned + Paged>(
        &self,
        segments: &[&str],
        query: &[(&str, &str)],
    ) -> Result<T, ApiError> {
        let mut all: T = self
            .send(Method::GET, self.url(segments, query), None::<&()>)
            .await?;
        let mut seen = std::collections::HashSet::new();
        while let Some(cursor) = all.next_cursor().map(str::to_owned) {
            let mut next_query = query.to_vec();
            next_query.push(("cursor", &cursor));
            let url = self.url(segments, &next_query);
            // A server that answers a cursor it answered before would page forever.
            if !seen.insert(cursor.clone()) {
                return Err(ApiError::Body {
                    url: url.to_string(),
                    reason: format!(
                        "the server answered next_cursor {cursor:?} twice, so the list would \
                         never end; is this a scaleset server?"
                    ),
                });
            }
            let next: T = self.send(Method::GET, url, None::<&()>).await?;
            all.append(next);
        }
        Ok(all)
    }

    /// `POST` with a JSON body.
    pub(crate) async fn post<B: Serialize, T: DeserializeOwned>(
        &self,
        segments: &[&str],
        body: &B,
    ) -> Result<T, ApiError> {
        self.send(Method::POST, self.url(segments, &[]), Some(body))
            .await
    }

    /// `PATCH` with a JSON body.
    pub(crate) async fn patch<B: Serialize, T: DeserializeOwned>(
        &self,
        segments: &[&str],
        body: &B,
    ) -> Result<T, ApiError> {
        self.send(Method::PATCH, self.url(segments, &[]), Some(body))
            .await
    }

    /// `DELETE`, with query parameters.
    pub(crate) async fn delete<T: DeserializeOwned>(
        &self,
        segments: &[&str],
        query: &[(&str, &str)],
    ) -> Result<T, ApiError> {
        self.send(Method::DELETE, self.url(segments, query), None::<&()>)
            .await
    }

    /// One request: the whole exchange, body included, bounded by the timeout.
    pub(crate) async fn send<B: Serialize, T: DeserializeOwned>(
        &self,
        method: Method,
        url: Url,
        body: Option<&B>,
    ) -> Result<T, ApiError> {
        let shown = url.to_string();
        match tokio::time::timeout(self.timeout, self.exchange(method, url, body)).await {
            Ok(result) => result,
            Err(_) => Err(ApiError::Timeout {
                url: shown,
                after: self.timeout,
            }),
        }
    }

    async fn exchange<B: Serialize, T: DeserializeOwned>(
        &self,
        method: Method,
        url: Url,
        body: Option<&B>,
    ) -> Result<T, ApiError> {
        let shown = url.to_string();
        let mut request = http::Request::builder()
            .method(method.clone())
            .uri(url.as_str())
            .header(header::ACCEPT, "application/json")
            .header(
                header::USER_AGENT,
                concat!("scalesetctl/", env!("CARGO_PKG_VERSION")),
            );
        if let Some(token) = &self.token {
            request = request.header(header::AUTHORIZATION, format!("Bearer {}", token.expose()));
        }
        let payload = match body {
            Some(body) => {
                request = request.header(header::CONTENT_TYPE, "application/json");
                // Serializing our own request types cannot fail (no maps with non-string keys).
                Bytes::from(serde_json::to_vec(body).map_err(|source| ApiError::Decode {
                    url: shown.clone(),
                    source,
                })?)
            }
            None => Bytes::new(),
        };
        let request = request
            .body(Full::new(payload))
            .map_err(|e| ApiError::Body {
                url: shown.clone(),
                reason: format!("cannot build the request: {e}"),
            })?;
        let response =
            self.http
                .request(request)
                .await
                .map_err(|source| ApiError::Unreachable {
                    url: self.base.to_string(),
                    source,
                })?;
        let status = response.status();
        let bytes = Limited::new(response.into_body(), MAX_RESPONSE)
            .collect()
            .await
            .map_err(|e| ApiError::Body {
                url: shown.clone(),
                reason: e.to_string(),
            })?
            .to_bytes();
        if !status.is_success() {
            return Err(ApiError::Status {
                method,
                url: shown,
                status,
                body: serde_json::from_slice(&bytes).ok(),
                token_source: self.token_source.clone(),
            });
        }
        let bytes: &[u8] = if bytes.is_empty() { b"null" } else { &bytes };
        serde_json::from_slice(bytes).map_err(|source| ApiError::Decode { url: shown, source })
    }
}

/// rustls with `ring`: the CA bundle given, else the system's trust store, else the built-in
/// Mozilla roots when the system has none.
fn tls_config(ca_bundle: Option<&[u8]>) -> anyhow::Result<rustls::ClientConfig> {
    use hyper_rustls::ConfigBuilderExt as _;
    let builder = || {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| anyhow::anyhow!("TLS setup failed: {e}"))
    };
    let Some(pem) = ca_bundle else {
        let config = match builder()?.with_native_roots() {
            Ok(with_system) => with_system,
            Err(_) => builder()?.with_webpki_roots(),
        };
        return Ok(config.with_no_client_auth());
    };
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(pem) {
        let cert = cert.map_err(|e| anyhow::anyhow!("the CA bundle is not PEM: {e}"))?;
        roots
            .add(cert)
            .map_err(|e| anyhow::anyhow!("the CA bundle has an unusable certificate: {e}"))?;
    }
    if roots.is_empty() {
        anyhow::bail!("the CA bundle contains no PEM certificate");
    }
    Ok(builder()?
        .with_root_certificates(roots)
        .with_no_client_auth())
}
