//! Request handling for the simulated GitHub: authentication, the REST token endpoints, the
//! Actions service, the message queue (with its long-poll), fault application, and the request
//! log. The control API's routes live in `control.rs`.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use bytes::Bytes;
use http::header::{AUTHORIZATION, CONTENT_TYPE, HOST, RETRY_AFTER};
use http::{HeaderMap, Method, Response, StatusCode};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use serde_json::{Value, json};

use crate::config::AssignmentMode;
use crate::exception::{self, ApiError};
use crate::fault::{
    RestRateLimitAnswer, take_burst, take_count, take_rate_limit, take_rest_rate_limit,
};
use crate::protocol;
use crate::quota::QuotaStatus;
use crate::route::{Endpoint, route};
use crate::scope::Scope;
use crate::simulator::{Shared, lock};
use crate::state::ScaleSetInput;
use crate::token::{Grant, Refusal, decode_app_jwt};

/// The largest request body accepted.
const MAX_BODY: usize = 1 << 20;

/// A successful answer before rendering.
#[derive(Debug)]
pub(crate) struct Reply {
    pub(crate) status: u16,
    pub(crate) body: Body,
}

/// The body of a successful answer.
#[derive(Debug)]
pub(crate) enum Body {
    /// No body.
    Empty,
    /// A JSON document (`application/json; charset=utf-8`).
    Json(Value),
    /// Opaque bytes of the given content type.
    Bytes {
        content_type: &'static str,
        bytes: Bytes,
    },
}

impl Reply {
    pub(crate) fn json(status: u16, body: Value) -> Self {
        Self {
            status,
            body: Body::Json(body),
        }
    }

    pub(crate) fn empty(status: u16) -> Self {
        Self {
            status,
            body: Body::Empty,
        }
    }

    pub(crate) fn bytes(status: u16, content_type: &'static str, bytes: Bytes) -> Self {
        Self {
            status,
            body: Body::Bytes {
                content_type,
                bytes,
            },
        }
    }
}

/// Response headers a fault or the rate limit adds to an answer.
type ExtraHeaders = Vec<(&'static str, String)>;

/// One parsed request.
pub(crate) struct Request {
    pub(crate) method: Method,
    pub(crate) endpoint: Endpoint,
    pub(crate) query: HashMap<String, String>,
    pub(crate) headers: HeaderMap,
    pub(crate) body: Bytes,
    /// `http://HOST` as the client addressed us.
    pub(crate) origin: String,
}

impl Request {
    /// A query value, form-decoded (`+` is a space), matching the key case-insensitively.
    pub(crate) fn query(&self, key: &str) -> Option<&str> {
        self.query
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(key))
            .map(|(_, v)| v.as_str())
    }

    fn bearer(&self) -> Option<&str> {
        self.credential(&["bearer"])
    }

    /// The token of a GitHub REST call: GitHub takes `Bearer` and the older `token` scheme.
    fn rest_token(&self) -> Option<&str> {
        self.credential(&["bearer", "token"])
    }

    fn credential(&self, schemes: &[&str]) -> Option<&str> {
        let value = self.headers.get(AUTHORIZATION)?.to_str().ok()?;
        let (scheme, token) = value.split_once(' ')?;
        schemes
            .iter()
            .any(|s| scheme.eq_ignore_ascii_case(s))
            .then_some(token.trim())
    }

    /// The body as JSON (`Null` when empty or not JSON).
    pub(crate) fn json(&self) -> Value {
        let body = self
            .body
            .strip_prefix(&[0xEF, 0xBB, 0xBF][..])
            .unwrap_or(&self.body);
        serde_json::from_slice(body).unwrap_or(Value::Null)
    }
}

type Outcome = Result<Reply, ApiError>;

/// Handles one HTTP request end to end, inside an `http.request` span.
pub(crate) async fn handle(
    shared: Arc<Shared>,
    req: hyper::Request<Incoming>,
) -> Response<Full<Bytes>> {
    use tracing::Instrument as _;
    let endpoint = route(req.method(), req.uri().path(), &shared.mounts);
    let request_id = uuid::Uuid::new_v4().to_string();
    let span = tracing::debug_span!(
        "http.request",
        method = %req.method(),
        route = endpoint.name(),
        request_id = %request_id,
    );
    answer(shared, req, endpoint, request_id)
        .instrument(span)
        .await
}

