//! `POST /api/v1/decommission/plan` and `POST /api/v1/decommission/apply`: the control crate's
//! decommission ([`scaleset_fleet::Decommission`], the planner and the I/O that
//! `scaleset-worker decommission` runs too) over this server's store and its worker's
//! providers. A server without a worker has no providers: `409 no_providers`, never a plan
//! that silently leaves the instances out.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::routing::post;
use axum::{Json, Router};
use scaleset_fleet::{
    Decommission, DecommissionAct, DecommissionItem, DecommissionOptions, DecommissionSubject,
    DecommissionWhy, PlanDigest,
};
use tokio_util::sync::CancellationToken;

use crate::error::ApiError;
use crate::extract::Body;
use crate::state::AppState;
use crate::v1::{
    DecommissionApplyRequest, DecommissionApplyResponse, DecommissionOutcome,
    DecommissionPlanResponse, DecommissionRequest, DecommissionStep, ErrorBody,
};

pub(crate) fn routes() -> Router<Arc<AppState>> {
    Router::new()
        .route("/decommission/plan", post(plan))
        .route("/decommission/apply", post(apply))
}

/// What decommissioning the scope would delete, wait for, detach and leave; writes nothing.
#[utoipa::path(post, path = "/api/v1/decommission/plan", tag = "decommission",
    operation_id = "plan_decommission",
    request_body = DecommissionRequest,
    responses(
        (status = 200, description = "What a decommission would do, step by step, and the plan's digest; nothing is changed", body = DecommissionPlanResponse),
        (status = 400, description = "The body or the scope is invalid", body = ErrorBody),
        (status = 401, description = "No or an invalid token", body = ErrorBody),
        (status = 409, description = "no_providers: this server runs no worker", body = ErrorBody),
        (status = 413, body = ErrorBody), (status = 415, body = ErrorBody),
        (status = 502, description = "GitHub failed", body = ErrorBody),
        (status = 503, description = "The store or a provider does not answer; retry later", body = ErrorBody),
    ))]
pub(crate) async fn plan(
    State(state): State<Arc<AppState>>,
    Body(request): Body<DecommissionRequest>,
) -> Result<Json<DecommissionPlanResponse>, ApiError> {
    let options = options(
        request.entity.as_deref(),
        request.scale_set.as_deref(),
        request.wait_seconds,
        request.force_busy,
        request.include_adopted,
    )?;
    let decommission = open(&state).await?;
    let plan = decommission.plan(&options).await.map_err(ApiError::from)?;
    Ok(Json(DecommissionPlanResponse {
        digest: plan.digest.to_string(),
        steps: plan.items.iter().map(step).collect(),
    }))
}

/// Applies the decommission plan whose digest is given, if planning now gives it: stops
/// serving the scale sets that go (this server's worker lets them go), then retires idle
/// runners, waits for busy ones up to `wait_seconds` (the request lasts that long), deletes
/// instances, scale sets, sessions and records, in that order.
#[utoipa::path(post, path = "/api/v1/decommission/apply", tag = "decommission",
    operation_id = "apply_decommission",
    request_body = DecommissionApplyRequest,
    responses(
        (status = 200, description = "Applied: what was done and what was left", body = DecommissionApplyResponse),
        (status = 400, description = "The body, the scope or the digest is invalid", body = ErrorBody),
        (status = 401, description = "No or an invalid token", body = ErrorBody),
        (status = 409, description = "stale_plan (the world changed since the plan), no_providers (no worker here), or lease_held (another worker serves a scale set)", body = ErrorBody),
        (status = 413, body = ErrorBody), (status = 415, body = ErrorBody),
        (status = 502, description = "GitHub failed", body = ErrorBody),
        (status = 503, description = "The store or a provider does not answer; retry later", body = ErrorBody),
    ))]
pub(crate) async fn apply(
    State(state): State<Arc<AppState>>,
    Body(request): Body<DecommissionApplyRequest>,
) -> Result<Json<DecommissionApplyResponse>, ApiError> {
    let digest = PlanDigest::parse(&request.digest).ok_or_else(|| ApiError::InvalidInput {
        field: "digest".to_owned(),
        reason: "not a plan digest (64 lowercase hex digits, as the decommission plan prints)"
            .to_owned(),
    })?;
    let options = options(
        request.entity.as_deref(),
        request.scale_set.as_deref(),
        request.wait_seconds,
        request.force_busy,
        request.include_adopted,
    )?;
    let decommission = open(&state).await?;
    // A client that goes away does not stop the apply half-way: the steps run to their end.
    let report = decommission
        .apply(&options, &digest, &CancellationToken::new())
        .await
        .map_err(ApiError::from)?;
    let outcome = |(item, outcome): &(DecommissionItem, String)| DecommissionOutcome {
        step: step(item),
        outcome: outcome.clone(),
    };
    let busy_left = report.left.iter().any(|(item, _)| {
        matches!(
            item.why,
            DecommissionWhy::Busy | DecommissionWhy::StillBusy | DecommissionWhy::HasBusyRunners
        )
    });
    Ok(Json(DecommissionApplyResponse {
        done: report.done.iter().map(outcome).collect(),
        left: report.left.iter().map(outcome).collect(),
        busy_left,
    }))
}

fn options(
    entity: Option<&str>,
    scale_set: Option<&str>,
    wait_seconds: u64,
    force_busy: bool,
    include_adopted: bool,
) -> Result<DecommissionOptions, ApiError> {
    let scope = scaleset_fleet::parse_scope(entity, scale_set)?;
    Ok(DecommissionOptions {
        scope,
        include_adopted,
        force_busy,
        wait: Duration::from_secs(wait_seconds),
    })
}

async fn open(state: &AppState) -> Result<Decommission, ApiError> {
    let Some(source) = &state.decommission else {
        return Err(ApiError::NoProviders);
    };
    Ok(source.open().await?)
}

fn step(item: &DecommissionItem) -> DecommissionStep {
    let kind = match &item.subject {
        DecommissionSubject::Runner { .. } => "runner",
        DecommissionSubject::Instance { .. } => "instance",
        DecommissionSubject::ScaleSet { .. } => "scale_set",
        DecommissionSubject::Session { .. } => "session",
        DecommissionSubject::Record { .. } => "record",
    };
    DecommissionStep {
        act: act(item.act).to_owned(),
        kind: kind.to_owned(),
        subject: item.subject.to_string(),
        reason_code: item.why.code().to_owned(),
        reason: item.why.to_string(),
    }
}

fn act(act: DecommissionAct) -> &'static str {
    act.as_str()
}
