//! `/api/v1/scale-sets`: create (stored, then ensured on GitHub at once through the control
//! crate's ensure step, answered with state, provenance, evidence and events), list, show,
//! update at a generation, and the ownership-aware delete.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::get;
use axum::{Json, Router};
use scaleset_control::Deletion;
use scaleset_store::{
    Acquisition, EntityId, NewScaleSet, RunnerGroup, ScaleSet as StoredScaleSet, ScaleSetId,
    ScaleSetSpec as StoredSpec, ScaleSetState,
};
use serde::Deserialize;

use crate::error::{ApiError, chain};
use crate::extract::{Body, Params, parse_id};
use crate::state::AppState;
use crate::v1::{
    CreateScaleSet, DeleteAction, DeleteScaleSetResult, ErrorBody, ScaleSet, ScaleSetList,
    UpdateScaleSet,
};
use crate::{validate, view};

pub(crate) fn routes() -> Router<Arc<AppState>> {
    Router::new()
        .route("/scale-sets", get(list).post(create))
        .route("/scale-sets/{id}", get(show).patch(update).delete(delete))
}

const MAX_LABELS: usize = 50;
const MAX_RUNNERS: u32 = 10_000;
const MAX_BOOTSTRAP_SECS: u64 = 86_400;
const DEFAULT_BOOTSTRAP_SECS: u64 = 600;

/// Checks a spec as a whole (every field the create and the update can set).
fn check_spec(spec: &StoredSpec) -> Result<(), ApiError> {
    validate::name("name", &spec.name, 100)?;
    scaleset_control::validate_scale_set_name(&spec.name).map_err(|e| ApiError::InvalidInput {
        field: "name".to_owned(),
        reason: e.to_string(),
    })?;
    validate::text("runner_group", &spec.runner_group.name, 100)?;
    if spec.labels.len() > MAX_LABELS {
        return Err(ApiError::InvalidInput {
            field: "labels".to_owned(),
            reason: format!("{} labels; at most {MAX_LABELS}", spec.labels.len()),
        });
    }
    for (i, label) in spec.labels.iter().enumerate() {
        let field = format!("labels[{i}]");
        validate::text(&field, label, 100)?;
        if label.to_ascii_lowercase().starts_with("scaleset-owner-") {
            return Err(ApiError::InvalidInput {
                field,
                reason: "owner labels are added by the controller; remove it".to_owned(),
            });
        }
    }
    validate::name("provider", &spec.provider, 64)?;
    validate::range("max_runners", spec.max_runners, 1, MAX_RUNNERS)?;
    validate::range("min_idle", spec.min_idle, 0, spec.max_runners)?;
    validate::range(
        "bootstrap_timeout_secs",
        spec.bootstrap_timeout.as_secs(),
        1,
        MAX_BOOTSTRAP_SECS,
    )?;
    if !spec.runner_prefix.is_empty() {
        validate::name("runner_prefix", &spec.runner_prefix, 40)?;
    }
    if spec.image.chars().count() > 1000 || spec.image.chars().any(char::is_control) {
        return Err(ApiError::InvalidInput {
            field: "image".to_owned(),
            reason: "at most 1000 characters, no control characters".to_owned(),
        });
    }
    if spec.flavor.chars().count() > 1000 || spec.flavor.chars().any(char::is_control) {
        return Err(ApiError::InvalidInput {
            field: "flavor".to_owned(),
            reason: "at most 1000 characters, no control characters".to_owned(),
        });
    }
    // null is "none": a scale set declared in a fleet file without extra specs is stored so,
    // and must stay updatable through the API.
    if !(spec.extra_specs.is_object() || spec.extra_specs.is_null()) {
        return Err(ApiError::InvalidInput {
            field: "extra_specs".to_owned(),
            reason: "must be a JSON object (or null for none)".to_owned(),
        });
    }
    Ok(())
}