async fn answer(
    shared: Arc<Shared>,
    req: hyper::Request<Incoming>,
    endpoint: Endpoint,
    request_id: String,
) -> Response<Full<Bytes>> {
    let method = req.method().clone();
    let path = req.uri().path().to_owned();
    let raw_query = req.uri().query().map(str::to_owned);
    let origin = format!(
        "http://{}",
        req.headers()
            .get(HOST)
            .and_then(|h| h.to_str().ok())
            .unwrap_or("127.0.0.1")
    );
    let headers = req.headers().clone();
    let body = match Limited::new(req.into_body(), MAX_BODY).collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(_) => Bytes::new(),
    };
    let query = raw_query
        .as_deref()
        .map(|q| {
            url::form_urlencoded::parse(q.as_bytes())
                .into_owned()
                .collect()
        })
        .unwrap_or_default();
    let request = Request {
        method: method.clone(),
        endpoint,
        query,
        headers,
        body,
        origin,
    };
    let name = request.endpoint.name();
    let (outcome, extra_headers) = if matches!(request.endpoint, Endpoint::Control(_)) {
        (crate::control::handle(&shared, &request), Vec::new())
    } else {
        serve_simulated(&shared, &request).await
    };
    let faults = lock(&shared.faults).clone();
    let is_control = matches!(request.endpoint, Endpoint::Control(_));
    let (status, content_type, bytes) = match &outcome {
        Ok(reply) => match &reply.body {
            Body::Json(body) => (
                reply.status,
                Some("application/json; charset=utf-8"),
                exception::json_bytes(body, faults.bom && !is_control),
            ),
            Body::Bytes {
                content_type,
                bytes,
            } => (reply.status, Some(*content_type), bytes.to_vec()),
            Body::Empty => (reply.status, None, Vec::new()),
        },
        Err(error) => {
            let rendered = exception::render(error, &faults);
            (rendered.status, rendered.content_type, rendered.body)
        }
    };
    lock(&shared.log).record(method.as_str(), &path, raw_query.as_deref(), name, status);
    tracing::trace!(status, "answered");
    let mut response = Response::new(Full::new(Bytes::from(bytes)));
    *response.status_mut() =
        StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let headers = response.headers_mut();
    if let Some(ct) = content_type {
        headers.insert(CONTENT_TYPE, http::HeaderValue::from_static(ct));
    }
    for (name, value) in extra_headers {
        if let Ok(v) = http::HeaderValue::from_str(&value) {
            headers.insert(name, v);
        }
    }
    if !is_control && let Ok(v) = http::HeaderValue::from_str(&request_id) {
        headers.insert("ActivityId", v.clone());
        headers.insert("X-GitHub-Request-Id", v);
    }
    response
}

/// Counts REST calls against the simulated quota, applies the request-level faults, then
/// dispatches to the endpoint.
async fn serve_simulated(shared: &Arc<Shared>, req: &Request) -> (Outcome, ExtraHeaders) {
    let name = req.endpoint.name();
    let latency = lock(&shared.faults).latency_ms;
    if latency > 0 {
        tokio::time::sleep(std::time::Duration::from_millis(latency)).await;
    }
    // GitHub does not count `/rate_limit` itself against the limit.
    if req.endpoint.is_rest() && req.endpoint != Endpoint::RateLimit {
        lock(&shared.quota).record(shared.clock.now());
    }
    {
        let mut faults = lock(&shared.faults);
        if let Some(secs) = take_rate_limit(&mut faults.rate_limit, name) {
            return (
                Err(ApiError::Rest {
                    status: 429,
                    message: "API rate limit exceeded",
                }),
                vec![(RETRY_AFTER.as_str(), secs.to_string())],
            );
        }
        if req.endpoint.is_token_chain()
            && let Some((answer, wait)) = take_rest_rate_limit(&mut faults.rest_rate_limit, name)
        {
            return rest_rate_limited(answer, wait, shared.clock.now());
        }
        if let Some(status) = take_burst(&mut faults.server_errors, name) {
            return (Err(server_error(status)), Vec::new());
        }
    }
    if req.endpoint != Endpoint::GetMessage {
        shared.tick();
    }
    let outcome = dispatch(shared, req).await;
    if req.method == Method::POST
        && outcome.is_ok()
        && let Some(status) = take_burst(&mut lock(&shared.faults).commit_then_fail, name)
    {
        return (Err(server_error(status)), Vec::new());
    }
    (outcome, Vec::new())
}

