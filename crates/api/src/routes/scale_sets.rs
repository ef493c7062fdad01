//! `/api/v1/scale-sets`: create (stored and answered at once, `pending`; the worker ensures
//! it on GitHub), list, show, update at a generation, drain (stop serving; the worker retires
//! idle runners and lets busy ones finish), and the ownership-aware delete.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Json, Router};
use scaleset_fleet::{Deletion, ScaleSetKey};
use scaleset_store::{
    Acquisition, EntityId, EntityKind, InstanceStatus, LeaseRecord, NewScaleSet, RawScaleSetSpec,
    ReasonCode, ScaleSet as StoredScaleSet, ScaleSetId, ScaleSetSpec as StoredSpec, ScaleSetState,
    Timestamp,
};
use serde::Deserialize;

use crate::error::ApiError;
use crate::extract::{Body, Params, parse_id};
use crate::page::page;
use crate::state::AppState;
use crate::v1::{
    CreateScaleSet, DeleteAction, DeleteScaleSetResult, DrainScaleSetResult, ErrorBody,
    OursUndeclared, OursUndeclaredList, RetryScaleSetResult, ScaleSet, ScaleSetList,
    UnlistedEntity, UpdateScaleSet,
};
use crate::{validate, view};

pub(crate) fn routes() -> Router<Arc<AppState>> {
    Router::new()
        .route("/scale-sets", get(list).post(create))
        .route("/scale-sets/{id}", get(show).patch(update).delete(delete))
        .route("/scale-sets/{id}/drain", post(drain))
        .route("/scale-sets/{id}/retry", post(retry))
        .route("/github/ours-undeclared", get(ours_undeclared))
}

/// A spec parsed by the one spec parser ([`StoredSpec::parse`]), its provider checked against
/// the server's when `check_provider` (a create, or an update that changes it: an update of
/// another field must still work on a scale set whose provider was configured away).
fn parsed(
    state: &AppState,
    raw: RawScaleSetSpec,
    check_provider: bool,
) -> Result<StoredSpec, ApiError> {
    let spec = StoredSpec::parse(raw).map_err(validate::spec_problems)?;
    if check_provider
        && let Some(problem) = spec.unknown_provider(state.providers.iter().map(String::as_str))
    {
        return Err(validate::spec_problems(vec![problem]));
    }
    Ok(spec)
}

/// The create's fields as the parser takes them (only this door's syntax: seconds, the wire
/// policy).
fn raw_of(input: &CreateScaleSet) -> RawScaleSetSpec {
    RawScaleSetSpec {
        name: Some(input.name.clone()),
        runner_group: input.runner_group.clone(),
        labels: input.labels.clone(),
        disable_update: Some(input.disable_update),
        provider: Some(input.provider.clone()),
        image: Some(input.image.clone()),
        flavor: Some(input.flavor.clone()),
        os_type: input.os_type.clone(),
        os_arch: input.os_arch.clone(),
        runner_setup: scaleset_store::RunnerSetup {
            http_proxy: input.http_proxy.clone(),
            https_proxy: input.https_proxy.clone(),
            no_proxy: input.no_proxy.clone(),
            ssh_keys: input.ssh_keys.clone(),
            extra_packages: input.extra_packages.clone(),
            disable_updates_on_boot: input.disable_updates_on_boot,
            enable_boot_debug: input.enable_boot_debug,
            runner_install_template: input.runner_install_template.clone(),
        },
        min_idle: Some(i64::from(input.min_idle)),
        max_runners: Some(i64::from(input.max_runners)),
        bootstrap_timeout: input.bootstrap_timeout_secs.map(Duration::from_secs),
        scale_down_delay: input.scale_down_delay_secs.map(Duration::from_secs),
        max_idle_lifetime: input.max_idle_lifetime_secs.map(Duration::from_secs),
        max_lifetime: input.max_lifetime_secs.map(Duration::from_secs),
        runner_prefix: Some(input.runner_prefix.clone()),
        extra_specs: input.extra_specs.clone(),
        enabled: input.enabled,
        adoption_policy: Some(view::policy_to_store(input.adoption_policy)),
        repair: Some(input.repair),
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
    let mut shown = view::scale_set(scale_set, &events);
    let key = key_of(state, scale_set).await?;
    let tools = state
        .store
        .runner_downloads(scale_set.entity_id)
        .await
        .map_err(ApiError::store(
            "reading the entity's runner downloads",
            not_found(scale_set.id),
        ))?;
    shown.declared = state.configured.declared(&key).is_some();
    let lease = state
        .store
        .get_lease(scale_set.id)
        .await
        .map_err(ApiError::store(
            "reading the scale set's lease",
            not_found(scale_set.id),
        ))?;
    shown.served_by = state.served_by(scale_set.id, scale_set.spec.enabled(), lease.as_ref());
    (shown.runner_tool, shown.warnings) =
        view::runner_tool(&scale_set.spec, &key.entity, tools.as_ref(), shown.declared);
    Ok(shown)
}

/// Stores a scale set as asked and answers at once, `pending`: the worker's task for it
/// ensures it on GitHub (created, adopted on evidence or policy, or refused with the reason
/// and what to do) and records the outcome with an event. No GitHub call is made in the
/// request, so a GitHub that hangs cannot hold it (issue 29 item 7); a scale set stored
/// disabled is not ensured until it is enabled, and its reason says so.
#[utoipa::path(post, path = "/api/v1/scale-sets", tag = "scale-sets",
    operation_id = "create_scale_set",
    request_body = CreateScaleSet,
    responses(
        (status = 201, description = "Stored, state pending: the worker ensures it on GitHub (watch state, state_reason and events)", body = ScaleSet),
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
    let spec = parsed(&state, raw_of(&input), true)?;
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
        spec.name(),
        spec.runner_group().name
    );
    let reason = pending_reason(spec.enabled(), spec.name().as_str());
    let stored = state
        .store
        .create_scale_set(NewScaleSet { entity_id, spec })
        .await
        .map_err(ApiError::store("creating a scale set", || what))?;
    let id = stored.id;
    // The event first: it marks the record as this create's, so a worker never mistakes it
    // for one an interrupted older server left behind.
    state
        .store
        .append_event(id, ReasonCode::CreatedByOperator, &reason)
        .await
        .map_err(ApiError::store("appending an event", not_found(id)))?;
    let stored = set_pending_reason(&state, stored.id, &reason).await?;
    Ok((
        StatusCode::CREATED,
        Json(with_events(&state, &stored).await?),
    ))
}