fn spec_of(input: &CreateScaleSet) -> StoredSpec {
    StoredSpec {
        name: input.name.clone(),
        runner_group: RunnerGroup {
            name: input
                .runner_group
                .clone()
                .unwrap_or_else(|| "Default".to_owned()),
            id: None,
        },
        labels: input.labels.clone(),
        disable_update: input.disable_update,
        provider: input.provider.clone(),
        image: input.image.clone(),
        flavor: input.flavor.clone(),
        min_idle: input.min_idle,
        max_runners: input.max_runners,
        bootstrap_timeout: Duration::from_secs(
            input
                .bootstrap_timeout_secs
                .unwrap_or(DEFAULT_BOOTSTRAP_SECS),
        ),
        runner_prefix: input.runner_prefix.clone(),
        extra_specs: input
            .extra_specs
            .clone()
            .unwrap_or_else(|| serde_json::Value::Object(serde_json::Map::new())),
        enabled: input.enabled.unwrap_or(true),
        adoption_policy: view::policy_to_store(input.adoption_policy),
        repair: input.repair,
    }
}

fn not_found(id: ScaleSetId) -> impl FnOnce() -> String {
    move || format!("scale set {id}")
}

/// The error of a write that carried generation `given`: stale when another write came first
/// (the stored generation then is at least `given + 1`), otherwise the store's error.
fn write_failed(
    id: ScaleSetId,
    given: i64,
    during: &'static str,
) -> impl FnOnce(scaleset_store::Error) -> ApiError {
    move |e| {
        if e.is_stale() {
            ApiError::StaleGeneration {
                id: id.to_string(),
                given,
                current: given + 1,
            }
        } else {
            ApiError::store(during, not_found(id))(e)
        }
    }
}

async fn read(state: &AppState, id: ScaleSetId) -> Result<StoredScaleSet, ApiError> {
    state
        .store
        .get_scale_set(id)
        .await
        .map_err(ApiError::store("reading a scale set", not_found(id)))
}

async fn with_events(state: &AppState, scale_set: &StoredScaleSet) -> Result<ScaleSet, ApiError> {
    let events = state
        .store
        .list_events(scale_set.id, state.limits.events_shown)
        .await
        .map_err(ApiError::store("reading events", not_found(scale_set.id)))?;
    Ok(view::scale_set(scale_set, &events))
}

/// Stores a scale set and ensures it on GitHub at once: created, adopted on evidence or
/// policy, or refused with the reason and what to do. The answer is 201 whatever the outcome
/// (the scale set is stored either way, and the worker keeps re-checking a refused one); its
/// `state` says which, and a refusal carries `refusal`.
#[utoipa::path(post, path = "/api/v1/scale-sets", tag = "scale-sets",
    request_body = CreateScaleSet,
    responses(
        (status = 201, description = "Stored and ensured: see state (ready, refused, error, pending)", body = ScaleSet),
        (status = 400, description = "Invalid body or value", body = ErrorBody),
        (status = 401, body = ErrorBody),
        (status = 404, description = "No such entity", body = ErrorBody),
        (status = 409, description = "A scale set of that name is already stored in that entity and runner group", body = ErrorBody),
        (status = 413, body = ErrorBody), (status = 415, body = ErrorBody),
    ))]
