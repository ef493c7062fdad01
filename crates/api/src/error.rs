//! [`ApiError`]: every way a request can fail, mapped to its status and stable code in one
//! function ([`ApiError::code`], whose [`ErrorCode`] knows its status), and rendered as the
//! one JSON body ([`ErrorBody`]) with the request's id. A failure of the control crate's
//! operations becomes an [`ApiError`] through the one `From<scaleset_control::Error>`, and its
//! code follows from its [`ErrorClass`] alone ([`class_code`]): the same failure answers
//! the same on every route.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use scaleset_control::{Conflict, Dependency, ErrorClass};

use crate::v1::{ErrorBody, ErrorCode};

/// A failed request. The `Display` text is the body's `message`: what failed, the cause, and
/// what to do.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// No bearer token.
    #[error(
        "this endpoint needs an API token: send `Authorization: Bearer <token>` (create one with \
         `scaleset-server token create NAME`)"
    )]
    MissingToken,
    /// A token the server does not know.
    #[error(
        "the API token is not valid (unknown or revoked); create a new one with \
         `scaleset-server token create NAME`"
    )]
    InvalidToken,
    /// An instance-facing route without an instance token.
    #[error(
        "instance endpoints need the instance's own token: send `Authorization: Bearer \
         <instance-token>` with the `instance-token` of the bootstrap parameters"
    )]
    MissingInstanceToken,
    /// An instance token the server does not know, or one that expired.
    #[error(
        "the instance token is not valid: unknown, replaced, or expired (it lasts the scale \
         set's bootstrap timeout){hint}; an instance that outlived it is removed and replaced"
    )]
    InvalidInstanceToken {
        /// A hint for a common mistake (an API token sent here), or empty.
        hint: &'static str,
    },
    /// The instance has finished bootstrapping; its token opens nothing more.
    #[error(
        "instance {instance:?} has finished bootstrapping (it reported {status:?}); its token \
         no longer opens the metadata or callbacks"
    )]
    BootstrapFinished {
        /// The instance.
        instance: String,
        /// What it reported.
        status: &'static str,
    },
    /// A registration token was asked for by an instance with a JIT config.
    #[error(
        "instance {instance:?} was given a JIT config, not a registration token (scale-set \
         runners register only just-in-time): fetch /api/v1/metadata/credentials/runner, \
         /credentials/credentials and /credentials/credentials_rsaparams instead"
    )]
    JitConfigured {
        /// The instance.
        instance: String,
    },
    /// A valid token that may not do this.
    #[error("this token may not {action}")]
    Forbidden {
        /// What was attempted.
        action: String,
    },
    /// An API token whose scope is narrower than the route needs.
    #[error(
        "API token {token:?} has scope `{scope}`, and {route} needs `{needed}`: use a token of \
         scope `{needed}` (`scaleset-server token create NAME --scope {needed}` on the server's \
         host)"
    )]
    InsufficientScope {
        /// The token's name.
        token: String,
        /// Its scope.
        scope: scaleset_store::ApiScope,
        /// The scope the route needs.
        needed: scaleset_store::ApiScope,
        /// The method and route (`POST /api/v1/scale-sets/{id}/drain`).
        route: String,
    },
    /// The body is not the JSON the route takes.
    #[error("the request body is not valid: {reason}")]
    InvalidBody {
        /// What the JSON decoder found (type, field, position).
        reason: String,
    },
    /// A value is not allowed.
    #[error("invalid {field}: {reason}")]
    InvalidInput {
        /// The field (`name`, `labels[2]`, `endpoint.base_url`).
        field: String,
        /// Why, and what is allowed.
        reason: String,
    },
    /// A path or query parameter is malformed.
    #[error("invalid parameter: {reason}")]
    InvalidParameter {
        /// What is wrong.
        reason: String,
    },
    /// The body is not JSON.
    #[error("send the body as JSON with `Content-Type: application/json`")]
    UnsupportedMediaType,
    /// The body is over the limit.
    #[error("the request body is larger than the limit of {limit} bytes")]
    PayloadTooLarge {
        /// The limit in bytes.
        limit: usize,
    },
    /// No such resource.
    #[error("{what} not found")]
    NotFound {
        /// What was looked for (`scale set 6f1…`).
        what: String,
    },
    /// No such route.
    #[error("no route {path}; the API is under /api/v1 (see /api/v1/openapi.json)")]
    NoRoute {
        /// The path asked for.
        path: String,
    },
    /// The route does not take this method.
    #[error("this route does not take that method (see /api/v1/openapi.json)")]
    MethodNotAllowed,
    /// A duplicate.
    #[error("{what} already exists")]
    AlreadyExists {
        /// What (`credentials "main"`).
        what: String,
    },
    /// Still referenced.
    #[error("{what} is still in use: {remedy}")]
    InUse {
        /// What.
        what: String,
        /// What to do.
        remedy: String,
    },
    /// The generation precondition failed.
    #[error(
        "scale set {id} is at generation {current}, not {given}: it changed since it was read; \
         read it again and retry with the new generation"
    )]
    StaleGeneration {
        /// The scale set.
        id: String,
        /// The generation the request carried.
        given: i64,
        /// The stored generation.
        current: i64,
    },
    /// A scale set with instances cannot be deleted on GitHub.
    #[error(
        "scale set {name} ({id}) still has {instances} instance(s); drain it first: \
         `scalesetctl scale-set drain {name}` (idle runners are retired, busy ones finish their \
         jobs; run it again to see what is left), then delete it again once drained"
    )]
    NotDrained {
        /// The scale set.
        id: String,
        /// Its name, for the command to run.
        name: String,
        /// How many instances are recorded.
        instances: usize,
    },
    /// A worker serves the scale set.
    #[error(
        "scale set {name} ({id}) is being served by worker {holder:?}; drain it first: \
         `scalesetctl scale-set drain {name}` (the worker lets it go once its instances are \
         gone), then delete it again once drained"
    )]
    LeaseHeld {
        /// The scale set.
        id: String,
        /// Its name, for the command to run.
        name: String,
        /// The lease holder.
        holder: String,
    },
    /// A retry asked of a scale set that is not served (disabled, or draining).
    #[error(
        "scale set {name} ({id}) is disabled (or draining), so nothing is served to retry; \
         enable it first (`scalesetctl scale-set update {name} --enabled true`): a scale set \
         enabled again starts at once, without a back-off"
    )]
    NotServed {
        /// The scale set.
        id: String,
        /// Its name, for the command to run.
        name: String,
    },
    /// A delete through the API of a scale set the configuration file declares.
    #[error(
        "scale set {scale_set:?} is declared in the configuration file {file} (scale_set[{index}]), \
         which every start applies: deleted through the API it would be stored again at the \
         next start. Remove scale_set[{index}] from that file and restart, then delete it \
         (to stop serving it meanwhile: `scalesetctl scale-set drain {scale_set}`)"
    )]
    DeclaredDelete {
        /// The scale set's name.
        scale_set: String,
        /// The configuration file that declares it.
        file: String,
        /// Its index among the file's `[[scale_set]]` tables.
        index: usize,
    },
    /// A change through the API to a scale set the configuration file declares.
    #[error("{0}")]
    Declared(scaleset_fleet::DeclaredEdit),
    /// A control operation failed (fleet plan or apply, decommission, a delete on GitHub,
    /// the ours-undeclared listing); its class decides the code ([`control_code`]). The
    /// message is the control error's chain: what failed, the cause, what to do.
    #[error("{}", chain(.0))]
    Control(scaleset_control::Error),
    /// A fleet operation failed in a way only a fleet operation can (a stale plan, a declared
    /// fleet that breaks the spec rules, a scale set still served); classified with the loop's
    /// classes, so its code comes from the same table ([`class_code`]).
    #[error("{}", chain(.0))]
    Fleet(scaleset_fleet::Error),
    /// A decommission asked of a server without the control loop's providers.
    #[error(
        "this server runs no worker, so it has no providers to find and delete this \
         controller's instances with (a decommission without them would leave them running): \
         run it on a server started with --with-worker, or use `scaleset-worker decommission \
         --config FILE` on a worker's host"
    )]
    NoProviders,
    /// GitHub failed.
    #[error("github call failed while {during}: {reason}")]
    GitHub {
        /// What the server was doing.
        during: &'static str,
        /// The client's error chain.
        reason: String,
    },
    /// The database is unavailable.
    #[error("the database is unavailable while {during}: {reason}; retry shortly")]
    Unavailable {
        /// What the server was doing.
        during: &'static str,
        /// The store's error chain.
        reason: String,
    },
    /// A bug or corrupt data.
    #[error("internal error while {during}: {reason}")]
    Internal {
        /// What the server was doing.
        during: &'static str,
        /// The error chain.
        reason: String,
    },
}

