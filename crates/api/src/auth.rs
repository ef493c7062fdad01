//! Bearer-token authentication for every `/api/v1` route: `Authorization: Bearer <token>`,
//! looked up by its SHA-256 in the store's [`ApiTokenStore`]. A missing header is 401
//! `missing_token`, an unknown or revoked token 401 `invalid_token`, both with a
//! `WWW-Authenticate: Bearer` header and a body that says how to get a token. It runs before
//! any body is read, so an unauthenticated request never reaches a handler.
//!
//! **Scopes.** Each token has a scope ([`ApiScope`]: `read` < `operate` < `admin`), and each
//! route needs one ([`required_scope`], the one table, from the method and the route's
//! pattern): every GET is `read`; the scale-set actions (edit, delete, drain, retry) and removing
//! an instance are `operate`; everything else is `admin`, so a route added without a thought
//! for scopes is closed to all but admin tokens. A token whose scope is too narrow is answered
//! 403 `insufficient_scope`, naming both scopes, before the body is read. The status page's
//! actions check the same table for the API route they call.
//!
//! [`ApiTokenStore`]: scaleset_store::ApiTokenStore

use std::future::Future;
use std::sync::Arc;

use axum::extract::{MatchedPath, Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use scaleset_store::{ApiScope, SecretString};

use crate::error::ApiError;
use crate::state::AppState;

/// Who made the request: the API token's record, as a request extension.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    /// The token's id.
    pub token_id: uuid::Uuid,
    /// The token's name.
    pub name: String,
    /// What the token may do.
    pub scope: ApiScope,
}

impl Caller {
    /// `Ok` if this caller's scope opens `method` on `route` (a pattern such as
    /// `/api/v1/scale-sets/{id}`), otherwise the 403 naming both scopes.
    pub(crate) fn may(&self, method: &Method, route: &str) -> Result<(), ApiError> {
        let needed = required_scope(method, route);
        if self.scope >= needed {
            return Ok(());
        }
        Err(ApiError::InsufficientScope {
            token: self.name.clone(),
            scope: self.scope,
            needed,
            route: format!("{method} {route}"),
        })
    }
}

/// The scope `method` on the `/api/v1` route `route` needs (the route's pattern, with or
/// without the `/api/v1` prefix): the one table of who may do what.
pub(crate) fn required_scope(method: &Method, route: &str) -> ApiScope {
    if method == Method::GET || method == Method::HEAD {
        return ApiScope::Read;
    }
    let route = route.strip_prefix("/api/v1").unwrap_or(route);
    match route {
        // What an operator does to a scale set that exists: edit (max runners, min idle,
        // enable), delete, drain, retry now; and removing one instance.
        "/scale-sets/{id}"
        | "/scale-sets/{id}/drain"
        | "/scale-sets/{id}/retry"
        | "/instances/{name}" => ApiScope::Operate,
        // Credentials, entities, tokens, creating scale sets, plan/apply, decommission,
        // workers, and any route not named above.
        _ => ApiScope::Admin,
    }
}

/// The wire form of a scope.
pub(crate) fn wire_scope(scope: ApiScope) -> crate::v1::TokenScope {
    match scope {
        ApiScope::Read => crate::v1::TokenScope::Read,
        ApiScope::Operate => crate::v1::TokenScope::Operate,
        ApiScope::Admin => crate::v1::TokenScope::Admin,
    }
}

/// Middleware: authenticates the request or answers 401, then checks the token's scope
/// against the route's ([`required_scope`]) or answers 403.
pub(crate) async fn require_token(
    State(state): State<Arc<AppState>>,
    request: Request,
    next: Next,
) -> Response {
    let method = request.method().clone();
    // Routed already (a route layer), so the pattern is known; without one the most
    // demanding scope is asked.
    let route = request.extensions().get::<MatchedPath>().map_or_else(
        || request.uri().path().to_owned(),
        |p| p.as_str().to_owned(),
    );
    guard(request, next, "scaleset", |header| async move {
        let caller = authenticate(&state, header).await?;
        caller.may(&method, &route)?;
        Ok(caller)
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

pub(crate) async fn authenticate(
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
        scope: record.scope,
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