/// What a just-stored scale set waits for.
fn pending_reason(enabled: bool, name: &str) -> String {
    if enabled {
        "stored; a worker creates it on GitHub shortly (or adopts a scale set of the same \
         name there, if it is provably ours), and this reason then says which"
            .to_owned()
    } else {
        format!(
            "stored disabled: nothing is created on GitHub until it is enabled \
             (scalesetctl scale-set update {name} --enabled true)"
        )
    }
}

/// Writes `reason` on a just-stored scale set, unless a worker has written its state first.
async fn set_pending_reason(
    state: &AppState,
    id: ScaleSetId,
    reason: &str,
) -> Result<StoredScaleSet, ApiError> {
    let written = state
        .store
        .modify_scale_set(id, &mut |scale_set| {
            if scale_set.state == ScaleSetState::Pending && scale_set.state_reason.is_empty() {
                scale_set.state_reason = reason.to_owned();
            }
        })
        .await;
    match written {
        Ok(scale_set) => Ok(scale_set),
        // Workers kept writing first: theirs is the newer word.
        Err(e) if e.is_stale() => read(state, id).await,
        Err(e) => Err(ApiError::store("recording the reason", not_found(id))(e)),
    }
}

/// Sets `enabled` on a scale set (re-reading on a concurrent write, such as a worker
/// recording its state).
async fn set_enabled(
    state: &AppState,
    id: ScaleSetId,
    enabled: bool,
) -> Result<StoredScaleSet, ApiError> {
    state
        .store
        .modify_scale_set(id, &mut |scale_set| scale_set.spec.set_enabled(enabled))
        .await
        .map_err(ApiError::store("disabling the scale set", not_found(id)))
}

/// Query of the scale-set list.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub(crate) struct ListQuery {
    /// Only this entity's scale sets.
    entity_id: Option<uuid::Uuid>,
    /// How many scale sets at most: 1 to 1000, 500 when absent.
    #[param(minimum = 1, maximum = 1000)]
    limit: Option<u32>,
    /// The `next_cursor` of the previous page, as it was answered; absent for the first page.
    cursor: Option<String>,
}