/// One of GitHub's REST rate-limit answers, telling the client to wait `wait` seconds.
fn rest_rate_limited(
    answer: RestRateLimitAnswer,
    wait: u64,
    now: crate::clock::SimTime,
) -> (Outcome, ExtraHeaders) {
    const SECONDARY: &str =
        "You have exceeded a secondary rate limit. Please wait a few minutes before you try again.";
    match answer {
        RestRateLimitAnswer::RetryAfter403 | RestRateLimitAnswer::RetryAfter429 => {
            let status = if answer == RestRateLimitAnswer::RetryAfter403 {
                403
            } else {
                429
            };
            (
                Err(ApiError::Rest {
                    status,
                    message: SECONDARY,
                }),
                vec![(RETRY_AFTER.as_str(), wait.to_string())],
            )
        }
        RestRateLimitAnswer::RemainingZero403 => {
            let quota = QuotaStatus::exhausted(now.as_secs().saturating_add(wait));
            (
                Err(ApiError::Rest {
                    status: 403,
                    message: "API rate limit exceeded for user ID 1.",
                }),
                protocol::rate_limit_headers(&quota),
            )
        }
    }
}

fn server_error(status: u16) -> ApiError {
    ApiError::exception(
        status,
        "VssServiceException",
        format!("The service is temporarily unavailable (simulated {status})."),
    )
}

async fn dispatch(shared: &Arc<Shared>, req: &Request) -> Outcome {
    match &req.endpoint {
        Endpoint::InstallationToken(id) => installation_token(shared, req, *id),
        Endpoint::RegistrationToken(path) => registration_token(shared, req, path),
        Endpoint::RunnerRegistration => runner_registration(shared, req),
        Endpoint::RunnerDownloads(path) => runner_downloads(shared, req, path),
        Endpoint::RateLimit => rate_limit(shared, req),
        Endpoint::RunnerArchive { tag, filename } => shared
            .downloads
            .find(tag, filename)
            .map(|a| Reply::bytes(200, "application/octet-stream", a.bytes.clone()))
            .ok_or(ApiError::RouterNotFound),
        Endpoint::GetMessage => crate::queue::get_message(shared, req).await,
        Endpoint::DeleteMessage(id) => crate::queue::delete_message(shared, req, *id),
        Endpoint::AcquireJobs(id) => crate::actions::acquire_jobs(shared, req, *id),
        Endpoint::NotFound | Endpoint::Control(_) => Err(ApiError::RouterNotFound),
        actions => {
            let scope = admin_scope(shared, req)?;
            crate::actions::handle(shared, req, actions, &scope)
        }
    }
}

/// The tenant an admin bearer token grants; 401 `InvalidTokenException` otherwise.
fn admin_scope(shared: &Shared, req: &Request) -> Result<Scope, ApiError> {
    let token = req.bearer().ok_or_else(|| {
        ApiError::exception(
            401,
            "InvalidTokenException",
            "No access token was presented.",
        )
    })?;
    match shared.signer.verify(token, shared.clock.now()) {
        Ok(Grant::Admin { scope }) => Scope::parse_path(&scope).ok_or_else(|| {
            ApiError::exception(
                401,
                "InvalidTokenException",
                "The access token is not valid.",
            )
        }),
        Ok(Grant::Queue { .. }) | Err(Refusal::Invalid) => Err(ApiError::exception(
            401,
            "InvalidTokenException",
            "The access token is not valid.",
        )),
        Err(Refusal::Expired) => Err(ApiError::exception(
            401,
            "InvalidTokenException",
            "The user 'System:PublicAccess' is not authorized to access this resource: the access token has expired.",
        )),
    }
}

/// The session a queue bearer token grants, if it is valid and the session still active.
pub(crate) fn queue_grant(shared: &Shared, req: &Request) -> Result<(i64, String), ApiError> {
    let token = req.bearer().ok_or(ApiError::Unauthorized)?;
    match shared.signer.verify(token, shared.clock.now()) {
        Ok(Grant::Queue { scale_set, session }) => {
            if lock(&shared.state).session_active(scale_set, &session) {
                Ok((scale_set, session))
            } else {
                Err(ApiError::Unauthorized)
            }
        }
        _ => Err(ApiError::Unauthorized),
    }
}

