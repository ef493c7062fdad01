//! [`Client`]: the cloneable handle shared by every caller, and the call executor that builds
//! URLs and headers, authenticates, retries (protocol §4 and §9) and maps error responses.

use std::future::Future;
use std::sync::Arc;
use std::time::SystemTime;

use bytes::Bytes;
use http::{HeaderValue, Method};
use serde::Serialize;
use tracing::Instrument as _;
use url::Url;

use crate::config::{ClientConfig, ConfigUrl, Credentials, Scope};
use crate::endpoint::Endpoint;
use crate::error::{Error, Result, ServiceError};
use crate::http::{AttemptError, Incoming, Outgoing, Transport};
use crate::jwt::AppKey;
use crate::retry::{RetryPolicy, is_retryable_status, parse_retry_after, rate_limit_wait};
use crate::secret::Secret;
use crate::token::{AdminConnection, TokenCache};

/// The `api-version` every Actions-service call carries.
pub(crate) const API_VERSION: &str = "6.0-preview";

/// A client for one config URL (repository, organization or enterprise).
///
/// Cloning is cheap: clones share one connection pool and one admin-token cache. Independent
/// calls run concurrently; only an admin-token refresh is single-flight.
#[derive(Clone)]
pub struct Client {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub(crate) config: ClientConfig,
    pub(crate) api_base: Url,
    pub(crate) transport: Transport,
    pub(crate) app_key: Option<AppKey>,
    pub(crate) tokens: TokenCache,
    pub(crate) user_agent: HeaderValue,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("config", &self.inner.config)
            .field("api_base", &self.inner.api_base.as_str())
            .finish_non_exhaustive()
    }
}

/// How a call authenticates.
#[derive(Debug, Clone)]
pub(crate) enum Auth {
    /// `Authorization: Bearer <current admin token>`.
    Admin,
    /// `Authorization: Bearer <token>`.
    Bearer(Secret),
    /// `Authorization: RemoteAuth <token>`.
    Remote(Secret),
}

/// Where a call goes.
#[derive(Debug, Clone)]
pub(crate) enum Target {
    /// An absolute URL.
    Absolute(Url),
    /// A path (and query pairs) relative to the current Actions service URL; `api-version` is
    /// added when absent.
    Service {
        path: String,
        query: Vec<(String, String)>,
    },
}

/// Which statuses count as success.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Expect {
    /// Exactly one of these.
    Status(&'static [u16]),
    /// Any 2xx.
    AnySuccess,
}

impl Expect {
    fn accepts(self, status: u16) -> bool {
        match self {
            Self::Status(list) => list.contains(&status),
            Self::AnySuccess => (200..300).contains(&status),
        }
    }
}

/// What a failed attempt says about the wait before the next one.
enum Wait {
    /// A rate-limit answer's advertised wait (capped, whatever the status).
    Advertised(std::time::Duration),
    /// The `Retry-After` header, if any (honoured on 429 and 503 only).
    RetryAfter(Option<std::time::Duration>),
}

/// One call, described independently of its attempts.
#[derive(Debug, Clone)]
pub(crate) struct Call {
    pub(crate) endpoint: Endpoint,
    pub(crate) method: Method,
    pub(crate) target: Target,
    pub(crate) auth: Auth,
    pub(crate) headers: Vec<(&'static str, HeaderValue)>,
    pub(crate) content_type: Option<&'static str>,
    pub(crate) body: Option<Bytes>,
    pub(crate) expect: Expect,
    pub(crate) long_poll: bool,
    /// Statuses retried in addition to 429 and 5xx (runner-registration: 401, 403).
    pub(crate) also_retry: &'static [u16],
}

impl Call {
    /// An Actions-service call with the admin token and `Content-Type: application/json`.
    pub(crate) fn service(
        endpoint: Endpoint,
        method: Method,
        path: impl Into<String>,
        expect: &'static [u16],
    ) -> Self {
        Self {
            endpoint,
            method,
            target: Target::Service {
                path: path.into(),
                query: Vec::new(),
            },
            auth: Auth::Admin,
            headers: Vec::new(),
            content_type: Some("application/json"),
            body: None,
            expect: Expect::Status(expect),
            long_poll: false,
            also_retry: &[],
        }
    }

    /// Adds a query pair (Actions-service target only).
    pub(crate) fn query(mut self, key: &str, value: impl Into<String>) -> Self {
        if let Target::Service { query, .. } = &mut self.target {
            query.push((key.to_owned(), value.into()));
        }
        self
    }