/// The scale sets (or one entity's), one page at a time, with state and reason; events only on
/// show.
#[utoipa::path(get, path = "/api/v1/scale-sets", tag = "scale-sets",
    operation_id = "list_scale_sets",
    params(ListQuery),
    responses((status = 200, description = "One page of scale sets, by name then runner group (`next_cursor` is null on the last page)", body = ScaleSetList), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody)))]
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
    let entities: HashMap<EntityId, EntityKind> = state
        .store
        .list_entities()
        .await
        .map_err(ApiError::store("listing entities", || {
            "entities".to_owned()
        }))?
        .into_iter()
        .map(|e| (e.id, e.kind))
        .collect();
    // Every lease row in one read (not one per scale set: 10,000 reads for a fleet that size).
    let leases: HashMap<ScaleSetId, LeaseRecord> = state
        .store
        .leases()
        .await
        .map_err(ApiError::store("listing leases", || "leases".to_owned()))?
        .into_iter()
        .collect();
    let items: Vec<ScaleSet> = all
        .iter()
        .map(|s| {
            let mut shown = view::scale_set(s, &[]);
            shown.declared = entities
                .get(&s.entity_id)
                .is_some_and(|kind| state.configured.declares(kind, &s.spec));
            shown.served_by = state.served_by(s.id, s.spec.enabled(), leases.get(&s.id));
            shown
        })
        .collect();
    let not_declared = items.iter().filter(|s| !s.declared).count();
    let (items, next_cursor) = page(
        "scale-sets",
        items,
        |s| {
            vec![
                s.spec.name.clone(),
                s.spec.runner_group.clone(),
                s.id.to_string(),
            ]
        },
        (query.limit, state.limits.page_size),
        query.cursor.as_deref(),
    )?;
    Ok(Json(ScaleSetList {
        items,
        not_declared: u32::try_from(not_declared).unwrap_or(u32::MAX),
        next_cursor,
    }))
}

/// One scale set with its newest events.
#[utoipa::path(get, path = "/api/v1/scale-sets/{id}", tag = "scale-sets",
    operation_id = "show_scale_set",
    params(("id" = uuid::Uuid, Path, description = "The scale set's id")),
    responses((status = 200, description = "The scale set with its newest events", body = ScaleSet), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody)))]
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
    operation_id = "update_scale_set",
    params(("id" = uuid::Uuid, Path, description = "The scale set's id")),
    request_body = UpdateScaleSet,
    responses(
        (status = 200, description = "Updated; the worker serving it takes the change up on its next watch", body = ScaleSet),
        (status = 400, body = ErrorBody), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody),
        (status = 409, description = "stale_generation: changed since read; declared: the scale set is declared in the configuration file (only drain and enable go through the API)", body = ErrorBody),
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
    let check_provider = change.provider.is_some();
    let mut raw = RawScaleSetSpec::from(&scale_set.spec);
    replace(&mut raw.labels, change.labels);
    patch(&mut raw.disable_update, change.disable_update);
    patch(&mut raw.provider, change.provider);
    patch(&mut raw.image, change.image);
    patch(&mut raw.flavor, change.flavor);
    patch(&mut raw.os_type, change.os_type);
    patch(&mut raw.os_arch, change.os_arch);
    let setup = &mut raw.runner_setup;
    // `""` clears a proxy setting (the parser takes an empty one as none).
    for (field, given) in [
        (&mut setup.http_proxy, change.http_proxy),
        (&mut setup.https_proxy, change.https_proxy),
        (&mut setup.no_proxy, change.no_proxy),
    ] {
        if given.is_some() {
            *field = given;
        }
    }
    replace(&mut setup.ssh_keys, change.ssh_keys);
    replace(&mut setup.extra_packages, change.extra_packages);
    if let Some(given) = change.disable_updates_on_boot {
        setup.disable_updates_on_boot = given;
    }
    if let Some(given) = change.enable_boot_debug {
        setup.enable_boot_debug = given;
    }
    if let Some(given) = change.runner_install_template {
        setup.runner_install_template = (!given.is_empty()).then_some(given);
    }
    patch(&mut raw.min_idle, change.min_idle.map(i64::from));
    patch(&mut raw.max_runners, change.max_runners.map(i64::from));
    patch(
        &mut raw.bootstrap_timeout,
        change.bootstrap_timeout_secs.map(Duration::from_secs),
    );
    patch(
        &mut raw.scale_down_delay,
        change.scale_down_delay_secs.map(Duration::from_secs),
    );
    patch(
        &mut raw.max_idle_lifetime,
        change.max_idle_lifetime_secs.map(Duration::from_secs),
    );
    patch(
        &mut raw.max_lifetime,
        change.max_lifetime_secs.map(Duration::from_secs),
    );
    patch(&mut raw.runner_prefix, change.runner_prefix);
    patch(&mut raw.extra_specs, change.extra_specs);
    patch(&mut raw.enabled, change.enabled);
    patch(
        &mut raw.adoption_policy,
        change.adoption_policy.map(view::policy_to_store),
    );
    patch(&mut raw.repair, change.repair);
    let group_id = scale_set.spec.runner_group().id;
    let wanted = parsed(&state, raw, check_provider)?;
    // A declared scale set's spec is the configuration file's: only drain and enable go
    // through (operational state, kept by every later apply).
    let key = key_of(&state, &scale_set).await?;
    state
        .configured
        .refuse_edit(&key, &scale_set.spec, &wanted)
        .map_err(ApiError::Declared)?;
    scale_set.spec = wanted;
    // The resolved runner group stays: the group's name cannot change.
    scale_set.spec.set_runner_group_id(group_id);
    let updated = state
        .store
        .update_scale_set(&scale_set)
        .await
        .map_err(write_failed(id, change.generation, "updating a scale set"))?;
    state
        .store
        .append_event(
            id,
            ReasonCode::UpdatedByOperator,
            "spec updated through the API",
        )
        .await
        .map_err(ApiError::store("appending an event", not_found(id)))?;
    Ok(Json(with_events(&state, &updated).await?))
}

