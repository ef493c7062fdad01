//! `/api/v1/entities`: the repositories, organizations and enterprises scale sets belong to,
//! each bound to credentials by name.

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::get;
use axum::{Json, Router};
use scaleset_store::{EntityId, NewEntity};

use crate::error::ApiError;
use crate::extract::{Body, Params, parse_id};
use crate::page::{PageQuery, page};
use crate::state::AppState;
use crate::v1::{CreateEntity, Entity, EntityKind, EntityList, ErrorBody};
use crate::{validate, view};

pub(crate) fn routes() -> Router<Arc<AppState>> {
    Router::new()
        .route("/entities", get(list).post(create))
        .route("/entities/{id}", get(show).delete(delete))
}

fn kind(input: &CreateEntity) -> Result<scaleset_store::EntityKind, ApiError> {
    Ok(match input.kind {
        EntityKind::Repository => {
            let Some((owner, name)) = input.name.split_once('/') else {
                return Err(ApiError::InvalidInput {
                    field: "name".to_owned(),
                    reason: format!("{:?}: a repository is named owner/repo", input.name),
                });
            };
            validate::name("name (owner)", owner, 100)?;
            validate::name("name (repository)", name, 100)?;
            scaleset_store::EntityKind::Repository {
                owner: owner.to_owned(),
                name: name.to_owned(),
            }
        }
        EntityKind::Organization => {
            validate::name("name", &input.name, 100)?;
            scaleset_store::EntityKind::Organization {
                name: input.name.clone(),
            }
        }
        EntityKind::Enterprise => {
            validate::name("name", &input.name, 100)?;
            scaleset_store::EntityKind::Enterprise {
                slug: input.name.clone(),
            }
        }
    })
}

/// Stores an entity.
#[utoipa::path(post, path = "/api/v1/entities", tag = "entities",
    operation_id = "create_entity",
    request_body = CreateEntity,
    responses(
        (status = 201, description = "Stored", body = Entity),
        (status = 400, description = "Invalid body, name, or unknown credentials", body = ErrorBody),
        (status = 401, body = ErrorBody),
        (status = 409, description = "Already stored", body = ErrorBody),
        (status = 413, body = ErrorBody), (status = 415, body = ErrorBody),
    ))]
pub(crate) async fn create(
    State(state): State<Arc<AppState>>,
    Body(input): Body<CreateEntity>,
) -> Result<(StatusCode, Json<Entity>), ApiError> {
    let kind = kind(&input)?;
    validate::name("credentials", &input.credentials, 64)?;
    let credentials = state
        .store
        .get_credentials_by_name(&input.credentials)
        .await
        .map_err(|e| {
            if e.is_not_found() {
                ApiError::InvalidInput {
                    field: "credentials".to_owned(),
                    reason: format!(
                        "no credentials named {0:?}; create them first: scalesetctl credential \
                         create {0:?} --pat-env VAR (or --app-id with --installation-id and \
                         --private-key-file)",
                        input.credentials
                    ),
                }
            } else {
                ApiError::store("reading credentials", || "credentials".to_owned())(e)
            }
        })?;
    let what = format!(
        "{} {:?} under credentials {:?}",
        input.kind.as_str(),
        input.name,
        input.credentials
    );
    let created = state
        .store
        .create_entity(NewEntity {
            kind,
            credentials_id: credentials.id,
        })
        .await
        .map_err(ApiError::store("creating an entity", || what))?;
    Ok((
        StatusCode::CREATED,
        Json(view::entity(&created, &credentials.name)),
    ))
}

/// The entities, by kind then name, one page at a time.
#[utoipa::path(get, path = "/api/v1/entities", tag = "entities",
    operation_id = "list_entities",
    params(PageQuery),
    responses((status = 200, description = "One page of entities, by kind then name (`next_cursor` is null on the last page)", body = EntityList), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody)))]
pub(crate) async fn list(
    State(state): State<Arc<AppState>>,
    Params(query): Params<PageQuery>,
) -> Result<Json<EntityList>, ApiError> {
    let entities = state
        .store
        .list_entities()
        .await
        .map_err(ApiError::store("listing entities", || {
            "entities".to_owned()
        }))?;
    let names: HashMap<_, _> = state
        .store
        .list_credentials()
        .await
        .map_err(ApiError::store("listing credentials", || {
            "credentials".to_owned()
        }))?
        .into_iter()
        .map(|c| (c.id, c.name))
        .collect();
    let items: Vec<Entity> = entities
        .iter()
        .map(|e| view::entity(e, names.get(&e.credentials_id).map_or("", String::as_str)))
        .collect();
    let (items, next_cursor) = page(
        "entities",
        items,
        |e: &Entity| vec![e.kind.as_str().to_owned(), e.name.clone(), e.id.to_string()],
        (query.limit, state.limits.page_size),
        query.cursor.as_deref(),
    )?;
    Ok(Json(EntityList { items, next_cursor }))
}

/// One entity.
#[utoipa::path(get, path = "/api/v1/entities/{id}", tag = "entities",
    operation_id = "show_entity",
    params(("id" = uuid::Uuid, Path, description = "The entity's id")),
    responses((status = 200, description = "The entity", body = Entity), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub(crate) async fn show(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
) -> Result<Json<Entity>, ApiError> {
    let id = EntityId(parse_id(&id, "entity")?);
    let entity = state
        .store
        .get_entity(id)
        .await
        .map_err(ApiError::store("reading an entity", || {
            format!("entity {id}")
        }))?;
    let credentials = state
        .store
        .get_credentials(entity.credentials_id)
        .await
        .map_err(ApiError::store("reading credentials", || {
            "the entity's credentials".to_owned()
        }))?;
    Ok(Json(view::entity(&entity, &credentials.name)))
}

/// Deletes an entity no scale set uses.
#[utoipa::path(delete, path = "/api/v1/entities/{id}", tag = "entities",
    operation_id = "delete_entity",
    params(("id" = uuid::Uuid, Path, description = "The entity's id")),
    responses((status = 204, description = "Deleted"), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
        (status = 404, body = ErrorBody), (status = 409, description = "A scale set uses it", body = ErrorBody)))]
pub(crate) async fn delete(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    let id = EntityId(parse_id(&id, "entity")?);
    state
        .store
        .get_entity(id)
        .await
        .map_err(ApiError::store("reading an entity", || {
            format!("entity {id}")
        }))?;
    state.store.delete_entity(id).await.map_err(|e| {
        if e.is_conflict() {
            ApiError::InUse {
                what: format!("entity {id}"),
                remedy: "delete its scale sets first".to_owned(),
            }
        } else {
            ApiError::store("deleting an entity", || format!("entity {id}"))(e)
        }
    })?;
    Ok(StatusCode::NO_CONTENT)
}
