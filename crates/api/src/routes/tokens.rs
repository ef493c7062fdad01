//! `/api/v1/tokens`: list and revoke API tokens, so a leaked token can be cut off from
//! anywhere an operator has a token. Tokens are created only on the server's host
//! (`scaleset-server token create NAME`): with a create route, a stolen token could mint
//! others and outlive its own revocation.

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::routing::{delete, get};
use axum::{Json, Router};
use scaleset_store::ApiToken;

use crate::error::ApiError;
use crate::extract::Params;
use crate::page::{PageQuery, page};
use crate::state::AppState;
use crate::v1::{ErrorBody, Token, TokenList};
use crate::view;

pub(crate) fn routes() -> Router<Arc<AppState>> {
    Router::new()
        .route("/tokens", get(list))
        .route("/tokens/{token}", delete(revoke))
}

fn record(token: &ApiToken) -> Token {
    Token {
        id: token.id.0,
        name: token.name.clone(),
        created_at: view::time(token.created_at),
        scope: crate::auth::wire_scope(token.scope),
    }
}

async fn all(state: &AppState) -> Result<Vec<ApiToken>, ApiError> {
    state
        .store
        .list_api_tokens()
        .await
        .map_err(ApiError::store("listing API tokens", || {
            "API tokens".to_owned()
        }))
}

/// The API tokens, by name (never their text), one page at a time.
#[utoipa::path(get, path = "/api/v1/tokens", tag = "tokens",
    operation_id = "list_tokens",
    params(PageQuery),
    responses((status = 200, description = "One page of API tokens, by name, never their text (`next_cursor` is null on the last page)", body = TokenList), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody)))]
pub(crate) async fn list(
    State(state): State<Arc<AppState>>,
    Params(query): Params<PageQuery>,
) -> Result<Json<TokenList>, ApiError> {
    let tokens = all(&state).await?;
    let (items, next_cursor) = page(
        "tokens",
        tokens.iter().map(record).collect(),
        |t: &Token| vec![t.name.clone(), t.id.to_string()],
        (query.limit, state.limits.page_size),
        query.cursor.as_deref(),
    )?;
    Ok(Json(TokenList { items, next_cursor }))
}

/// Revokes a token, by id or name: requests with it are refused from now on.
#[utoipa::path(delete, path = "/api/v1/tokens/{token}", tag = "tokens",
    operation_id = "revoke_token",
    params(("token" = String, Path, description = "The token's id or name")),
    responses((status = 200, description = "Revoked: the token as it was", body = Token), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub(crate) async fn revoke(
    State(state): State<Arc<AppState>>,
    Path(wanted): Path<String>,
) -> Result<Json<Token>, ApiError> {
    let tokens = all(&state).await?;
    let found = tokens
        .iter()
        .find(|t| t.id.to_string() == wanted || t.name == wanted)
        .ok_or_else(|| ApiError::NotFound {
            what: format!("API token {wanted:?}"),
        })?;
    state
        .store
        .revoke_api_token(found.id)
        .await
        .map_err(ApiError::store("revoking an API token", || {
            format!("API token {wanted:?}")
        }))?;
    tracing::info!(token = %found.name, id = %found.id, "API token revoked");
    Ok(Json(record(found)))
}
