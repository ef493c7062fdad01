//! One call, from its description to the accepted response: URL and headers, authentication,
//! attempts with retries and waits (protocol §4 and §9), and the mapping of error responses.
//!
//! This module knows nothing of where the admin token comes from: a call that needs it asks an
//! [`AdminSource`] (the token chain implements it on top of this module; the dependency runs one
//! way, `client` → `token` → `call`).

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use http::{HeaderValue, Method};
use serde::Serialize;
use tracing::Instrument as _;
use url::Url;

use crate::config::ClientConfig;
use crate::endpoint::Endpoint;
use crate::error::{Error, Result, ServiceError};
use crate::http::{AttemptError, Incoming, Outgoing, Transport};
use crate::observer::{CallObserver, CallReport};
use crate::retry::{RetryPolicy, is_retryable_status, parse_retry_after, rate_limit_wait};
use secrecy::{ExposeSecret, SecretString};

/// The `api-version` every Actions-service call carries.
pub(crate) const API_VERSION: &str = "6.0-preview";

/// How a call authenticates.
#[derive(Debug, Clone)]
pub(crate) enum Auth {
    /// `Authorization: Bearer <current admin token>`.
    Admin,
    /// `Authorization: Bearer <token>`.
    Bearer(SecretString),
    /// `Authorization: RemoteAuth <token>`.
    Remote(SecretString),
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
    /// True when the call goes to the Actions service or authenticates with the admin token.
    fn needs_admin(&self) -> bool {
        matches!(self.auth, Auth::Admin) || matches!(self.target, Target::Service { .. })
    }

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

/// The admin token and Actions service URL returned by `runner-registration`.
#[derive(Debug)]
pub(crate) struct AdminConnection {
    pub(crate) token: SecretString,
    pub(crate) service_url: Url,
    /// When the token stops being used: its `exp`, or fetch time + fallback TTL.
    pub(crate) expires_at: SystemTime,
}

/// Where calls that need the admin token get it, and where a rejected token is reported.
pub(crate) trait AdminSource: Sync {
    /// The current admin connection (fetched if missing or about to expire).
    fn connection(&self) -> impl Future<Output = Result<Arc<AdminConnection>>> + Send;
    /// The service answered 401 to this token: the next call must fetch a new one.
    fn rejected(&self, token: &SecretString);
}

/// No admin source: for REST calls that authenticate themselves.
enum NoAdmin {}

impl AdminSource for NoAdmin {
    async fn connection(&self) -> Result<Arc<AdminConnection>> {
        match *self {}
    }

    fn rejected(&self, _: &SecretString) {
        match *self {}
    }
}

/// Sends calls: the configuration, the pooled transport and the header values every call
/// carries. Shared by all clones of a client.
pub(crate) struct Caller {
    pub(crate) config: ClientConfig,
    pub(crate) api_base: Url,
    transport: Transport,
    user_agent: HeaderValue,
}

impl std::fmt::Debug for Caller {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Caller")
            .field("config", &self.config)
            .field("api_base", &self.api_base.as_str())
            .finish_non_exhaustive()
    }
}

impl Caller {
    /// Checks the header values every call carries and builds the connection pool.
    pub(crate) fn new(config: ClientConfig) -> Result<Self> {
        let user_agent =
            HeaderValue::from_str(&config.user_agent).map_err(|_| Error::InvalidConfig {
                reason: "the user agent contains characters not allowed in a header".to_owned(),
            })?;
        let transport = Transport::new(
            &config.trust_roots,
            &config.proxy,
            &config.http2,
            config.timeouts.connect,
        )?;
        let api_base = config.api_base();
        Ok(Self {
            config,
            api_base,
            transport,
            user_agent,
        })
    }

    /// Runs a call whose target and auth need no admin connection (the REST token chain, the
    /// message queue), reporting it to `observer`.
    pub(crate) async fn execute_rest(
        &self,
        call: &Call,
        observer: Option<&dyn CallObserver>,
    ) -> Result<Incoming> {
        self.run(call, None::<&NoAdmin>, observer).await
    }