/// How long `GET /github/ours-undeclared` may spend asking GitHub, over every entity: under
/// the 10 s a client (and schemathesis's default check) allows a request; the entities not
/// listed by then are answered as `unlisted`, saying so.
const OURS_UNDECLARED_WITHIN: std::time::Duration = std::time::Duration::from_secs(8);

/// Scale sets on GitHub carrying our owner label that the store does not hold and the
/// configuration file does not declare (after a database loss: those made through the API),
/// with the two remedies. One GitHub call per stored entity.
#[utoipa::path(get, path = "/api/v1/github/ours-undeclared", tag = "scale-sets",
    operation_id = "list_ours_undeclared",
    responses((status = 200, description = "The undeclared scale sets found, and the entities GitHub did not list", body = OursUndeclaredList), (status = 401, body = ErrorBody), (status = 503, description = "The store does not answer; retry later", body = ErrorBody)))]
pub(crate) async fn ours_undeclared(
    State(state): State<Arc<AppState>>,
) -> Result<Json<OursUndeclaredList>, ApiError> {
    let (found, unlisted) = scaleset_fleet::ours_undeclared(
        state.store.as_ref(),
        state.clients.as_ref(),
        &state.identity,
        &state.configured,
        OURS_UNDECLARED_WITHIN,
    )
    .await?;
    let entity = |kind: &EntityKind| kind.to_string();
    let mut items: Vec<OursUndeclared> = found
        .iter()
        .map(|set| OursUndeclared {
            entity: entity(&set.entity),
            github_id: set.github_id,
            name: set.name.clone(),
            runner_group: set.runner_group.clone(),
            remedy: format!(
                "ours (our owner label), declared nowhere: declare it (a [[scale_set]] named \
                 {:?} of {} in the configuration file: the next start adopts it by its owner \
                 label), or decommission it (`scalesetctl decommission --entity {} \
                 --scale-set {}`: it is found by our owner label)",
                set.name,
                set.entity.path(),
                set.entity.path(),
                set.name
            ),
        })
        .collect();
    items.sort_by(|a, b| (&a.entity, &a.name).cmp(&(&b.entity, &b.name)));
    Ok(Json(OursUndeclaredList {
        items,
        unlisted: unlisted
            .iter()
            .map(|u| UnlistedEntity {
                entity: entity(&u.entity),
                reason: u.reason.clone(),
            })
            .collect(),
    }))
}

/// The key the fleet knows `scale_set` by (its entity read from the store).
async fn key_of(state: &AppState, scale_set: &StoredScaleSet) -> Result<ScaleSetKey, ApiError> {
    let entity = state
        .store
        .get_entity(scale_set.entity_id)
        .await
        .map_err(ApiError::store(
            "reading the entity",
            not_found(scale_set.id),
        ))?;
    Ok(ScaleSetKey {
        entity: entity.kind,
        runner_group: scale_set.spec.runner_group().name.clone(),
        name: scale_set.spec.name().to_string(),
    })
}

/// Query of the delete.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub(crate) struct DeleteQuery {
    /// Also delete an adopted or known scale set on GitHub (default false: detach only).
    #[serde(default)]
    pub(crate) force: bool,
    /// Delete only at this generation (default: whatever is stored).
    pub(crate) generation: Option<i64>,
}

