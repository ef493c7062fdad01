//! `POST /api/v1/plan` and `POST /api/v1/apply`: the declared fleet through the control
//! crate's plan/apply ([`scaleset_fleet::plan_fleet`], [`scaleset_fleet::apply_fleet`]),
//! the same code the worker's start-up apply runs. Plan writes nothing (it asks GitHub about
//! declared scale sets the store does not hold, to preview create / adopt / refuse); apply
//! re-plans and answers `409 stale_plan` unless the digest is the reviewed one.

use std::collections::BTreeSet;
use std::sync::Arc;

use axum::extract::State;
use axum::routing::post;
use axum::{Json, Router};
use scaleset_fleet::{Action, Fleet, FleetPlan, GitHubLookup, PlanDigest, Reason};

use crate::error::ApiError;
use crate::extract::Body;
use crate::state::AppState;
use crate::v1::{
    ApplyRequest, ApplyResponse, ErrorBody, FieldChange, PlanAction, PlanRequest, PlanResponse,
    PlannedCredentials, PlannedEntity, PlannedScaleSet,
};

pub(crate) fn routes() -> Router<Arc<AppState>> {
    Router::new()
        .route("/plan", post(plan))
        .route("/apply", post(apply))
}

/// What applying a fleet would do; writes nothing.
#[utoipa::path(post, path = "/api/v1/plan", tag = "fleet",
    operation_id = "plan_fleet", request_body = PlanRequest,
    responses(
        (status = 200, description = "What applying the fleet would change, and the plan's digest; nothing is written", body = PlanResponse),
        (status = 400, description = "The body or the fleet text is invalid (every problem named)", body = ErrorBody),
        (status = 401, description = "No or an invalid token", body = ErrorBody),
        (status = 413, body = ErrorBody), (status = 415, body = ErrorBody),
        (status = 502, description = "GitHub failed", body = ErrorBody),
        (status = 503, description = "The store does not answer; retry later", body = ErrorBody),
    ))]
pub(crate) async fn plan(
    State(state): State<Arc<AppState>>,
    Body(request): Body<PlanRequest>,
) -> Result<Json<PlanResponse>, ApiError> {
    let fleet = parse(&state, &request.fleet).await?;
    let plan = scaleset_fleet::plan_fleet(
        state.store.as_ref(),
        &GitHubLookup::new().with_observer(state.metrics.clone()),
        &state.identity,
        &fleet,
        &state.configured_keys(),
        request.prune,
    )
    .await
    .map_err(ApiError::from)?;
    Ok(Json(view(&plan)))
}

/// Applies a fleet if planning it now gives the reviewed digest.
#[utoipa::path(post, path = "/api/v1/apply", tag = "fleet",
    operation_id = "apply_fleet", request_body = ApplyRequest,
    responses(
        (status = 200, description = "Applied (writes 0: the plan was unchanged)", body = ApplyResponse),
        (status = 400, description = "The body, the fleet text or the digest is invalid", body = ErrorBody),
        (status = 401, description = "No or an invalid token", body = ErrorBody),
        (status = 409, description = "stale_plan: the world changed since the plan", body = ErrorBody),
        (status = 413, body = ErrorBody), (status = 415, body = ErrorBody),
        (status = 502, description = "GitHub failed", body = ErrorBody),
        (status = 503, description = "The store does not answer; retry later", body = ErrorBody),
    ))]
pub(crate) async fn apply(
    State(state): State<Arc<AppState>>,
    Body(request): Body<ApplyRequest>,
) -> Result<Json<ApplyResponse>, ApiError> {
    let digest = PlanDigest::parse(&request.digest).ok_or_else(|| ApiError::InvalidInput {
        field: "digest".to_owned(),
        reason: "not a plan digest (64 lowercase hex digits, as scalesetctl plan prints)"
            .to_owned(),
    })?;
    let fleet = parse(&state, &request.fleet).await?;
    let applied = scaleset_fleet::apply_fleet(
        state.store.as_ref(),
        &GitHubLookup::new().with_observer(state.metrics.clone()),
        &state.identity,
        &fleet,
        &state.configured_keys(),
        request.prune,
        &digest,
    )
    .await
    .map_err(ApiError::from)?;
    Ok(Json(ApplyResponse {
        plan: view(&applied.plan),
        writes: applied.writes as u64,
        created: applied.created.iter().map(|id| id.0).collect(),
    }))
}

/// The fleet text, with scale sets naming stored credentials. A request's fleet may not
/// declare `[[credentials]]`: the server reads no secret from its environment or files for a
/// caller (a `token_file` could otherwise send any file of the server to any `base_url`).
async fn parse(state: &AppState, text: &str) -> Result<Fleet, ApiError> {
    let stored: BTreeSet<String> = state
        .store
        .list_credentials()
        .await
        .map_err(ApiError::store("listing credentials", || {
            "credentials".to_owned()
        }))?
        .into_iter()
        .map(|c| c.name)
        .collect();
    scaleset_config::parse_fleet(
        "the request's fleet",
        text,
        None,
        &stored,
        Some(&state.providers),
    )
    .map_err(|e| ApiError::InvalidInput {
        field: "fleet".to_owned(),
        reason: e
            .problems
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("; "),
    })
}

fn changes(changes: &[scaleset_fleet::Change]) -> Vec<FieldChange> {
    changes
        .iter()
        .map(|c| FieldChange {
            field: c.field.to_owned(),
            from: c.from.clone(),
            to: c.to.clone(),
        })
        .collect()
}

fn action(action: Action) -> PlanAction {
    match action {
        Action::Create => PlanAction::Create,
        Action::Adopt => PlanAction::Adopt,
        Action::Update => PlanAction::Update,
        Action::Detach => PlanAction::Detach,
        Action::Refuse => PlanAction::Refuse,
        Action::Unchanged => PlanAction::Unchanged,
    }
}

pub(crate) fn view(plan: &FleetPlan) -> PlanResponse {
    PlanResponse {
        digest: plan.digest.to_string(),
        has_changes: !plan.is_noop(),
        has_refusals: plan.count(Action::Refuse) > 0,
        prune: plan.prune,
        credentials: plan
            .credentials
            .iter()
            .map(|c| PlannedCredentials {
                name: c.name.clone(),
                action: c.action.as_str().to_owned(),
                id: c.existing.map(|id| id.0),
                changes: changes(&c.changes),
            })
            .collect(),
        entities: plan
            .entities
            .iter()
            .map(|e| PlannedEntity {
                entity: e.kind.to_string(),
                credentials: e.credentials.clone(),
                action: if e.existing.is_some() {
                    "unchanged"
                } else {
                    "create"
                }
                .to_owned(),
                id: e.existing.map(|id| id.0),
            })
            .collect(),
        scale_sets: plan
            .scale_sets
            .iter()
            .map(|s| PlannedScaleSet {
                name: s.key.name.clone(),
                runner_group: s.key.runner_group.clone(),
                entity: s.key.entity.to_string(),
                credentials: s.credentials.clone(),
                action: action(s.action),
                reason_code: s.reason.code().to_owned(),
                reason: s.reason.to_string(),
                id: s.existing.map(|id| id.0),
                changes: changes(&s.changes),
                imported_from: match &s.reason {
                    Reason::Adoptable { imported_from, .. } => imported_from.clone(),
                    _ => None,
                },
            })
            .collect(),
    }
}