fn random_token(prefix: &str, len: usize) -> String {
    let alphabet: Vec<char> = ('A'..='Z').chain('0'..='9').collect();
    let tail: String = (0..len)
        .map(|_| alphabet[fastrand::usize(..alphabet.len())])
        .collect();
    format!("{prefix}{tail}")
}

fn bad_credentials() -> ApiError {
    ApiError::Rest {
        status: 401,
        message: "Bad credentials",
    }
}

fn not_found() -> ApiError {
    ApiError::Rest {
        status: 404,
        message: "Not Found",
    }
}

fn installation_token(shared: &Shared, req: &Request, id: i64) -> Outcome {
    let jwt = req
        .bearer()
        .and_then(decode_app_jwt)
        .ok_or(ApiError::Rest {
            status: 401,
            message: "A JSON web token could not be decoded",
        })?;
    let now = shared.clock.now();
    if jwt.expires <= now.as_secs() {
        return Err(ApiError::Rest {
            status: 401,
            message: "'Expiration time' claim ('exp') must be a numeric value representing the future time at which the assertion expires",
        });
    }
    let seed = shared
        .config
        .installations
        .iter()
        .find(|i| i.id == id)
        .ok_or_else(not_found)?;
    if seed.app_id != jwt.issuer {
        return Err(ApiError::Rest {
            status: 401,
            message: "Integration not found",
        });
    }
    let token = random_token("ghs_", 36);
    let expires = now.plus(shared.config.installation_token_ttl);
    lock(&shared.state)
        .installation_tokens
        .insert(token.clone(), (id, expires));
    Ok(Reply::json(
        201,
        json!({
            "token": token,
            "expires_at": protocol::expires_at(expires),
            "permissions": { "organization_self_hosted_runners": "write", "administration": "write", "metadata": "read" },
            "repository_selection": "all",
        }),
    ))
}

/// Checks that the caller's PAT or installation token may manage runners of `scope` (GitHub's
/// answers: 401 without or with an unknown token, 404 for an unknown scope, 403 when the token
/// does not cover it).
fn authorize_runner_admin(shared: &Shared, req: &Request, scope: &Scope) -> Result<(), ApiError> {
    let token = req.rest_token().ok_or(ApiError::Rest {
        status: 401,
        message: "Requires authentication",
    })?;
    let now = shared.clock.now();
    let state = lock(&shared.state);
    if let Some(pat) = shared.config.pats.iter().find(|p| p.token == token) {
        if !state.has_scope(scope) {
            return Err(not_found());
        }
        let allowed = pat.scopes.is_empty()
            || pat
                .scopes
                .iter()
                .any(|s| Scope::parse_path(s).as_ref() == Some(scope));
        if !allowed {
            return Err(ApiError::Rest {
                status: 403,
                message: "Resource not accessible by personal access token",
            });
        }
        return Ok(());
    }
    let Some((installation, expires)) = state.installation_tokens.get(token).cloned() else {
        return Err(bad_credentials());
    };
    if expires <= now {
        return Err(bad_credentials());
    }
    if !state.has_scope(scope) {
        return Err(not_found());
    }
    let seed = shared
        .config
        .installations
        .iter()
        .find(|i| i.id == installation);
    let covered = scope.account().is_some_and(|account| {
        seed.is_some_and(|s| s.accounts.iter().any(|a| a.eq_ignore_ascii_case(account)))
    });
    if covered {
        Ok(())
    } else {
        Err(ApiError::Rest {
            status: 403,
            message: "Resource not accessible by integration",
        })
    }
}

fn registration_token(shared: &Shared, req: &Request, path: &str) -> Outcome {
    if req.rest_token().is_none() {
        return Err(ApiError::Rest {
            status: 401,
            message: "Requires authentication",
        });
    }
    let scope = Scope::parse_path(path).ok_or_else(not_found)?;
    authorize_runner_admin(shared, req, &scope)?;
    let now = shared.clock.now();
    let token = random_token("AREG", 29);
    let expires = now.plus(shared.config.registration_token_ttl);
    lock(&shared.state)
        .registration_tokens
        .insert(token.clone(), (scope, expires));
    Ok(Reply::json(
        201,
        json!({ "token": token, "expires_at": protocol::expires_at(expires) }),
    ))
}