/// Deletes a scale set, by ownership, as the control crate decides from the stored
/// provenance: one this controller **created** is deleted on GitHub (after it was drained: no
/// instances recorded), one **adopted** or **known** is only detached (the record removed,
/// GitHub untouched) unless `force=true`; one never ensured is only removed. The answer's
/// `reason` says which and why. A worker serving it must let it go first (disable it): 409 `lease_held`.
#[utoipa::path(delete, path = "/api/v1/scale-sets/{id}", tag = "scale-sets",
    operation_id = "delete_scale_set",
    params(("id" = uuid::Uuid, Path, description = "The scale set's id"), DeleteQuery),
    responses(
        (status = 200, description = "What the delete did (deleted, released or left on GitHub) and why", body = DeleteScaleSetResult),
        (status = 400, body = ErrorBody), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody),
        (status = 409, description = "stale_generation, not_drained (instances left), lease_held (a worker serves it) or declared (the configuration file declares it: remove it there first)", body = ErrorBody),
        (status = 502, description = "GitHub refused or failed the delete; the scale set is left disabled, retry the delete", body = ErrorBody),
        (status = 503, description = "The store does not answer; retry later", body = ErrorBody),
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
    // A declared scale set is the configuration file's: the next start would store it again.
    if let Some((index, _)) = state
        .configured
        .declared(&key_of(&state, &scale_set).await?)
    {
        return Err(ApiError::DeclaredDelete {
            scale_set: scale_set.spec.name().to_string(),
            file: state.configured.file.clone(),
            index,
        });
    }
    // Whether GitHub's scale set goes too is the control crate's decision, from the stored
    // provenance (a record of creation, or force).
    let deletion = scaleset_fleet::plan_deletion(&scale_set, query.force);
    let instances = state
        .store
        .list_instances(id)
        .await
        .map_err(ApiError::store("listing instances", not_found(id)))?;
    if !instances.is_empty() {
        return Err(ApiError::NotDrained {
            id: id.to_string(),
            name: scale_set.spec.name().to_string(),
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
                name: scale_set.spec.name().to_string(),
                holder,
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
        if scale_set.spec.enabled() {
            scale_set.spec.set_enabled(false);
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
        scaleset_fleet::delete_on_github(state.clients.as_ref(), &scale_set, github).await?;
    }
    state
        .store
        .delete_scale_set(id, scale_set.generation)
        .await
        .map_err(|e| {
            if e.is_conflict() {
                ApiError::NotDrained {
                    id: id.to_string(),
                    name: scale_set.spec.name().to_string(),
                    instances: 1,
                }
            } else {
                write_failed(id, scale_set.generation, "deleting a scale set")(e)
            }
        })?;
    tracing::info!(scale_set = %id, github_id = scale_set.github_id, deleted_on_github = deletion.deletes_on_github(), %deletion, "scale set deleted");
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

/// Drains a scale set: it is disabled (its worker stops serving it: the message session is
/// deleted, so no job reaches it and no runner is created), and the worker keeps reconciling
/// its instances until none is left: idle runners are retired at once, busy ones finish their
/// jobs and are then removed, and an instance whose runner is gone is cleaned up. The answer
/// says what is left; `drained` is true once a delete goes through. Asking again changes
/// nothing and is how to watch it.
///
/// Drain is its own operation rather than `max_runners = 0`: a served scale set with no room
/// keeps its session, so GitHub keeps assigning it jobs that nothing will run, and its worker
/// keeps its lease, which a delete needs.
#[utoipa::path(post, path = "/api/v1/scale-sets/{id}/drain", tag = "scale-sets",
    operation_id = "drain_scale_set",
    params(("id" = uuid::Uuid, Path, description = "The scale set's id")),
    responses(
        (status = 200, description = "Draining (or drained): what is left", body = DrainScaleSetResult),
        (status = 400, body = ErrorBody), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody),
    ))]
