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

/// The store answers within [`STORE_BOUND`], and no lease this worker serves is in doubt (the
/// one meaning of readiness; a worker standing by is ready). When the process runs the control
/// loop, the body also says how many scale sets it holds; when not ready, `reason` says why.
#[utoipa::path(get, path = "/readyz", tag = "health", security(()),
    responses(
        (status = 200, description = "The store answers", body = v1::Readiness),
        (status = 503, description = "Not ready: the store fails or does not answer in time, or leases are in doubt (`reason`)", body = v1::Readiness),
    ))]
pub(crate) async fn readyz(State(state): State<Arc<AppState>>) -> Response {
    let (status, body) = readiness(&state).await;
    (status, Json(body)).into_response()
}

/// How long `/readyz` waits for the store: a database cut off by the network holds a query
/// (and the probe) for as long as TCP retries, where a probe must answer.
pub(crate) const STORE_BOUND: std::time::Duration = std::time::Duration::from_secs(2);

/// What `/readyz` answers.
async fn readiness(state: &AppState) -> (StatusCode, v1::Readiness) {
    match tokio::time::timeout(STORE_BOUND, store_readiness(state)).await {
        Ok((status, body)) => {
            let doubts = state.metrics.leases_in_doubt();
            if status == StatusCode::OK && state.worker.is_some() && !doubts.is_empty() {
                let body = body.not_ready(v1::NotReady::LeasesInDoubt { scale_sets: doubts });
                return (StatusCode::SERVICE_UNAVAILABLE, body);
            }
            (status, body)
        }
        Err(_) => (
            StatusCode::SERVICE_UNAVAILABLE,
            v1::Readiness::new(
                false,
                format!("the store did not answer within {STORE_BOUND:?}"),
                state.worker.clone(),
                None,
                None,
            )
            .not_ready(v1::NotReady::StoreTimedOut {
                after_ms: u64::try_from(STORE_BOUND.as_millis()).unwrap_or(u64::MAX),
            }),
        ),
    }
}

/// What `/readyz` answers from the store alone.
async fn store_readiness(state: &AppState) -> (StatusCode, v1::Readiness) {
    let unavailable = |e: &scaleset_store::Error| {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            v1::Readiness::new(false, crate::error::chain(e), None, None, None)
                .not_ready(v1::NotReady::StoreFailed),
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
    for scale_set in scale_sets.iter().filter(|s| s.spec.enabled()) {
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
    // Bounded as `/readyz` is: a database cut off by the network must not hold a scrape.
    if state.metrics.fleet_role().exports()
        && let Ok(Ok(count)) = tokio::time::timeout(STORE_BOUND, not_declared(&state)).await
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