pub(crate) async fn create(
    State(state): State<Arc<AppState>>,
    Body(input): Body<CreateScaleSet>,
) -> Result<(StatusCode, Json<ScaleSet>), ApiError> {
    let spec = spec_of(&input);
    check_spec(&spec)?;
    let entity_id = EntityId(input.entity_id);
    state
        .store
        .get_entity(entity_id)
        .await
        .map_err(ApiError::store("reading the entity", || {
            format!("entity {entity_id}")
        }))?;
    let what = format!(
        "scale set {:?} in runner group {:?} of entity {entity_id}",
        spec.name, spec.runner_group.name
    );
    // Stored disabled while the API ensures it under the lease, so a worker does not find it
    // enabled, meet the API's lease and back off for half a lease time; enabled right after.
    let enabled = spec.enabled;
    let mut spec = spec;
    spec.enabled = false;
    let stored = state
        .store
        .create_scale_set(NewScaleSet { entity_id, spec })
        .await
        .map_err(ApiError::store("creating a scale set", || what))?;
    let id = stored.id;
    // The row says how it ended: state, reason, provenance, evidence and the typed refusal.
    if let Err(error) = state.ensure.run(id, &state.api_holder).await {
        // Stored, not ensured: shown as an error with its cause; the worker retries it.
        record_error(&state, id, &chain(&error)).await?;
    }
    let ensured = set_enabled(&state, id, enabled).await?;
    let answer = with_events(&state, &ensured).await?;
    Ok((StatusCode::CREATED, Json(answer)))
}

/// Sets `enabled` on a scale set (re-reading on a concurrent write).
async fn set_enabled(
    state: &AppState,
    id: ScaleSetId,
    enabled: bool,
) -> Result<StoredScaleSet, ApiError> {
    let mut tries = 0;
    loop {
        tries += 1;
        let mut scale_set = read(state, id).await?;
        if scale_set.spec.enabled == enabled {
            return Ok(scale_set);
        }
        scale_set.spec.enabled = enabled;
        match state.store.update_scale_set(&scale_set).await {
            Ok(updated) => return Ok(updated),
            Err(e) if e.is_stale() && tries < 5 => {}
            Err(e) => return Err(ApiError::store("enabling the scale set", not_found(id))(e)),
        }
    }
}

/// Records an ensure failure on a scale set (state `error`, the reason, an event).
async fn record_error(state: &AppState, id: ScaleSetId, reason: &str) -> Result<(), ApiError> {
    for _ in 0..5 {
        let mut scale_set = read(state, id).await?;
        if scale_set.state == ScaleSetState::Pending {
            scale_set.state = ScaleSetState::Error;
        }
        scale_set.state_reason = format!("ensure failed: {reason}");
        match state.store.update_scale_set(&scale_set).await {
            Ok(_) => break,
            Err(e) if e.is_stale() => {}
            Err(e) => {
                return Err(ApiError::store(
                    "recording the ensure failure",
                    not_found(id),
                )(e));
            }
        }
    }
    state
        .store
        .append_event(id, "error", &format!("ensure failed: {reason}"))
        .await
        .map_err(ApiError::store("appending an event", not_found(id)))?;
    Ok(())
}

/// Query of the scale-set list.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
pub(crate) struct ListQuery {
    /// Only this entity's scale sets.
    entity_id: Option<uuid::Uuid>,
}

/// Every scale set (or one entity's), with state and reason; events only on show.
#[utoipa::path(get, path = "/api/v1/scale-sets", tag = "scale-sets",
    params(ListQuery),
    responses((status = 200, body = ScaleSetList), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody)))]
pub(crate) async fn list(
    State(state): State<Arc<AppState>>,
    Params(query): Params<ListQuery>,
) -> Result<Json<ScaleSetList>, ApiError> {
    let all = state
        .store
        .list_scale_sets(query.entity_id.map(EntityId))
        .await
        .map_err(ApiError::store("listing scale sets", || {
            "scale sets".to_owned()
        }))?;
    let mut items: Vec<ScaleSet> = all.iter().map(|s| view::scale_set(s, &[])).collect();
    items.sort_by(|a, b| {
        (&a.spec.name, &a.spec.runner_group, a.id).cmp(&(&b.spec.name, &b.spec.runner_group, b.id))
    });
    Ok(Json(ScaleSetList { items }))
}