    /// Sets a JSON body.
    pub(crate) fn json<T: Serialize + ?Sized>(mut self, body: &T) -> Result<Self> {
        let bytes = serde_json::to_vec(body).map_err(|source| Error::Encode {
            endpoint: self.endpoint,
            source,
        })?;
        self.body = Some(Bytes::from(bytes));
        Ok(self)
    }
}

impl Client {
    /// Builds a client: validates the credentials (parses the App key, refuses App credentials at
    /// enterprise scope), loads the CA bundle and creates the connection pool. No request is made.
    pub fn new(config: ClientConfig) -> Result<Self> {
        let app_key = match &config.credentials {
            Credentials::Pat(token) => {
                if token.is_empty() {
                    return Err(Error::InvalidConfig {
                        reason: "the personal access token is empty".to_owned(),
                    });
                }
                None
            }
            Credentials::App(app) => {
                if matches!(config.config_url.scope(), Scope::Enterprise { .. }) {
                    return Err(Error::InvalidConfig {
                        reason: "GitHub App authentication is not supported for enterprise scope; \
                                 use a personal access token with manage_runners:enterprise"
                            .to_owned(),
                    });
                }
                Some(AppKey::from_pem(&app.private_key)?)
            }
        };
        let user_agent =
            HeaderValue::from_str(&config.user_agent).map_err(|_| Error::InvalidConfig {
                reason: "the user agent contains characters not allowed in a header".to_owned(),
            })?;
        let transport = Transport::new(config.ca_bundle_pem.as_deref(), config.timeouts.connect)?;
        let api_base = config.api_base();
        Ok(Self {
            inner: Arc::new(Inner {
                api_base,
                transport,
                app_key,
                tokens: TokenCache::new(),
                user_agent,
                config,
            }),
        })
    }

    /// The config URL this client serves.
    pub fn config_url(&self) -> &ConfigUrl {
        &self.inner.config.config_url
    }

    /// The REST API base in use (derived or overridden).
    pub fn api_base(&self) -> &Url {
        &self.inner.api_base
    }

    /// The current Actions service URL, running the token chain first if the admin token is
    /// missing or about to expire.
    pub async fn service_url(&self) -> Result<Url> {
        Ok(self.admin_connection().await?.service_url.clone())
    }

    /// Runs one call with retries and returns the accepted response. Calls to the Actions
    /// service (or with admin auth) resolve the admin connection before each attempt.
    pub(crate) async fn execute(&self, call: &Call) -> Result<Incoming> {
        let needs_admin =
            matches!(call.auth, Auth::Admin) || matches!(call.target, Target::Service { .. });
        if needs_admin {
            self.execute_with(call, || async { self.admin_connection().await.map(Some) })
                .await
        } else {
            self.execute_rest(call).await
        }
    }

    /// Runs a call that needs no admin connection (the REST token chain, the queue).
    pub(crate) async fn execute_rest(&self, call: &Call) -> Result<Incoming> {
        self.execute_with(call, || async { Ok(None) }).await
    }

    async fn execute_with<F, Fut>(&self, call: &Call, admin: F) -> Result<Incoming>
    where
        F: Fn() -> Fut,
        Fut: Future<Output = Result<Option<Arc<AdminConnection>>>>,
    {
        let policy = self.policy_for(call.endpoint);
        let mut attempt: u32 = 0;
        loop {
            attempt += 1;
            let span = tracing::debug_span!(
                "github.call",
                endpoint = %call.endpoint,
                attempt,
                status = tracing::field::Empty,
                request_id = tracing::field::Empty,
            );
            let connection = admin().await?;
            let (outgoing, admin_token) = self.prepare(call, connection)?;
            let result = self
                .inner
                .transport
                .send(call.endpoint, outgoing)
                .instrument(span.clone())
                .await;
            let (failure, status, wait, retryable) = match result {
                Ok(response) => {
                    let request_id = response.header("x-github-request-id");
                    let activity_id = response.header("activityid");
                    span.record("status", response.status);
                    if let Some(id) = request_id.as_deref().or(activity_id.as_deref()) {
                        span.record("request_id", id);
                    }
                    if call.expect.accepts(response.status) {
                        return Ok(response);
                    }
                    let status = response.status;
                    if status == 401
                        && let Some(token) = &admin_token
                    {
                        // The admin token was rejected: make the next call fetch a new one.
                        self.inner.tokens.invalidate(token);
                    }
                    let now = SystemTime::now();
                    let retry_after = response.header("retry-after");
                    let rate_limit_wait = (call.endpoint.is_token_chain()
                        && matches!(status, 403 | 429))
                    .then(|| {
                        rate_limit_wait(
                            retry_after.as_deref(),
                            response.header("x-ratelimit-remaining").as_deref(),
                            response.header("x-ratelimit-reset").as_deref(),
                            now,
                        )
                    })
                    .flatten();
                    let mut error = ServiceError::from_response(
                        call.endpoint,
                        status,
                        &response.body,
                        activity_id,
                        request_id,
                    );
                    error.rate_limit_wait = rate_limit_wait;
                    let retryable = is_retryable_status(status)
                        || call.also_retry.contains(&status)
                        || rate_limit_wait.is_some();
                    let wait = match rate_limit_wait {
                        Some(wait) => Wait::Advertised(wait),
                        None => Wait::RetryAfter(
                            retry_after.and_then(|v| parse_retry_after(&v, now)),
                        ),
                    };
                    (Error::from(error), Some(status), wait, retryable)
                }
                Err(AttemptError::Build(error)) => return Err(error),
                Err(AttemptError::Transport { error, retryable }) => {
                    (error, None, Wait::RetryAfter(None), retryable)
                }
            };
            // A single attempt (no retry was ever allowed) reports the failure itself: wrapping
            // it as "giving up after 1 attempt(s)" would only hide the cause one level down.
            if !retryable || policy.max_attempts <= 1 {
                return Err(failure);
            }
            if attempt >= policy.max_attempts {
                return Err(Error::RetriesExhausted {
                    endpoint: call.endpoint,
                    attempts: attempt,
                    last: Box::new(failure),
                });
            }
            let delay = match wait {
                Wait::Advertised(wait) => policy.advertised(wait),
                Wait::RetryAfter(retry_after) => policy.delay(attempt, status, retry_after),
            };
            span.in_scope(|| {
                tracing::debug!(error = %failure, delay_ms = delay.as_millis() as u64, "retrying");
            });
            self.inner.config.sleeper.sleep(delay).await;
        }
    }

