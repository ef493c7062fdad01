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
use crate::fault::{take_burst, take_count, take_rate_limit};
use crate::protocol;
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
    pub(crate) body: Option<Value>,
}

impl Reply {
    pub(crate) fn json(status: u16, body: Value) -> Self {
        Self {
            status,
            body: Some(body),
        }
    }

    pub(crate) fn empty(status: u16) -> Self {
        Self { status, body: None }
    }
}

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
        let value = self.headers.get(AUTHORIZATION)?.to_str().ok()?;
        let (scheme, token) = value.split_once(' ')?;
        scheme
            .eq_ignore_ascii_case("bearer")
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
    let (outcome, retry_after) = if matches!(request.endpoint, Endpoint::Control(_)) {
        (crate::control::handle(&shared, &request), None)
    } else {
        serve_simulated(&shared, &request).await
    };
    let faults = lock(&shared.faults).clone();
    let is_control = matches!(request.endpoint, Endpoint::Control(_));
    let (status, content_type, bytes) = match &outcome {
        Ok(reply) => match &reply.body {
            Some(body) => (
                reply.status,
                Some("application/json; charset=utf-8"),
                exception::json_bytes(body, faults.bom && !is_control),
            ),
            None => (reply.status, None, Vec::new()),
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
    if let Some(secs) = retry_after
        && let Ok(v) = http::HeaderValue::from_str(&secs.to_string())
    {
        headers.insert(RETRY_AFTER, v);
    }
    if !is_control && let Ok(v) = http::HeaderValue::from_str(&request_id) {
        headers.insert("ActivityId", v.clone());
        headers.insert("X-GitHub-Request-Id", v);
    }
    response
}

/// Applies the request-level faults, then dispatches to the endpoint.
async fn serve_simulated(shared: &Arc<Shared>, req: &Request) -> (Outcome, Option<u64>) {
    let name = req.endpoint.name();
    let latency = lock(&shared.faults).latency_ms;
    if latency > 0 {
        tokio::time::sleep(std::time::Duration::from_millis(latency)).await;
    }
    {
        let mut faults = lock(&shared.faults);
        if let Some(secs) = take_rate_limit(&mut faults.rate_limit, name) {
            return (
                Err(ApiError::Rest {
                    status: 429,
                    message: "API rate limit exceeded",
                }),
                Some(secs),
            );
        }
        if let Some(status) = take_burst(&mut faults.server_errors, name) {
            return (Err(server_error(status)), None);
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
        return (Err(server_error(status)), None);
    }
    (outcome, None)
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

fn registration_token(shared: &Shared, req: &Request, path: &str) -> Outcome {
    let bearer = req.bearer().ok_or(ApiError::Rest {
        status: 401,
        message: "Requires authentication",
    })?;
    let scope = Scope::parse_path(path).ok_or_else(not_found)?;
    let now = shared.clock.now();
    let mut state = lock(&shared.state);
    if let Some(pat) = shared.config.pats.iter().find(|p| p.token == bearer) {
        if !state.has_scope(&scope) {
            return Err(not_found());
        }
        let allowed = pat.scopes.is_empty()
            || pat
                .scopes
                .iter()
                .any(|s| Scope::parse_path(s).as_ref() == Some(&scope));
        if !allowed {
            return Err(ApiError::Rest {
                status: 403,
                message: "Resource not accessible by personal access token",
            });
        }
    } else if let Some((installation, expires)) = state.installation_tokens.get(bearer).cloned() {
        if expires <= now {
            return Err(bad_credentials());
        }
        if !state.has_scope(&scope) {
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
        if !covered {
            return Err(ApiError::Rest {
                status: 403,
                message: "Resource not accessible by integration",
            });
        }
    } else {
        return Err(bad_credentials());
    }
    let token = random_token("AREG", 29);
    let expires = now.plus(shared.config.registration_token_ttl);
    state
        .registration_tokens
        .insert(token.clone(), (scope, expires));
    Ok(Reply::json(
        201,
        json!({ "token": token, "expires_at": protocol::expires_at(expires) }),
    ))
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