/// One scale set with its newest events.
#[utoipa::path(get, path = "/api/v1/scale-sets/{id}", tag = "scale-sets",
    params(("id" = uuid::Uuid, Path, description = "The scale set's id")),
    responses((status = 200, body = ScaleSet), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub(crate) async fn show(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
) -> Result<Json<ScaleSet>, ApiError> {
    let id = ScaleSetId(parse_id(&id, "scale set")?);
    let scale_set = read(&state, id).await?;
    Ok(Json(with_events(&state, &scale_set).await?))
}

/// Changes a scale set's spec, if `generation` is still the stored one. The worker picks the
/// change up on its next watch (a changed spec restarts the scale set's task, which re-ensures
/// it and PATCHes labels and settings on GitHub).
#[utoipa::path(patch, path = "/api/v1/scale-sets/{id}", tag = "scale-sets",
    params(("id" = uuid::Uuid, Path, description = "The scale set's id")),
    request_body = UpdateScaleSet,
    responses(
        (status = 200, body = ScaleSet),
        (status = 400, body = ErrorBody), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody),
        (status = 409, description = "stale_generation: changed since read", body = ErrorBody),
        (status = 413, body = ErrorBody), (status = 415, body = ErrorBody),
    ))]
pub(crate) async fn update(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
    Body(change): Body<UpdateScaleSet>,
) -> Result<Json<ScaleSet>, ApiError> {
    let id = ScaleSetId(parse_id(&id, "scale set")?);
    let mut scale_set = read(&state, id).await?;
    if scale_set.generation != change.generation {
        return Err(ApiError::StaleGeneration {
            id: id.to_string(),
            given: change.generation,
            current: scale_set.generation,
        });
    }
    let spec = &mut scale_set.spec;
    replace(&mut spec.labels, change.labels);
    replace(&mut spec.disable_update, change.disable_update);
    replace(&mut spec.provider, change.provider);
    replace(&mut spec.image, change.image);
    replace(&mut spec.flavor, change.flavor);
    replace(&mut spec.min_idle, change.min_idle);
    replace(&mut spec.max_runners, change.max_runners);
    replace(
        &mut spec.bootstrap_timeout,
        change.bootstrap_timeout_secs.map(Duration::from_secs),
    );
    replace(&mut spec.runner_prefix, change.runner_prefix);
    replace(&mut spec.extra_specs, change.extra_specs);
    replace(&mut spec.enabled, change.enabled);
    replace(
        &mut spec.adoption_policy,
        change.adoption_policy.map(view::policy_to_store),
    );
    replace(&mut spec.repair, change.repair);
    check_spec(&scale_set.spec)?;
    let updated = state
        .store
        .update_scale_set(&scale_set)
        .await
        .map_err(write_failed(id, change.generation, "updating a scale set"))?;
    state
        .store
        .append_event(id, "updated", "spec updated through the API")
        .await
        .map_err(ApiError::store("appending an event", not_found(id)))?;
    Ok(Json(with_events(&state, &updated).await?))
}

/// Query of the delete.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
pub(crate) struct DeleteQuery {
    /// Also delete an adopted or known scale set on GitHub (default false: detach only).
    #[serde(default)]
    force: bool,
    /// Delete only at this generation (default: whatever is stored).
    generation: Option<i64>,
}

/// Deletes a scale set, by ownership, as the control crate decides from the stored
/// provenance: one this controller **created** is deleted on GitHub (after it was drained: no
/// instances recorded), one **adopted** or **known** is only detached (the record removed,
/// GitHub untouched) unless `force=true`; one never ensured is only removed. The answer's
/// `reason` says which and why. A worker serving it must let it go first (disable it): 409 `lease_held`.
#[utoipa::path(delete, path = "/api/v1/scale-sets/{id}", tag = "scale-sets",
    params(("id" = uuid::Uuid, Path, description = "The scale set's id"), DeleteQuery),
    responses(
        (status = 200, body = DeleteScaleSetResult),
        (status = 400, body = ErrorBody), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody),
        (status = 409, description = "stale_generation, not_drained (instances left) or lease_held (a worker serves it)", body = ErrorBody),
        (status = 502, description = "GitHub refused or failed the delete; the scale set is left disabled, retry the delete", body = ErrorBody),
    ))]