    fn policy_for(&self, endpoint: Endpoint) -> &RetryPolicy {
        let config = &self.inner.config;
        match (&config.session_retry, endpoint.uses_queue_token()) {
            (Some(session), true) => session,
            _ => &config.retry,
        }
    }

    /// Builds the attempt: resolves the service URL and admin token when needed.
    fn prepare(
        &self,
        call: &Call,
        admin: Option<Arc<AdminConnection>>,
    ) -> Result<(Outgoing, Option<Secret>)> {
        let url = match (&call.target, &admin) {
            (Target::Absolute(url), _) => url.clone(),
            (Target::Service { path, query }, Some(admin)) => {
                service_url(&admin.service_url, path, query)
            }
            (Target::Service { .. }, None) => {
                return Err(Error::InvalidConfig {
                    reason: "internal: service call without an admin connection".to_owned(),
                });
            }
        };
        let (authorization, admin_token) = match (&call.auth, &admin) {
            (Auth::Admin, Some(admin)) => (
                format!("Bearer {}", admin.token.expose()),
                Some(admin.token.clone()),
            ),
            (Auth::Bearer(token), _) => (format!("Bearer {}", token.expose()), None),
            (Auth::Remote(token), _) => (format!("RemoteAuth {}", token.expose()), None),
            (Auth::Admin, None) => {
                return Err(Error::InvalidConfig {
                    reason: "internal: admin auth without an admin connection".to_owned(),
                });
            }
        };
        let mut authorization =
            HeaderValue::from_str(&authorization).map_err(|_| Error::UnexpectedResponse {
                endpoint: call.endpoint,
                status: 0,
                reason: "a token contains characters not allowed in a header".to_owned(),
            })?;
        authorization.set_sensitive(true);
        let mut headers = vec![
            ("authorization", authorization),
            ("user-agent", self.inner.user_agent.clone()),
        ];
        if let Some(content_type) = call.content_type {
            headers.push(("content-type", HeaderValue::from_static(content_type)));
        }
        headers.extend(call.headers.iter().cloned());
        let timeouts = &self.inner.config.timeouts;
        let outgoing = Outgoing {
            method: call.method.clone(),
            url,
            headers,
            body: call.body.clone(),
            timeout: if call.long_poll {
                timeouts.long_poll
            } else {
                timeouts.request
            },
        };
        Ok((outgoing, admin_token))
    }
}

/// Joins `path` onto the service URL (collapsing slashes), merges the queries, adds
/// `api-version` when absent, and form-encodes the query with keys sorted.
pub(crate) fn service_url(base: &Url, path: &str, query: &[(String, String)]) -> Url {
    let mut url = base.clone();
    let joined = format!(
        "{}/{}",
        base.path().trim_end_matches('/'),
        path.trim_start_matches('/')
    );
    url.set_path(&joined);
    let mut pairs: Vec<(String, String)> = base
        .query_pairs()
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect();
    pairs.extend(query.iter().cloned());
    if !pairs.iter().any(|(k, _)| k == "api-version") {
        pairs.push(("api-version".to_owned(), API_VERSION.to_owned()));
    }
    pairs.sort_by(|a, b| a.0.cmp(&b.0));
    set_form_query(&mut url, &pairs);
    url
}

/// Replaces the query with form-encoded pairs (space as `+`, everything else reserved escaped).
pub(crate) fn set_form_query(url: &mut Url, pairs: &[(String, String)]) {
    if pairs.is_empty() {
        url.set_query(None);
        return;
    }
    let encoded = url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(pairs.iter())
        .finish();
    url.set_query(Some(&encoded));
}

#[cfg(test)]
mod tests;
