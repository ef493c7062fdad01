//! The whole application: every route module of [`crate::routes`] and the OpenAPI document,
//! the bearer-token check on `/api/v1`, the body limit, request ids and the JSON errors. Other
//! modules mount theirs through [`router_with`] (authenticated, under `/api/v1`, or public at
//! the root) without touching this list.

use std::sync::Arc;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::http::{HeaderMap, Uri};
use axum::middleware;
use axum::response::{IntoResponse, Response};

use crate::error::ApiError;
use crate::extract::BodyLimit;
use crate::routes::{
    controller, credentials, decommission, entities, events, health, instance_facing, instances,
    plan, scale_sets, tokens, workers,
};
use crate::state::AppState;

/// The whole application: [`router_with`] with the status page (`crate::status_page`) at `/`.
pub fn router(state: Arc<AppState>) -> Router {
    router_with(state, Router::new(), crate::status_page::routes())
}

/// The whole application with extra routers: `authenticated` is nested under `/api/v1` behind
/// the bearer-token check (paths relative to `/api/v1`, e.g. `/plan`); `public` is merged at the
/// root with no authentication (it must do its own, e.g. per-instance tokens, or serve only
/// what anyone may read). Both share the state, the body limit, request ids and the JSON errors.
pub fn router_with(
    state: Arc<AppState>,
    authenticated: Router<Arc<AppState>>,
    public: Router<Arc<AppState>>,
) -> Router {
    let api = Router::new()
        .merge(controller::routes())
        .merge(credentials::routes())
        .merge(entities::routes())
        .merge(scale_sets::routes())
        .merge(events::routes())
        .merge(instances::routes())
        .merge(plan::routes())
        .merge(decommission::routes())
        .merge(tokens::routes())
        .merge(workers::routes())
        .merge(authenticated)
        .route_layer(middleware::from_fn_with_state(
            state.clone(),
            crate::auth::require_token,
        ))
        // Merged after the API-token layer, which therefore does not cover them: they take
        // per-instance tokens (their own layer).
        .merge(instance_facing::routes(state.clone()));
    let limit = state.limits.max_body_bytes;
    Router::new()
        .merge(health::routes())
        .merge(crate::openapi::routes())
        .merge(public)
        .nest("/api/v1", api)
        .fallback(no_route)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(DefaultBodyLimit::max(limit))
        .layer(middleware::map_response_with_state(
            state.clone(),
            strict_transport_security,
        ))
        .layer(axum::Extension(BodyLimit(limit)))
        .layer(middleware::from_fn_with_state(
            state.clone(),
            crate::request_id::layer,
        ))
        .with_state(state)
}

/// Over HTTPS ([`AppState::https`]) every answer tells the browser to come back only over
/// HTTPS (a year; not the subdomains, which this server does not speak for).
async fn strict_transport_security(
    axum::extract::State(state): axum::extract::State<Arc<AppState>>,
    mut response: Response,
) -> Response {
    if state.https {
        response.headers_mut().insert(
            axum::http::header::STRICT_TRANSPORT_SECURITY,
            axum::http::HeaderValue::from_static("max-age=31536000"),
        );
    }
    response
}

/// Only the probes and metrics (`/healthz`, `/readyz`, `/metrics`), for a process that serves
/// no API (the worker): the same handlers, so `/readyz` means the same everywhere.
pub fn probes_router(state: Arc<AppState>) -> Router {
    Router::new()
        .merge(health::routes())
        .fallback(no_route)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(middleware::from_fn_with_state(
            state.clone(),
            crate::request_id::layer,
        ))
        .with_state(state)
}

/// A URL nothing serves: an HTML page for a browser outside the API (its `Accept` names
/// `text/html`), the JSON error for API clients and under `/api/`.
async fn no_route(uri: Uri, headers: HeaderMap) -> Response {
    let path = uri.path();
    if !path.starts_with("/api/") && crate::status_page::wants_html(&headers) {
        return crate::status_page::not_found_page(path);
    }
    ApiError::NoRoute {
        path: path.to_owned(),
    }
    .into_response()
}

async fn method_not_allowed() -> ApiError {
    ApiError::MethodNotAllowed
}
