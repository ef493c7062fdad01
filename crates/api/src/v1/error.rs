//! The one error body every `/api/v1` failure answers with.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// Every error response: a stable `code` to branch on, a `message` for people (what failed,
/// why, what to do), and the `request_id` that the server's log line for the request carries
/// (also sent as the `x-request-id` header).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ErrorBody {
    /// The stable machine-readable code (see [`ErrorCode`]).
    pub code: ErrorCode,
    /// What went wrong and what to do, for people. Not stable: do not parse it.
    pub message: String,
    /// The request's id, as logged by the server.
    pub request_id: String,
}

/// The stable error codes, with the HTTP status each is sent with. New codes may be added;
/// clients should treat an unknown code by its status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ErrorCode {
    /// 401: no `Authorization: Bearer <token>` header, or not a bearer token.
    MissingToken,
    /// 401: the token is not one the server issued (or it was revoked).
    InvalidToken,
    /// 403: the token is valid but may not do this.
    Forbidden,
    /// 403: the API token's scope (`read`, `operate`, `admin`) is narrower than the route
    /// needs; `message` names both. Use a token of the scope named.
    InsufficientScope,
    /// 400: the body is not JSON, has a wrong type, a missing or an unknown field.
    InvalidBody,
    /// 400: a well-formed value is not allowed (a bad name, a bad URL, a range).
    InvalidInput,
    /// 400: a path or query parameter is malformed (not a UUID, not a boolean).
    InvalidParameter,
    /// 415: the body is not `application/json`.
    UnsupportedMediaType,
    /// 413: the body is larger than the server's limit.
    PayloadTooLarge,
    /// 404: no such resource (or no such route).
    NotFound,
    /// 405: the route exists but not with this method.
    MethodNotAllowed,
    /// 409: it already exists (a duplicate name or key).
    AlreadyExists,
    /// 409: it is still used by something else (credentials by an entity, an entity by a
    /// scale set).
    InUse,
    /// 409: the `generation` given is not the stored one: someone changed it meanwhile.
    /// Read it again and retry.
    StaleGeneration,
    /// 409: the scale set still has instances; drain it first.
    NotDrained,
    /// 409: a worker holds the scale set's lease; disable it first.
    LeaseHeld,
    /// 409: the scale set is declared in the configuration file: edit it there.
    Declared,
    /// 409: the scale set is disabled (or draining), so there is nothing to retry: enable it
    /// first.
    Disabled,
    /// 403: an instance token whose instance has finished bootstrapping (reported `idle` or
    /// `failed`): the metadata and callbacks are closed to it, as GARM closes them.
    BootstrapFinished,
    /// 409: a registration token was asked for by an instance that was given a JIT config
    /// (every scale-set runner is): fetch the JIT files instead.
    JitConfigured,
    /// 409: the fleet plan's digest is not what planning gives now: the world changed since
    /// the plan was reviewed. Plan again, review, apply the new digest.
    StalePlan,
    /// 409: this server runs no control loop, so it has no providers to find and delete
    /// instances with: decommission on a server started with `--with-worker`, or with
    /// `scaleset-worker decommission --config FILE`.
    NoProviders,
    /// 502: GitHub answered with an error or could not be reached.
    #[serde(rename = "github")]
    GitHub,
    /// 503: a dependency does not answer (the database, a compute provider) or the server is
    /// stopping; retry later.
    Unavailable,
    /// 500: a bug or corrupt data; the log line with the request id says more.
    Internal,
}

impl ErrorCode {
    /// The wire text of the code.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::MissingToken => "missing_token",
            Self::InvalidToken => "invalid_token",
            Self::Forbidden => "forbidden",
            Self::InsufficientScope => "insufficient_scope",
            Self::InvalidBody => "invalid_body",
            Self::InvalidInput => "invalid_input",
            Self::InvalidParameter => "invalid_parameter",
            Self::UnsupportedMediaType => "unsupported_media_type",
            Self::PayloadTooLarge => "payload_too_large",
            Self::NotFound => "not_found",
            Self::MethodNotAllowed => "method_not_allowed",
            Self::AlreadyExists => "already_exists",
            Self::InUse => "in_use",
            Self::StaleGeneration => "stale_generation",
            Self::NotDrained => "not_drained",
            Self::LeaseHeld => "lease_held",
            Self::Declared => "declared",
            Self::Disabled => "disabled",
            Self::StalePlan => "stale_plan",
            Self::NoProviders => "no_providers",
            Self::BootstrapFinished => "bootstrap_finished",
            Self::JitConfigured => "jit_configured",
            Self::GitHub => "github",
            Self::Unavailable => "unavailable",
            Self::Internal => "internal",
        }
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
