//! `/api/v1/credentials`: create, list, show, replace and delete GitHub credentials. Secrets
//! are write-only: the store seals them and no answer carries them.

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::get;
use axum::{Json, Router};
use scaleset_store::{
    AppIdentity, Auth, ClientId, CredentialsId, Endpoint, NewCredentials, SecretString,
};

use crate::error::ApiError;
use crate::extract::{Body, Params, parse_id};
use crate::page::{PageQuery, page};
use crate::state::AppState;
use crate::v1::{AuthInput, CreateCredentials, Credentials, CredentialsList, ErrorBody};
use crate::{validate, view};

pub(crate) fn routes() -> Router<Arc<AppState>> {
    Router::new()
        .route("/credentials", get(list).post(create))
        .route("/credentials/{id}", get(show).put(replace).delete(delete))
}

/// The largest secret accepted (a 4096-bit RSA key in PEM is about 3.3 KB).
const MAX_SECRET: usize = 16 * 1024;

/// The credentials as given. `stored` is the endpoint of the credentials being replaced:
/// without an `endpoint` a replacement keeps it (a token must never move to a host the
/// operator did not name); a create without one is github.com. A given endpoint is parsed by
/// the store's [`Endpoint::parse`], the one derivation of the API base URL.
fn checked(input: CreateCredentials, stored: Option<Endpoint>) -> Result<NewCredentials, ApiError> {
    validate::name("name", &input.name, 64)?;
    let endpoint = match (input.endpoint, stored) {
        (None, Some(stored)) => stored,
        (None, None) => Endpoint::github_com(),
        (Some(e), _) => {
            if let Some(bundle) = &e.ca_bundle {
                validate::ca_bundle("endpoint.ca_bundle", bundle)?;
            }
            Endpoint::parse(&e.base_url, e.api_base_url.as_deref(), e.ca_bundle).map_err(
                |problems| ApiError::InvalidInput {
                    field: "endpoint".to_owned(),
                    reason: problems
                        .iter()
                        .map(ToString::to_string)
                        .collect::<Vec<_>>()
                        .join("; "),
                },
            )?
        }
    };
    let auth = match input.auth {
        AuthInput::Pat { token } => {
            validate::secret("auth.token", &token, MAX_SECRET)?;
            validate::pat("auth.token", &token)?;
            Auth::Pat {
                token: SecretString::from(token),
            }
        }
        AuthInput::App {
            app_id,
            client_id,
            installation_id,
            private_key,
        } => {
            let app = app_identity(app_id, client_id)?;
            validate::range("auth.installation_id", installation_id, 1, i64::MAX)?;
            validate::secret("auth.private_key", &private_key, MAX_SECRET)?;
            let private_key = SecretString::from(private_key);
            // The same check as the configuration file's door: the client's own parser, so a
            // key stored here is one the token chain can sign with. Its message never quotes
            // the key.
            if let Err(e) = scaleset_github::app_key_fingerprint(&private_key) {
                return Err(ApiError::InvalidInput {
                    field: "auth.private_key".to_owned(),
                    reason: format!(
                        "{e}; give the PEM private key GitHub generated for the App \
                         (BEGIN RSA PRIVATE KEY or BEGIN PRIVATE KEY)"
                    ),
                });
            }
            Auth::App {
                app,
                installation_id,
                private_key,
            }
        }
    };
    Ok(NewCredentials {
        name: input.name,
        endpoint,
        auth,
    })
}

/// The App a body names: exactly one of `auth.app_id` or `auth.client_id`, each checked by
/// the store's own rule (the configuration file's door uses the same).
fn app_identity(app_id: Option<i64>, client_id: Option<String>) -> Result<AppIdentity, ApiError> {
    match (app_id, client_id) {
        (Some(id), None) => {
            validate::range("auth.app_id", id, 1, i64::MAX)?;
            Ok(AppIdentity::Id(id))
        }
        (None, Some(text)) => ClientId::parse(&text)
            .map(AppIdentity::ClientId)
            .map_err(|e| ApiError::InvalidInput {
                field: "auth.client_id".to_owned(),
                reason: e.to_string(),
            }),
        (Some(_), Some(_)) => Err(ApiError::InvalidInput {
            field: "auth.client_id".to_owned(),
            reason: "given with app_id: both name the App; give one of them (client_id, \
                     the Iv… text GitHub shows first, or app_id, the number)"
                .to_owned(),
        }),
        (None, None) => Err(ApiError::InvalidInput {
            field: "auth.app_id".to_owned(),
            reason: "missing: a GitHub App is named by app_id (its numeric App ID) or \
                     client_id (its Iv… client id); give one"
                .to_owned(),
        }),
    }
}