/// `GET …/actions/runners/downloads`: the runner application of every usual platform, served
/// by the simulator itself.
fn runner_downloads(shared: &Shared, req: &Request, path: &str) -> Outcome {
    if req.rest_token().is_none() {
        return Err(ApiError::Rest {
            status: 401,
            message: "Requires authentication",
        });
    }
    let scope = Scope::parse_path(path).ok_or_else(not_found)?;
    authorize_runner_admin(shared, req, &scope)?;
    Ok(Reply::json(
        200,
        protocol::runner_downloads(shared.downloads.archives(), &req.origin),
    ))
}

/// `GET /rate_limit`: the simulated `core` quota (exhausted while `restRateLimit` is armed).
/// Unauthenticated calls are answered too, as GitHub does; an unknown token is refused.
fn rate_limit(shared: &Shared, req: &Request) -> Outcome {
    let now = shared.clock.now();
    if req.headers.contains_key(AUTHORIZATION) {
        let token = req.rest_token().ok_or_else(bad_credentials)?;
        let known = shared.config.pats.iter().any(|p| p.token == token)
            || lock(&shared.state)
                .installation_tokens
                .get(token)
                .is_some_and(|(_, expires)| *expires > now);
        if !known {
            return Err(bad_credentials());
        }
    }
    let exhausted = lock(&shared.faults)
        .rest_rate_limit
        .as_ref()
        .filter(|f| f.armed())
        .map(|f| QuotaStatus::exhausted(now.as_secs().saturating_add(f.wait_secs)));
    let quota = exhausted.unwrap_or_else(|| lock(&shared.quota).status(now));
    Ok(Reply::json(200, protocol::rate_limit(&quota, now)))
}

fn runner_registration(shared: &Shared, req: &Request) -> Outcome {
    if take_count(&mut lock(&shared.faults).runner_registration_unauthorized) {
        return Err(bad_credentials());
    }
    let token = req
        .headers
        .get(AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split_once(' '))
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("RemoteAuth"))
        .map(|(_, t)| t.trim().to_owned())
        .ok_or_else(bad_credentials)?;
    let now = shared.clock.now();
    let (scope, expires) = lock(&shared.state)
        .registration_tokens
        .get(&token)
        .cloned()
        .ok_or_else(bad_credentials)?;
    if expires <= now {
        return Err(bad_credentials());
    }
    let body = req.json();
    let wanted = protocol::field(&body, "url")
        .and_then(Value::as_str)
        .and_then(Scope::parse_url)
        .ok_or(ApiError::Rest {
            status: 400,
            message: "Invalid request: 'url' must be a GitHub URL of a repository, organization or enterprise",
        })?;
    if wanted != scope {
        return Err(ApiError::Rest {
            status: 403,
            message: "The registration token does not grant access to this URL",
        });
    }
    let admin = shared.signer.mint(
        Grant::Admin {
            scope: scope.to_string(),
        },
        now,
        shared.config.admin_token_ttl,
    );
    Ok(Reply::json(
        200,
        json!({
            "url": format!("{}{}", req.origin, shared.mounts.actions_base),
            "token": admin,
            "token_schema": "OAuthAccessToken",
        }),
    ))
}

/// Builds a scale-set input from a request body.
pub(crate) fn scale_set_input(req: &Request) -> ScaleSetInput {
    protocol::scale_set_input(&req.json())
}

/// Whether the simulator runs in auto-assign mode.
pub(crate) fn auto_assign(shared: &Shared) -> bool {
    shared.config.assignment == AssignmentMode::AutoAssign
}

/// Marks one more held poll for the lifetime of the guard.
pub(crate) struct PollGuard<'a>(&'a Shared);

impl<'a> PollGuard<'a> {
    pub(crate) fn new(shared: &'a Shared) -> Self {
        shared.waiting_polls.fetch_add(1, Ordering::SeqCst);
        Self(shared)
    }
}

impl Drop for PollGuard<'_> {
    fn drop(&mut self) {
        self.0.waiting_polls.fetch_sub(1, Ordering::SeqCst);
    }
}