impl ApiError {
    /// The stable code; with [`status`] the one place an error meets HTTP.
    pub fn code(&self) -> ErrorCode {
        match self {
            Self::MissingToken => ErrorCode::MissingToken,
            Self::InvalidToken => ErrorCode::InvalidToken,
            Self::Forbidden { .. } => ErrorCode::Forbidden,
            Self::InsufficientScope { .. } => ErrorCode::InsufficientScope,
            Self::MissingInstanceToken => ErrorCode::MissingToken,
            Self::InvalidInstanceToken { .. } => ErrorCode::InvalidToken,
            Self::BootstrapFinished { .. } => ErrorCode::BootstrapFinished,
            Self::JitConfigured { .. } => ErrorCode::JitConfigured,
            Self::InvalidBody { .. } => ErrorCode::InvalidBody,
            Self::InvalidInput { .. } => ErrorCode::InvalidInput,
            Self::InvalidParameter { .. } => ErrorCode::InvalidParameter,
            Self::UnsupportedMediaType => ErrorCode::UnsupportedMediaType,
            Self::PayloadTooLarge { .. } => ErrorCode::PayloadTooLarge,
            Self::NotFound { .. } | Self::NoRoute { .. } => ErrorCode::NotFound,
            Self::MethodNotAllowed => ErrorCode::MethodNotAllowed,
            Self::AlreadyExists { .. } => ErrorCode::AlreadyExists,
            Self::InUse { .. } => ErrorCode::InUse,
            Self::StaleGeneration { .. } => ErrorCode::StaleGeneration,
            Self::NotDrained { .. } => ErrorCode::NotDrained,
            Self::LeaseHeld { .. } => ErrorCode::LeaseHeld,
            Self::Declared(_) | Self::DeclaredDelete { .. } => ErrorCode::Declared,
            Self::NotServed { .. } => ErrorCode::Disabled,
            Self::Control(error) => control_code(error),
            Self::Fleet(error) => class_code(error.class()),
            Self::NoProviders => ErrorCode::NoProviders,
            Self::GitHub { .. } => ErrorCode::GitHub,
            Self::Unavailable { .. } => ErrorCode::Unavailable,
            Self::Internal { .. } => ErrorCode::Internal,
        }
    }

