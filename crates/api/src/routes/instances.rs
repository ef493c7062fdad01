//! `/api/v1/instances` and `/api/v1/scale-sets/{id}/instances`: the recorded provider
//! instances, as the worker's scaler and reconciler keep them.

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::get;
use axum::{Json, Router};
use scaleset_store::ScaleSetId;

use crate::error::ApiError;
use crate::extract::{Params, parse_id};
use crate::page::{PageQuery, page};
use crate::state::AppState;
use crate::v1::{ErrorBody, Instance, InstanceList};
use crate::{validate, view};

pub(crate) fn routes() -> Router<Arc<AppState>> {
    Router::new()
        .route("/instances", get(list))
        .route("/instances/{name}", get(show).delete(delete))
        .route("/scale-sets/{id}/instances", get(list_of))
}

/// The recorded instances, by name, one page at a time.
#[utoipa::path(get, path = "/api/v1/instances", tag = "instances",
    operation_id = "list_instances",
    params(PageQuery),
    responses((status = 200, description = "One page of instances, by name (`next_cursor` is null on the last page)", body = InstanceList), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody)))]
pub(crate) async fn list(
    State(state): State<Arc<AppState>>,
    Params(query): Params<PageQuery>,
) -> Result<Json<InstanceList>, ApiError> {
    let scale_sets = state
        .store
        .list_scale_sets(None)
        .await
        .map_err(ApiError::store("listing scale sets", || {
            "scale sets".to_owned()
        }))?;
    let mut items = Vec::new();
    for scale_set in &scale_sets {
        let instances = state
            .store
            .list_instances(scale_set.id)
            .await
            .map_err(ApiError::store("listing instances", || {
                "instances".to_owned()
            }))?;
        items.extend(instances.iter().map(view::instance));
    }
    let (items, next_cursor) = page(
        "instances",
        items,
        |i: &Instance| vec![i.name.clone()],
        (query.limit, state.limits.page_size),
        query.cursor.as_deref(),
    )?;
    Ok(Json(InstanceList { items, next_cursor }))
}

/// One scale set's instances, by name, one page at a time.
#[utoipa::path(get, path = "/api/v1/scale-sets/{id}/instances", tag = "instances",
    operation_id = "list_scale_set_instances",
    params(("id" = uuid::Uuid, Path, description = "The scale set's id"), PageQuery),
    responses((status = 200, description = "One page of the scale set's instances, by name (`next_cursor` is null on the last page)", body = InstanceList), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub(crate) async fn list_of(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
    Params(query): Params<PageQuery>,
) -> Result<Json<InstanceList>, ApiError> {
    let id = ScaleSetId(parse_id(&id, "scale set")?);
    state
        .store
        .get_scale_set(id)
        .await
        .map_err(ApiError::store("reading a scale set", || {
            format!("scale set {id}")
        }))?;
    let instances = state
        .store
        .list_instances(id)
        .await
        .map_err(ApiError::store("listing instances", || {
            format!("scale set {id}")
        }))?;
    let (items, next_cursor) = page(
        "instances",
        instances.iter().map(view::instance).collect(),
        |i: &Instance| vec![i.name.clone()],
        (query.limit, state.limits.page_size),
        query.cursor.as_deref(),
    )?;
    Ok(Json(InstanceList { items, next_cursor }))
}

/// One instance.
#[utoipa::path(get, path = "/api/v1/instances/{name}", tag = "instances",
    operation_id = "show_instance",
    params(("name" = String, Path, description = "The instance's (and runner's) name: 1–200 of `A-Za-z0-9._-`, starting with a letter or digit",
        min_length = 1, max_length = 200, pattern = "^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$")),
    responses((status = 200, description = "The instance, with its bootstrap reports", body = Instance), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub(crate) async fn show(
    State(state): State<Arc<AppState>>,
    Path(name): Path<String>,
) -> Result<Json<Instance>, ApiError> {
    validate::name("name", &name, 200).map_err(|e| ApiError::InvalidParameter {
        reason: e.to_string(),
    })?;
    let instance = state
        .store
        .get_instance(&name)
        .await
        .map_err(ApiError::store("reading an instance", || {
            format!("instance {name:?}")
        }))?;
    let access = state
        .store
        .get_instance_access(&name)
        .await
        .map_err(ApiError::store(
            "reading an instance's bootstrap reports",
            || format!("instance {name:?}"),
        ))?;
    Ok(Json(Instance {
        bootstrap: access.as_ref().map(view::bootstrap),
        ..view::instance(&instance)
    }))
}

/// Asks for an instance to go. The API holds no lease, so it records the request and answers
/// 202: the worker serving the scale set retires the runner when it next plans (within one
/// long-poll, about 50 s): removed from GitHub, then deleted at the provider, and replaced if
/// the scale set still wants as many runners. A busy runner finishes its job first (ephemeral
/// runners leave after one job anyway).
#[utoipa::path(delete, path = "/api/v1/instances/{name}", tag = "instances",
    operation_id = "delete_instance",
    params(("name" = String, Path, description = "The instance's (and runner's) name: 1–200 of `A-Za-z0-9._-`, starting with a letter or digit",
        min_length = 1, max_length = 200, pattern = "^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$")),
    responses((status = 202, description = "Removal recorded: the worker serving the scale set retires the runner", body = Instance), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub(crate) async fn delete(
    State(state): State<Arc<AppState>>,
    Path(name): Path<String>,
) -> Result<(StatusCode, Json<Instance>), ApiError> {
    validate::name("name", &name, 200).map_err(|e| ApiError::InvalidParameter {
        reason: e.to_string(),
    })?;
    let instance = state
        .store
        .request_instance_removal(&name)
        .await
        .map_err(ApiError::store("requesting an instance's removal", || {
            format!("instance {name:?}")
        }))?;
    tracing::info!(instance = %name, "instance removal requested");
    Ok((StatusCode::ACCEPTED, Json(view::instance(&instance))))
}