pub(crate) async fn delete(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
    Params(query): Params<DeleteQuery>,
) -> Result<Json<DeleteScaleSetResult>, ApiError> {
    let id = ScaleSetId(parse_id(&id, "scale set")?);
    let scale_set = read(&state, id).await?;
    if let Some(given) = query.generation
        && given != scale_set.generation
    {
        return Err(ApiError::StaleGeneration {
            id: id.to_string(),
            given,
            current: scale_set.generation,
        });
    }
    // Whether GitHub's scale set goes too is the control crate's decision, from the stored
    // provenance (a record of creation, or force).
    let deletion = scaleset_control::plan_deletion(&scale_set, query.force);
    let instances = state
        .store
        .list_instances(id)
        .await
        .map_err(ApiError::store("listing instances", not_found(id)))?;
    if !instances.is_empty() {
        return Err(ApiError::NotDrained {
            id: id.to_string(),
            instances: instances.len(),
        });
    }
    let lease = match state
        .store
        .acquire_lease(id, &state.api_holder, state.lease_ttl())
        .await
        .map_err(ApiError::store(
            "taking the scale set's lease",
            not_found(id),
        ))? {
        Acquisition::Acquired(lease) => lease,
        Acquisition::Held { holder, .. } => {
            return Err(ApiError::LeaseHeld {
                id: id.to_string(),
                holder,
            });
        }
        _ => {
            return Err(ApiError::LeaseHeld {
                id: id.to_string(),
                holder: "unknown".to_owned(),
            });
        }
    };
    let result = delete_held(&state, &scale_set, &deletion).await;
    if result.is_err() {
        let _ = state.store.release_lease(&lease).await;
    }
    result.map(Json)
}

async fn delete_held(
    state: &AppState,
    scale_set: &StoredScaleSet,
    deletion: &Deletion,
) -> Result<DeleteScaleSetResult, ApiError> {
    let id = scale_set.id;
    let mut scale_set = scale_set.clone();
    if let Deletion::OnGitHub(github) = deletion {
        // Disabled first, so that if the row cannot be removed after GitHub's delete, nothing
        // ensures (re-creates) it meanwhile.
        if scale_set.spec.enabled {
            scale_set.spec.enabled = false;
            scale_set = state
                .store
                .update_scale_set(&scale_set)
                .await
                .map_err(write_failed(
                    id,
                    scale_set.generation,
                    "disabling a scale set",
                ))?;
        }
        scaleset_control::delete_on_github(state.clients.as_ref(), &scale_set, github)
            .await
            .map_err(|e| ApiError::GitHub {
                during: "deleting the scale set on GitHub",
                reason: chain(&e),
            })?;
    }
    state
        .store
        .delete_scale_set(id, scale_set.generation)
        .await
        .map_err(|e| {
            if e.is_conflict() {
                ApiError::NotDrained {
                    id: id.to_string(),
                    instances: 1,
                }
            } else {
                write_failed(id, scale_set.generation, "deleting a scale set")(e)
            }
        })?;
    tracing::info!(scale_set = %id, github_id = ?scale_set.github_id, deleted_on_github = deletion.deletes_on_github(), %deletion, "scale set deleted");
    Ok(DeleteScaleSetResult {
        id: id.0,
        action: if deletion.deletes_on_github() {
            DeleteAction::DeletedOnGitHub
        } else {
            DeleteAction::Detached
        },
        github_id: scale_set.github_id,
        provenance: scale_set.provenance.as_ref().map(view::provenance),
        reason: deletion.to_string(),
    })
}

/// A patch field: `Some` replaces the stored value, `None` (absent from the request) keeps it.
fn replace<T>(field: &mut T, value: Option<T>) {
    if let Some(value) = value {
        *field = value;
    }
}