    /// A store error met while `during`, by class: not found, stale and conflicts as their own
    /// answers (a conflict as `already_exists`; call sites that delete map it to `in_use`),
    /// retryable ones as 503, the rest as 500.
    pub fn store(
        during: &'static str,
        what: impl FnOnce() -> String,
    ) -> impl FnOnce(scaleset_store::Error) -> Self {
        move |error| {
            if error.is_not_found() {
                return Self::NotFound { what: what() };
            }
            if error.is_conflict() {
                return Self::AlreadyExists { what: what() };
            }
            let reason = chain(&error);
            match error.class() {
                scaleset_store::ErrorClass::Retryable => Self::Unavailable { during, reason },
                scaleset_store::ErrorClass::Refusal | scaleset_store::ErrorClass::Fatal => {
                    Self::Internal { during, reason }
                }
            }
        }
    }
}

/// Every control failure enters the API here; [`ApiError::code`] gives its code by class.
impl From<scaleset_control::Error> for ApiError {
    fn from(error: scaleset_control::Error) -> Self {
        Self::Control(error)
    }
}

/// Every fleet failure enters the API here: a loop failure it carries is a control failure,
/// the rest keep the fleet's own words and take their code by class.
impl From<scaleset_fleet::Error> for ApiError {
    fn from(error: scaleset_fleet::Error) -> Self {
        match error {
            scaleset_fleet::Error::Control(error) => Self::Control(error),
            error => Self::Fleet(error),
        }
    }
}

