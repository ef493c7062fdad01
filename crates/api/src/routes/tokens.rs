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

/// Every API token, by name (never their text).
#[utoipa::path(get, path = "/api/v1/tokens", tag = "tokens",
    responses((status = 200, body = TokenList), (status = 401, body = ErrorBody)))]
pub(crate) async fn list(State(state): State<Arc<AppState>>) -> Result<Json<TokenList>, ApiError> {
    let tokens = all(&state).await?;
    Ok(Json(TokenList {
        items: tokens.iter().map(record).collect(),
    }))
}

/// Revokes a token, by id or name: requests with it are refused from now on.
#[utoipa::path(delete, path = "/api/v1/tokens/{token}", tag = "tokens",
    params(("token" = String, Path, description = "The token's id or name")),
    responses((status = 200, body = Token), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody)))]
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
