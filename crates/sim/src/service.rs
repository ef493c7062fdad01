//! Request handling end to end: reads the HTTP request, applies the request-level faults and
//! the REST quota, dispatches each endpoint to its handler (`rest`, `actions`, `queue`,
//! `control`), renders the answer and records it in the request log.

use std::sync::Arc;

use bytes::Bytes;
use http::header::{CONTENT_TYPE, HOST, RETRY_AFTER};
use http::{Method, Response, StatusCode};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;

use crate::exception::{self, ApiError};
use crate::fault::{take_burst, take_rate_limit, take_rest_rate_limit};
use crate::request::{Body, Connection, Outcome, Request};
use crate::rest::{self, ExtraHeaders};
use crate::route::{Endpoint, route};
use crate::simulator::{Shared, lock};

/// The largest request body accepted.
const MAX_BODY: usize = 1 << 20;

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
    let connection = req
        .extensions()
        .get::<Connection>()
        .cloned()
        .unwrap_or_else(|| Connection {
            scheme: "http",
            goaway: tokio_util::sync::CancellationToken::new(),
            peer: None,
        });
    // HTTP/2 carries the host in `:authority`, not in a Host header.
    let host = req
        .headers()
        .get(HOST)
        .and_then(|h| h.to_str().ok())
        .map(str::to_owned)
        .or_else(|| req.uri().authority().map(|a| a.as_str().to_owned()))
        .unwrap_or_else(|| "127.0.0.1".to_owned());
    let origin = format!("{}://{host}", connection.scheme);
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
        connection,
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
    let peer = request.connection.peer;
    lock(&shared.log).record(
        method.as_str(),
        &path,
        raw_query.as_deref(),
        name,
        status,
        peer,
    );
    tracing::trace!(status, "answered");
    let mut response = Response::new(Full::new(Bytes::from(bytes)));
    *response.status_mut() =
        StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let headers = response.headers_mut();
    if let Some(ct) = content_type {
        headers.insert(CONTENT_TYPE, http::HeaderValue::from_static(ct));
    }
    let reply_headers = outcome
        .as_ref()
        .map(|reply| reply.headers.clone())
        .unwrap_or_default();
    for (name, value) in extra_headers.into_iter().chain(reply_headers) {
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
#[allow(
    clippy::disallowed_methods,
    reason = "the simulator's configured latency"
)]
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
            return rest::rate_limited(answer, wait, shared.clock.now());
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

fn server_error(status: u16) -> ApiError {
    ApiError::exception(
        status,
        "VssServiceException",
        format!("The service is temporarily unavailable (simulated {status})."),
    )
}

async fn dispatch(shared: &Arc<Shared>, req: &Request) -> Outcome {
    use crate::actions::{self, tenant};
    use crate::queue;
    match &req.endpoint {
        Endpoint::InstallationToken(id) => rest::installation_token(shared, req, *id),
        Endpoint::RegistrationToken(path) => rest::registration_token(shared, req, path),
        Endpoint::RunnerRegistration => rest::runner_registration(shared, req),
        Endpoint::RunnerDownloads(path) => rest::runner_downloads(shared, req, path),
        Endpoint::RestRunnerGroups(path) => rest::runner_groups(shared, req, path),
        Endpoint::RateLimit => rest::rate_limit(shared, req),
        Endpoint::RunnerArchive { tag, filename } => rest::runner_archive(shared, tag, filename),
        Endpoint::GetMessage => queue::get_message(shared, req).await,
        Endpoint::DeleteMessage(id) => queue::delete_message(shared, req, *id),
        Endpoint::AcquireJobs(id) => actions::acquire_jobs(shared, req, *id),
        Endpoint::ListRunnerGroups => {
            actions::list_runner_groups(shared, req, &tenant(shared, req)?)
        }
        Endpoint::ListScaleSets => actions::list_scale_sets(shared, req, &tenant(shared, req)?),
        Endpoint::GetScaleSet(id) => {
            actions::get_scale_set(shared, req, &tenant(shared, req)?, *id)
        }
        Endpoint::CreateScaleSet => actions::create_scale_set(shared, req, &tenant(shared, req)?),
        Endpoint::UpdateScaleSet(id) => {
            actions::update_scale_set(shared, req, &tenant(shared, req)?, *id)
        }
        Endpoint::DeleteScaleSet(id) => {
            actions::delete_scale_set(shared, &tenant(shared, req)?, *id)
        }
        Endpoint::CreateSession(id) => {
            actions::create_session(shared, req, &tenant(shared, req)?, *id)
        }
        Endpoint::RefreshSession(id, sid) => {
            actions::refresh_session(shared, req, &tenant(shared, req)?, *id, sid)
        }
        Endpoint::DeleteSession(id, sid) => {
            actions::delete_session(shared, &tenant(shared, req)?, *id, sid)
        }
        Endpoint::AcquirableJobs(id) => {
            actions::acquirable_jobs(shared, req, &tenant(shared, req)?, *id)
        }
        Endpoint::GenerateJitConfig(id) => {
            actions::generate_jit_config(shared, req, &tenant(shared, req)?, *id)
        }
        Endpoint::GetAgent(id) => actions::get_agent(shared, &tenant(shared, req)?, *id),
        Endpoint::ListAgents => actions::list_agents(shared, req, &tenant(shared, req)?),
        Endpoint::DeleteAgent(id) => actions::delete_agent(shared, &tenant(shared, req)?, *id),
        Endpoint::NotFound | Endpoint::Control(_) => Err(ApiError::RouterNotFound),
    }
}