/// The code of a control failure: its class's ([`class_code`]).
pub fn control_code(error: &scaleset_control::Error) -> ErrorCode {
    class_code(error.class())
}

/// The code of each class of control failure, and through [`status`] its status:
///
/// | class | status | code |
/// | --- | --- | --- |
/// | `Invalid` | 400 | `invalid_input` |
/// | `Conflict(StalePlan)` | 409 | `stale_plan` |
/// | `Conflict(LeaseHeld)` | 409 | `lease_held` (as a scale-set delete answers it) |
/// | `Conflict(Changed)`, `Refusal` | 409 | `in_use` |
/// | `Retryable`/`Upstream` of GitHub | 502 | `github` |
/// | `Retryable`/`Upstream` of a provider or the database, `Stopping` | 503 | `unavailable` |
/// | `Internal` | 500 | `internal` |
pub fn class_code(class: ErrorClass) -> ErrorCode {
    match class {
        ErrorClass::Invalid => ErrorCode::InvalidInput,
        ErrorClass::Conflict(Conflict::StalePlan) => ErrorCode::StalePlan,
        ErrorClass::Conflict(Conflict::LeaseHeld) => ErrorCode::LeaseHeld,
        ErrorClass::Conflict(Conflict::Changed) | ErrorClass::Refusal => ErrorCode::InUse,
        ErrorClass::Retryable(Dependency::GitHub) | ErrorClass::Upstream(Dependency::GitHub) => {
            ErrorCode::GitHub
        }
        ErrorClass::Retryable(Dependency::Provider | Dependency::Database)
        | ErrorClass::Upstream(Dependency::Provider | Dependency::Database)
        | ErrorClass::Stopping => ErrorCode::Unavailable,
        ErrorClass::Internal => ErrorCode::Internal,
    }
}

/// The HTTP status of every code: the one mapping from errors to statuses.
pub fn status(code: ErrorCode) -> StatusCode {
    match code {
        ErrorCode::MissingToken | ErrorCode::InvalidToken => StatusCode::UNAUTHORIZED,
        ErrorCode::Forbidden | ErrorCode::InsufficientScope | ErrorCode::BootstrapFinished => {
            StatusCode::FORBIDDEN
        }
        ErrorCode::InvalidBody | ErrorCode::InvalidInput | ErrorCode::InvalidParameter => {
            StatusCode::BAD_REQUEST
        }
        ErrorCode::UnsupportedMediaType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
        ErrorCode::PayloadTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
        ErrorCode::NotFound => StatusCode::NOT_FOUND,
        ErrorCode::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
        ErrorCode::AlreadyExists
        | ErrorCode::InUse
        | ErrorCode::StaleGeneration
        | ErrorCode::NotDrained
        | ErrorCode::LeaseHeld
        | ErrorCode::Declared
        | ErrorCode::Disabled
        | ErrorCode::StalePlan
        | ErrorCode::NoProviders
        | ErrorCode::JitConfigured => StatusCode::CONFLICT,
        ErrorCode::GitHub => StatusCode::BAD_GATEWAY,
        ErrorCode::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

/// An error on its way out: rendered by the request-id layer, which knows the id.
#[derive(Debug, Clone)]
pub(crate) struct Failure {
    pub(crate) code: ErrorCode,
    pub(crate) message: String,
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let code = self.code();
        let message = self.to_string();
        if matches!(
            code,
            ErrorCode::Internal | ErrorCode::Unavailable | ErrorCode::GitHub
        ) {
            tracing::error!(code = %code, error = %message, "request failed");
        } else {
            tracing::info!(code = %code, error = %message, "request refused");
        }
        let mut response = status(code).into_response();
        response.extensions_mut().insert(Failure { code, message });
        response
    }
}

/// Renders the body of a failed response; called by the request-id layer.
pub(crate) fn render(failure: &Failure, request_id: &str, status: StatusCode) -> Response {
    let body = ErrorBody {
        code: failure.code,
        message: failure.message.clone(),
        request_id: request_id.to_owned(),
    };
    (status, axum::Json(body)).into_response()
}

pub(crate) use scaleset_store::chain;

#[cfg(test)]
mod tests;
