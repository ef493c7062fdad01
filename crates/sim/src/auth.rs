//! Who a request is from: the admin token's tenant, the queue token's session, and whether a
//! PAT or installation token may manage a scope's runners (GitHub's REST answers otherwise).

use crate::exception::ApiError;
use crate::request::Request;
use crate::scope::Scope;
use crate::simulator::{Shared, lock};
use crate::token::{Grant, Refusal};

/// The tenant an admin bearer token grants; 401 `InvalidTokenException` otherwise.
pub(crate) fn admin_scope(shared: &Shared, req: &Request) -> Result<Scope, ApiError> {
    let token = req.bearer().ok_or_else(|| {
        ApiError::exception(
            401,
            "InvalidTokenException",
            "No access token was presented.",
        )
    })?;
    match shared.signer.verify(token, shared.clock.now()) {
        Ok(Grant::Admin { scope }) => Scope::parse_path(&scope).ok_or_else(|| {
            ApiError::exception(
                401,
                "InvalidTokenException",
                "The access token is not valid.",
            )
        }),
        Ok(Grant::Queue { .. }) | Err(Refusal::Invalid) => Err(ApiError::exception(
            401,
            "InvalidTokenException",
            "The access token is not valid.",
        )),
        Err(Refusal::Expired) => Err(ApiError::exception(
            401,
            "InvalidTokenException",
            "The user 'System:PublicAccess' is not authorized to access this resource: the access token has expired.",
        )),
    }
}

/// The session a queue bearer token grants, if it is valid and the session still active.
pub(crate) fn queue_grant(shared: &Shared, req: &Request) -> Result<(i64, String), ApiError> {
    let token = req.bearer().ok_or(ApiError::Unauthorized)?;
    match shared.signer.verify(token, shared.clock.now()) {
        Ok(Grant::Queue { scale_set, session }) => {
            if lock(&shared.state).session_active(scale_set, &session) {
                Ok((scale_set, session))
            } else {
                Err(ApiError::Unauthorized)
            }
        }
        _ => Err(ApiError::Unauthorized),
    }
}

/// The scope of a runner-admin REST `path` (an organization's, a repository's, an
/// enterprise's) once the caller may manage its runners: without a token the answer is 401
/// before the path is looked at, as GitHub answers.
pub(crate) fn runner_admin_scope(
    shared: &Shared,
    req: &Request,
    path: &str,
) -> Result<Scope, ApiError> {
    if req.rest_token().is_none() {
        return Err(ApiError::requires_authentication());
    }
    let scope = Scope::parse_path(path).ok_or_else(ApiError::rest_not_found)?;
    authorize_runner_admin(shared, req, &scope)?;
    Ok(scope)
}

/// Checks that the caller's PAT or installation token may manage runners of `scope` (GitHub's
/// answers: 401 without or with an unknown token, 404 for an unknown scope, 403 when the token
/// does not cover it).
pub(crate) fn authorize_runner_admin(
    shared: &Shared,
    req: &Request,
    scope: &Scope,
) -> Result<(), ApiError> {
    let token = req
        .rest_token()
        .ok_or_else(ApiError::requires_authentication)?;
    let now = shared.clock.now();
    let pat = lock(&shared.pats).presented(token);
    let state = lock(&shared.state);
    if let Some(pat) = pat {
        if !state.has_scope(scope) {
            return Err(ApiError::rest_not_found());
        }
        let allowed = pat.scopes.is_empty()
            || pat
                .scopes
                .iter()
                .any(|s| Scope::parse_path(s).as_ref() == Some(scope));
        if !allowed {
            return Err(ApiError::Rest {
                status: 403,
                message: "Resource not accessible by personal access token",
            });
        }
        return Ok(());
    }
    let Some((installation, expires)) = state.installation_tokens.get(token).cloned() else {
        return Err(ApiError::bad_credentials());
    };
    if expires <= now {
        return Err(ApiError::bad_credentials());
    }
    if !state.has_scope(scope) {
        return Err(ApiError::rest_not_found());
    }
    let seed = shared
        .config
        .installations
        .iter()
        .find(|i| i.id == installation);
    let covered = scope.account().is_some_and(|account| {
        seed.is_some_and(|s| s.accounts.iter().any(|a| a.eq_ignore_ascii_case(account)))
    });
    if covered {
        Ok(())
    } else {
        Err(ApiError::Rest {
            status: 403,
            message: "Resource not accessible by integration",
        })
    }
}
