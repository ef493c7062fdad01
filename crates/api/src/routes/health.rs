//! `/healthz` (the process answers), `/readyz` (the store answers, and takes writes once one was
//! refused: the one meaning of readiness in every scaleset process, [`crate::v1::Readiness`]) and `/metrics` (the process's registry in
//! the OpenMetrics text format). All three are public: probes and scrapers carry no API token.
//! The server serves them beside the API; the worker and the demo serve them alone
//! ([`crate::probes_router`]). The OpenAPI document, public too, is served by
//! [`crate::openapi`].

use std::sync::Arc;

use axum::Json;
use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use crate::error::ApiError;
use crate::state::AppState;
use crate::v1;

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

/// The store answers (the one meaning of readiness; a worker standing by is ready). When the
/// process runs the control loop, the body also says how many scale sets it holds.
#[utoipa::path(get, path = "/readyz", tag = "health", security(()),
    responses(
        (status = 200, description = "The store answers", body = v1::Readiness),
        (status = 503, description = "The store does not answer (named in `store`)", body = v1::Readiness),
    ))]
pub(crate) async fn readyz(State(state): State<Arc<AppState>>) -> Response {
    let (status, body) = readiness(&state).await;
    (status, Json(body)).into_response()
}

/// What `/readyz` answers.
async fn readiness(state: &AppState) -> (StatusCode, v1::Readiness) {
    let unavailable = |e: &scaleset_store::Error| {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            v1::Readiness::new(false, crate::error::chain(e), None, None, None),
        )
    };
    // The question is "does the store answer": one cheap read, whichever process asks; and,
    // once a write was refused (a full disk), whether it takes writes again.
    if let Err(e) = state.store.controller_id().await {
        return unavailable(&e);
    }
    if let Err(e) = state.store.check_writes().await {
        return unavailable(&e);
    }
    let Some(worker) = &state.worker else {
        return (
            StatusCode::OK,
            v1::Readiness::new(true, "ok".to_owned(), None, None, None),
        );
    };
    let scale_sets = match state.store.list_scale_sets(None).await {
        Ok(sets) => sets,
        Err(e) => return unavailable(&e),
    };
    let now = state.clock.now();
    let mut enabled = 0u64;
    let mut held = 0u64;
    for scale_set in scale_sets.iter().filter(|s| s.spec.enabled) {
        enabled += 1;
        // A lease that cannot be read right now counts as not held: the count is information,
        // and readiness was decided by the store answering above.
        if let Ok(Some(lease)) = state.store.get_lease(scale_set.id).await
            && lease.holder == *worker
            && lease.expires_at > now
        {
            held += 1;
        }
    }
    (
        StatusCode::OK,
        v1::Readiness::new(
            true,
            "ok".to_owned(),
            Some(worker.clone()),
            Some(enabled),
            Some(held),
        ),
    )
}

/// Every metric of the process (OpenMetrics text).
#[utoipa::path(get, path = "/metrics", tag = "health", security(()),
    responses((status = 200, description = "OpenMetrics text", body = String, content_type = "application/openmetrics-text")))]
pub(crate) async fn metrics(State(state): State<Arc<AppState>>) -> Result<Response, ApiError> {
    // The undeclared count is the store's, read now; a store that does not answer leaves the
    // last value (a scrape never fails on the database). Only the process exporting the
    // fleet-wide series reads it (the others do not export it).
    if state.metrics.fleet_role().exports()
        && let Ok(count) = not_declared(&state).await
    {
        state
            .fleet_metrics
            .not_declared
            .set(i64::try_from(count).unwrap_or(i64::MAX));
    }
    // Only the process exporting the fleet-wide series lists for them: a scrape of every
    // other process costs GitHub nothing.
    if state.metrics.fleet_role().exports() {
        state.refresh_ours_undeclared();
    }
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

/// How many stored scale sets the configuration file does not declare.
async fn not_declared(state: &AppState) -> scaleset_store::Result<usize> {
    let entities = state.store.list_entities().await?;
    let sets = state.store.list_scale_sets(None).await?;
    Ok(sets
        .iter()
        .filter(|s| {
            !entities
                .iter()
                .any(|e| e.id == s.entity_id && state.configured.declares(&e.kind, &s.spec))
        })
        .count())
}
