//! `/healthz` (the process answers), `/readyz` (the database answers) and `/metrics` (the
//! process's registry in the OpenMetrics text format). All three are public: probes and
//! scrapers carry no API token. The OpenAPI document, public too, is served by
//! [`crate::openapi`].

use std::sync::Arc;

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use crate::error::ApiError;
use crate::state::AppState;

pub(crate) fn routes() -> Router<Arc<AppState>> {
    Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics))
}

/// The process is up.
#[utoipa::path(get, path = "/healthz", tag = "health", security(()),
    responses((status = 200, description = "The process answers", body = String, content_type = "text/plain")))]
pub(crate) async fn healthz() -> &'static str {
    "ok\n"
}

/// The database answers.
#[utoipa::path(get, path = "/readyz", tag = "health", security(()),
    responses(
        (status = 200, description = "The database answers", body = String, content_type = "text/plain"),
        (status = 503, description = "The database does not answer", body = crate::v1::ErrorBody),
    ))]
pub(crate) async fn readyz(State(state): State<Arc<AppState>>) -> Result<&'static str, ApiError> {
    state
        .store
        .controller_id()
        .await
        .map_err(|e| ApiError::Unavailable {
            during: "checking readiness",
            reason: crate::error::chain(&e),
        })?;
    Ok("ready\n")
}

/// Every metric of the process (OpenMetrics text).
#[utoipa::path(get, path = "/metrics", tag = "health", security(()),
    responses((status = 200, description = "OpenMetrics text", body = String, content_type = "application/openmetrics-text")))]
pub(crate) async fn metrics(State(state): State<Arc<AppState>>) -> Result<Response, ApiError> {
    let mut body = String::new();
    prometheus_client::encoding::text::encode(&mut body, &state.registry).map_err(|e| {
        ApiError::Internal {
            during: "encoding the metrics",
            reason: e.to_string(),
        }
    })?;
    Ok((
        StatusCode::OK,
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        body,
    )
        .into_response())
}