/// Stores new credentials.
#[utoipa::path(post, path = "/api/v1/credentials", tag = "credentials",
    operation_id = "create_credentials",
    request_body = CreateCredentials,
    responses(
        (status = 201, description = "Stored (the secret is never answered back)", body = Credentials),
        (status = 400, description = "Invalid body or value", body = ErrorBody),
        (status = 401, body = ErrorBody), (status = 409, description = "The name is taken", body = ErrorBody),
        (status = 413, body = ErrorBody), (status = 415, body = ErrorBody),
    ))]
pub(crate) async fn create(
    State(state): State<Arc<AppState>>,
    Body(input): Body<CreateCredentials>,
) -> Result<(StatusCode, Json<Credentials>), ApiError> {
    let new = checked(input, None)?;
    let name = new.name.clone();
    let created = state
        .store
        .create_credentials(new)
        .await
        .map_err(ApiError::store("creating credentials", || {
            format!("credentials {name:?}")
        }))?;
    Ok((StatusCode::CREATED, Json(view::credentials(&created))))
}

/// The credentials, by name, one page at a time.
#[utoipa::path(get, path = "/api/v1/credentials", tag = "credentials",
    operation_id = "list_credentials",
    params(PageQuery),
    responses((status = 200, description = "One page of credentials, by name (`next_cursor` is null on the last page)", body = CredentialsList), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody)))]
pub(crate) async fn list(
    State(state): State<Arc<AppState>>,
    Params(query): Params<PageQuery>,
) -> Result<Json<CredentialsList>, ApiError> {
    let all = state
        .store
        .list_credentials()
        .await
        .map_err(ApiError::store("listing credentials", || {
            "credentials".to_owned()
        }))?;
    let (items, next_cursor) = page(
        "credentials",
        all.iter().map(view::credentials).collect(),
        |c: &Credentials| vec![c.name.clone(), c.id.to_string()],
        (query.limit, state.limits.page_size),
        query.cursor.as_deref(),
    )?;
    Ok(Json(CredentialsList { items, next_cursor }))
}

/// The credentials `id`, or 404 naming it.
async fn read(
    state: &AppState,
    id: CredentialsId,
) -> Result<scaleset_store::Credentials, ApiError> {
    state
        .store
        .get_credentials(id)
        .await
        .map_err(ApiError::store("reading credentials", || {
            format!("credentials {id}")
        }))
}

/// One credentials.
#[utoipa::path(get, path = "/api/v1/credentials/{id}", tag = "credentials",
    operation_id = "show_credentials",
    params(("id" = uuid::Uuid, Path, description = "The credentials' id")),
    responses((status = 200, description = "The credentials (without the secret)", body = Credentials), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub(crate) async fn show(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
) -> Result<Json<Credentials>, ApiError> {
    let id = CredentialsId(parse_id(&id, "credentials")?);
    let found = read(&state, id).await?;
    Ok(Json(view::credentials(&found)))
}

/// Replaces name, endpoint and secret (the secret must be given again; without an `endpoint`
/// the stored one is kept).
#[utoipa::path(put, path = "/api/v1/credentials/{id}", tag = "credentials",
    operation_id = "replace_credentials",
    params(("id" = uuid::Uuid, Path, description = "The credentials' id")),
    request_body = CreateCredentials,
    responses((status = 200, description = "Replaced (the secret is never answered back)", body = Credentials), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
        (status = 404, body = ErrorBody), (status = 409, description = "The name is taken", body = ErrorBody), (status = 413, body = ErrorBody),
        (status = 415, body = ErrorBody)))]
pub(crate) async fn replace(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
    Body(input): Body<CreateCredentials>,
) -> Result<Json<Credentials>, ApiError> {
    let id = CredentialsId(parse_id(&id, "credentials")?);
    let stored = read(&state, id).await?;
    let new = checked(input, Some(stored.endpoint))?;
    let name = new.name.clone();
    let updated = state
        .store
        .update_credentials(id, new)
        .await
        .map_err(ApiError::store("replacing credentials", || {
            format!("credentials {name:?}")
        }))?;
    Ok(Json(view::credentials(&updated)))
}

/// Deletes credentials no entity uses.
#[utoipa::path(delete, path = "/api/v1/credentials/{id}", tag = "credentials",
    operation_id = "delete_credentials",
    params(("id" = uuid::Uuid, Path, description = "The credentials' id")),
    responses((status = 204, description = "Deleted"), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
        (status = 404, body = ErrorBody), (status = 409, description = "An entity uses them", body = ErrorBody)))]
pub(crate) async fn delete(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    let id = CredentialsId(parse_id(&id, "credentials")?);
    read(&state, id).await?;
    state.store.delete_credentials(id).await.map_err(|e| {
        if e.is_conflict() {
            ApiError::InUse {
                what: format!("credentials {id}"),
                remedy: "delete the entities that use them first".to_owned(),
            }
        } else {
            ApiError::store("deleting credentials", || format!("credentials {id}"))(e)
        }
    })?;
    Ok(StatusCode::NO_CONTENT)
}
