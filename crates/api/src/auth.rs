//! Bearer-token authentication for every `/api/v1` route: `Authorization: Bearer <token>`,
//! looked up by its SHA-256 in the store's [`ApiTokenStore`]. A missing header is 401
//! `missing_token`, an unknown or revoked token 401 `invalid_token`, both with a
//! `WWW-Authenticate: Bearer` header and a body that says how to get a token. It runs before
//! any body is read, so an unauthenticated request never reaches a handler.
//!
//! [`ApiTokenStore`]: scaleset_store::ApiTokenStore

use std::future::Future;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use scaleset_store::SecretString;

use crate::error::ApiError;
use crate::state::AppState;

/// Who made the request: the API token's record, as a request extension.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    /// The token's id.
    pub token_id: uuid::Uuid,
    /// The token's name.
    pub name: String,
}

/// Middleware: authenticates the request or answers 401.
pub(crate) async fn require_token(
    State(state): State<Arc<AppState>>,
    request: Request,
    next: Next,
) -> Response {
    guard(request, next, "scaleset", |header| async move {
        authenticate(&state, header).await
    })
    .await
}

/// The one shape of every token check: reads the `Authorization` header, runs `check` on it,
/// and either passes the request on with what `check` found as an extension or answers the
/// error; a 401 carries `WWW-Authenticate: Bearer realm="<realm>"`. Shared by the API-token
/// and the instance-token layers, which differ only in what they look the token up in.
pub(crate) async fn guard<C, F, Fut>(
    mut request: Request,
    next: Next,
    realm: &'static str,
    check: F,
) -> Response
where
    C: Clone + Send + Sync + 'static,
    F: FnOnce(Option<Result<String, header::ToStrError>>) -> Fut,
    Fut: Future<Output = Result<C, ApiError>>,
{
    let header = request
        .headers()
        .get(header::AUTHORIZATION)
        .map(|value| value.to_str().map(str::to_owned));
    match check(header).await {
        Ok(caller) => {
            request.extensions_mut().insert(caller);
            next.run(request).await
        }
        Err(error) => {
            let mut response = error.into_response();
            if response.status() == StatusCode::UNAUTHORIZED {
                let challenge = format!("Bearer realm=\"{realm}\"");
                if let Ok(value) = HeaderValue::from_str(&challenge) {
                    response
                        .headers_mut()
                        .insert(header::WWW_AUTHENTICATE, value);
                }
            }
            response
        }
    }
}

async fn authenticate(
    state: &AppState,
    header: Option<Result<String, axum::http::header::ToStrError>>,
) -> Result<Caller, ApiError> {
    let token = bearer(header).map_err(|missing| {
        if missing {
            ApiError::MissingToken
        } else {
            ApiError::InvalidToken
        }
    })?;
    let found = state
        .store
        .authenticate_api_token(&SecretString::from(token))
        .await
        .map_err(ApiError::store("checking the API token", || {
            "API token".to_owned()
        }))?;
    let record = found.ok_or(ApiError::InvalidToken)?;
    Ok(Caller {
        token_id: record.id.0,
        name: record.name,
    })
}

/// The token of an `Authorization: Bearer <token>` header. `Err(true)`: no bearer token was
/// sent; `Err(false)`: one was sent but cannot be a token (not text, empty, over 512 bytes).
pub(crate) fn bearer(
    header: Option<Result<String, axum::http::header::ToStrError>>,
) -> Result<String, bool> {
    let text = header.ok_or(true)?.map_err(|_| false)?;
    let (scheme, token) = text.trim().split_once(' ').ok_or(true)?;
    if !scheme.eq_ignore_ascii_case("bearer") {
        return Err(true);
    }
    let token = token.trim();
    if token.is_empty() || token.len() > 512 {
        return Err(false);
    }
    Ok(token.to_owned())
}