    /// Runs a call, resolving the admin connection from `admin` before each attempt when the
    /// call goes to the Actions service or authenticates with the admin token, and reports it
    /// to `observer`.
    pub(crate) async fn execute(
        &self,
        call: &Call,
        admin: &impl AdminSource,
        observer: Option<&dyn CallObserver>,
    ) -> Result<Incoming> {
        if call.needs_admin() {
            self.run(call, Some(admin), observer).await
        } else {
            self.run(call, None::<&NoAdmin>, observer).await
        }
    }

    /// Runs one call with retries, then reports it (once, however many attempts it took).
    async fn run<A: AdminSource>(
        &self,
        call: &Call,
        admin: Option<&A>,
        observer: Option<&dyn CallObserver>,
    ) -> Result<Incoming> {
        let started = tokio::time::Instant::now();
        let mut attempts = 0;
        let mut advertised = (0, Duration::ZERO);
        let result = self
            .attempts(call, admin, &mut attempts, &mut advertised)
            .await;
        if let Some(observer) = observer {
            observer.finished(&CallReport {
                endpoint: call.endpoint,
                outcome: result.as_ref().map(|response| response.status),
                attempts,
                duration: started.elapsed(),
                advertised_waits: advertised.0,
                advertised_wait: advertised.1,
            });
        }
        result
    }

    /// Runs the attempts of one call and returns the accepted response; `attempt` counts them.
    async fn attempts<A: AdminSource>(
        &self,
        call: &Call,
        admin: Option<&A>,
        attempt: &mut u32,
        advertised: &mut (u32, Duration),
    ) -> Result<Incoming> {
        let policy = self.policy_for(call.endpoint);
        loop {
            let connection = match admin {
                // Boxed: fetching the admin token is rare, its future large.
                Some(source) => Some(Box::pin(source.connection()).await?),
                None => None,
            };
            *attempt += 1;
            let attempt = *attempt;
            let span = tracing::debug_span!(
                "github.call",
                endpoint = %call.endpoint,
                attempt,
                status = tracing::field::Empty,
                request_id = tracing::field::Empty,
            );
            let (outgoing, admin_token) = self.prepare(call, connection)?;
            let result = self
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
                        && let (Some(token), Some(source)) = (&admin_token, admin)
                    {
                        source.rejected(token);
                    }
                    let now = SystemTime::now();
                    let retry_after = response.header("retry-after");
                    let rate_limit_wait = (call.endpoint.is_rest() && matches!(status, 403 | 429))
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
                        None => {
                            Wait::RetryAfter(retry_after.and_then(|v| parse_retry_after(&v, now)))
                        }
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
                Wait::Advertised(wait) => {
                    let delay = policy.advertised(wait);
                    advertised.0 += 1;
                    advertised.1 += delay;
                    delay
                }
                Wait::RetryAfter(retry_after) => {
                    let delay = policy.delay(attempt, status, retry_after, (self.config.random)());
                    // Only a wait the server asked for (honoured on 429 and 503).
                    if retry_after.is_some() && matches!(status, Some(429 | 503)) {
                        advertised.0 += 1;
                        advertised.1 += delay;
                    }
                    delay
                }
            };
            span.in_scope(|| {
                tracing::debug!(error = %failure, delay_ms = delay.as_millis() as u64, "retrying");
            });
            self.config.sleeper.sleep(delay).await;
        }
    }

    fn policy_for(&self, endpoint: Endpoint) -> &RetryPolicy {
        let config = &self.config;
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
    ) -> Result<(Outgoing, Option<SecretString>)> {
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
                format!("Bearer {}", admin.token.expose_secret()),
                Some(admin.token.clone()),
            ),
            (Auth::Bearer(token), _) => (format!("Bearer {}", token.expose_secret()), None),
            (Auth::Remote(token), _) => (format!("RemoteAuth {}", token.expose_secret()), None),
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
            ("user-agent", self.user_agent.clone()),
        ];
        if let Some(content_type) = call.content_type {
            headers.push(("content-type", HeaderValue::from_static(content_type)));
        }
        headers.extend(call.headers.iter().cloned());
        let timeouts = &self.config.timeouts;
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