pub(crate) async fn drain(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
) -> Result<Json<DrainScaleSetResult>, ApiError> {
    let id = ScaleSetId(parse_id(&id, "scale set")?);
    let mut scale_set = read(&state, id).await?;
    if scale_set.spec.enabled() {
        scale_set = set_enabled(&state, id, false).await?;
        state
            .store
            .append_event(
                id,
                ReasonCode::DrainRequested,
                "drain asked for: no longer served (no new runners); idle runners are retired \
                 and busy ones finish their jobs; delete it once drained",
            )
            .await
            .map_err(ApiError::store("appending an event", not_found(id)))?;
    }
    let instances = state
        .store
        .list_instances(id)
        .await
        .map_err(ApiError::store("listing instances", not_found(id)))?;
    let busy = instances
        .iter()
        .filter(|i| i.status == InstanceStatus::Busy)
        .count();
    let now = Timestamp::from_system_time(std::time::SystemTime::now());
    let served = state
        .store
        .get_lease(id)
        .await
        .map_err(ApiError::store("reading the lease", not_found(id)))?
        .is_some_and(|lease| lease.expires_at > now);
    Ok(Json(DrainScaleSetResult {
        scale_set: with_events(&state, &scale_set).await?,
        instances: u64::try_from(instances.len()).unwrap_or(u64::MAX),
        busy: u64::try_from(busy).unwrap_or(u64::MAX),
        drained: instances.is_empty() && !served,
    }))
}

/// Retry now: a scale set backing off after its provider failed (or after its task failed,
/// in `error`) tries again at once instead of sleeping out its back-off. The back-off lives in
/// the memory of the worker holding the scale set's lease, maybe another process, so the
/// request is recorded in the store; that worker acts on it at its next watch (within its
/// `watch_interval`): the provider back-off ends and the scale set's task wakes. A scale set
/// that is not backing off is not harmed: it scales once more. A disabled (or draining) scale
/// set is refused: nothing serves it, so there is nothing to retry.
#[utoipa::path(post, path = "/api/v1/scale-sets/{id}/retry", tag = "scale-sets",
    operation_id = "retry_scale_set",
    params(("id" = uuid::Uuid, Path, description = "The scale set's id")),
    responses(
        (status = 202, description = "Recorded: the worker serving it retries at its next watch", body = RetryScaleSetResult),
        (status = 400, body = ErrorBody), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody),
        (status = 409, description = "disabled: the scale set is disabled or draining; enable it first", body = ErrorBody),
    ))]
pub(crate) async fn retry(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
) -> Result<(StatusCode, Json<RetryScaleSetResult>), ApiError> {
    let id = ScaleSetId(parse_id(&id, "scale set")?);
    let scale_set = read(&state, id).await?;
    if !scale_set.spec.enabled() {
        return Err(ApiError::NotServed {
            id: id.to_string(),
            name: scale_set.spec.name().to_string(),
        });
    }
    let requested_at = state
        .store
        .request_retry(id)
        .await
        .map_err(ApiError::store("recording the retry", not_found(id)))?;
    let now = Timestamp::from_system_time(std::time::SystemTime::now());
    let served_by = state
        .store
        .get_lease(id)
        .await
        .map_err(ApiError::store("reading the lease", not_found(id)))?
        .filter(|lease| lease.expires_at > now)
        .map(|lease| lease.holder);
    let reason = match &served_by {
        Some(holder) => format!(
            "retry asked for: worker {holder:?} ends the scale set's back-off at its next \
             watch and tries again at once (watch state, state_reason and events)"
        ),
        None => "retry asked for: no worker serves the scale set now; the worker that takes \
                 it starts without a back-off"
            .to_owned(),
    };
    state
        .store
        .append_event(id, ReasonCode::RetryRequested, &reason)
        .await
        .map_err(ApiError::store("appending an event", not_found(id)))?;
    let scale_set = read(&state, id).await?;
    Ok((
        StatusCode::ACCEPTED,
        Json(RetryScaleSetResult {
            scale_set: with_events(&state, &scale_set).await?,
            requested_at: view::time(requested_at),
            served_by,
            reason,
        }),
    ))
}

/// A patch field: `Some` replaces the stored value, `None` (absent from the request) keeps it.
fn replace<T>(field: &mut T, value: Option<T>) {
    if let Some(value) = value {
        *field = value;
    }
}

/// [`replace`] for a field of the raw spec, which is optional itself.
fn patch<T>(field: &mut Option<T>, value: Option<T>) {
    if value.is_some() {
        *field = value;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stored_scale_set_says_what_happens_next_in_words() {
        assert_eq!(
            pending_reason(true, "linux-x64"),
            "stored; a worker creates it on GitHub shortly (or adopts a scale set of the same \
             name there, if it is provably ours), and this reason then says which"
        );
        assert_eq!(
            pending_reason(false, "linux-x64"),
            "stored disabled: nothing is created on GitHub until it is enabled \
             (scalesetctl scale-set update linux-x64 --enabled true)"
        );
    }
}
