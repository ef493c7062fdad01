//! The crate's [`Error`] type, the [`ServiceError`] details of an HTTP error response, the
//! predicates callers branch on, and the [`ErrorClass`] policy classification.

use std::fmt;
use std::time::Duration;

use crate::endpoint::Endpoint;
use crate::exception::{Exception, ExceptionKind, collect_exceptions, session_conflict_owner};
use crate::id::GithubScaleSetId;

/// How much of a non-JSON error body is kept as the message.
const MAX_MESSAGE_CHARS: usize = 1024;

/// Everything that can go wrong in this crate.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The config URL does not point at a repository, organization or enterprise.
    #[error("invalid config url {url:?}: {reason}")]
    InvalidConfigUrl {
        /// The URL as given.
        url: String,
        /// What is wrong with it and what is expected.
        reason: String,
    },
    /// The client configuration is unusable (e.g. GitHub App credentials at enterprise scope).
    #[error("invalid client configuration: {reason}")]
    InvalidConfig {
        /// What is wrong and what to do.
        reason: String,
    },
    /// The custom CA bundle could not be loaded.
    #[error("invalid ca bundle: {reason}")]
    InvalidCaBundle {
        /// What is wrong with the bundle.
        reason: String,
    },
    /// The GitHub App private key could not be used.
    #[error("invalid github app private key: {reason}")]
    InvalidPrivateKey {
        /// What is wrong with the key.
        reason: String,
    },
    /// A request the caller built is invalid (e.g. a scale set without a name).
    #[error("{endpoint}: invalid request: {reason}")]
    InvalidRequest {
        /// The call that was refused before sending.
        endpoint: Endpoint,
        /// What is wrong with the request.
        reason: String,
    },
    /// Signing the GitHub App JWT failed.
    #[error("cannot sign the github app jwt")]
    JwtSigning,
    /// The request could not be sent or the response could not be read.
    #[error("{endpoint}: transport error talking to {host}")]
    Transport {
        /// The call that failed.
        endpoint: Endpoint,
        /// The host that was contacted.
        host: String,
        /// The underlying error (connection, TLS, protocol).
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// No complete response arrived within the per-request timeout.
    #[error(
        "{endpoint}: no response within {timeout:?} from {host} \
         (the per-request timeout; raise it with ClientConfig::with_timeouts if the service is slow)"
    )]
    Timeout {
        /// The call that timed out.
        endpoint: Endpoint,
        /// The host that was contacted.
        host: String,
        /// The timeout that elapsed.
        timeout: Duration,
    },
    /// The server answered with a status the call does not accept.
    #[error(transparent)]
    Service(Box<ServiceError>),
    /// A retryable failure persisted through every attempt (at least two); `last` is the final
    /// failure. The predicates ([`Error::status`], [`Error::is_timeout`], …) and
    /// [`Error::class`] look through it to `last`. With a single-attempt policy
    /// ([`RetryPolicy::never`](crate::RetryPolicy::never)) the failure is returned unwrapped.
    #[error("{endpoint}: giving up after {attempts} attempt(s)")]
    RetriesExhausted {
        /// The call that was retried.
        endpoint: Endpoint,
        /// How many attempts were made.
        attempts: u32,
        /// The failure of the last attempt.
        #[source]
        last: Box<Self>,
    },
    /// A success response whose body is not the expected JSON.
    #[error("{endpoint}: cannot decode the {status} response body")]
    Decode {
        /// The call whose response failed to decode.
        endpoint: Endpoint,
        /// The HTTP status of the response.
        status: u16,
        /// The JSON error.
        #[source]
        source: serde_json::Error,
    },
    /// A request body could not be encoded as JSON.
    #[error("{endpoint}: cannot encode the request body")]
    Encode {
        /// The call whose body failed to encode.
        endpoint: Endpoint,
        /// The JSON error.
        #[source]
        source: serde_json::Error,
    },
    /// Session create answered 2xx with a session the queue calls cannot use (no valid queue
    /// URL or token), and deleting that session failed: it is still open on the server, and
    /// the next create would meet it as a session conflict. Delete it (see
    /// [`Error::open_session`]) before creating another. Classified as retryable.
    #[error(
        "create session: unexpected {status} response: {reason}; the session {session_id} it \
         opened on scale set {scale_set_id} could not be deleted and is still open: delete it \
         with Client::delete_session before creating another"
    )]
    UnusableSessionLeftOpen {
        /// The HTTP status of the create response.
        status: u16,
        /// The scale set the session belongs to.
        scale_set_id: GithubScaleSetId,
        /// The id of the session left open.
        session_id: String,
        /// What is wrong with the session.
        reason: String,
        /// Why deleting it failed.
        #[source]
        cleanup: Box<Self>,
    },
    /// The TLS connection failed: the server's certificate is not trusted (or missing), or the
    /// handshake was refused. Retrying will not change that; fix the trust roots.
    #[error(
        "{endpoint}: TLS with {host} failed (is its certificate signed by a CA this client \
         trusts? give that CA with ClientConfig::with_ca_bundle_pem or use the system trust \
         store with ClientConfig::with_trust_roots)"
    )]
    Tls {
        /// The call that failed.
        endpoint: Endpoint,
        /// The host that was contacted.
        host: String,
        /// The TLS error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// A lookup by name found more than one item with exactly that name: which one is meant
    /// is not for the client to guess. Remove or rename the extra ones.
    #[error("{endpoint}: {count} items are named exactly {name:?}, expected at most one")]
    Ambiguous {
        /// The lookup.
        endpoint: Endpoint,
        /// The name looked up.
        name: String,
        /// How many items carry exactly that name.
        count: usize,
    },
    /// The admin-token refresh this call waited for failed; every caller that waited for the
    /// same refresh gets the same failure. Predicates and [`Error::class`] look through it.
    #[error(transparent)]
    SharedRefresh(std::sync::Arc<Self>),
    /// A success response that is unusable (empty body, missing token or URL, several matches).
    #[error("{endpoint}: unexpected {status} response: {reason}")]
    UnexpectedResponse {
        /// The call that got the response.
        endpoint: Endpoint,
        /// The HTTP status of the response.
        status: u16,
        /// What is wrong with it.
        reason: String,
    },
}

/// Result alias for this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What kind of body an error response carried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorBody {
    /// A JSON document (usually a .NET wrapped exception).
    Json,
    /// A non-JSON body such as `text/plain` "404 page not found"; it became the message.
    Text,
    /// No body at all.
    Empty,
}

/// An HTTP error response from GitHub, the Actions service or the message queue.
#[derive(Debug, Clone)]
pub struct ServiceError {
    /// The call that got the response.
    pub endpoint: Endpoint,
    /// The HTTP status code.
    pub status: u16,
    /// The outer message: the exception's message, the raw text body, or "empty response body".
    pub message: String,
    /// Every exception found, the outer one first, then nested ones.
    pub exceptions: Vec<Exception>,
    /// The `ActivityId` response header (Actions service).
    pub activity_id: Option<String>,
    /// The `X-GitHub-Request-Id` response header.
    pub request_id: Option<String>,
    /// What kind of body the response had.
    pub body: ErrorBody,
    /// The wait a rate-limit answer on the REST token chain advertised (a 403 or 429 with
    /// `Retry-After`, or with `x-ratelimit-remaining: 0` and `x-ratelimit-reset`): such an
    /// answer is retryable, not a refusal.
    pub rate_limit_wait: Option<Duration>,
}

impl ServiceError {
    /// Builds the error from a raw response body, stripping a UTF-8 BOM.
    pub(crate) fn from_response(
        endpoint: Endpoint,
        status: u16,
        body: &[u8],
        activity_id: Option<String>,
        request_id: Option<String>,
    ) -> Self {
        let body = strip_bom(body);
        let text = String::from_utf8_lossy(body);
        let trimmed = text.trim();
        let (message, exceptions, kind) = if trimmed.is_empty() {
            (
                "empty response body".to_owned(),
                Vec::new(),
                ErrorBody::Empty,
            )
        } else {
            match serde_json::from_str::<serde_json::Value>(trimmed) {
                Ok(document) => {
                    let exceptions = collect_exceptions(&document);
                    let message = document
                        .get("message")
                        .and_then(serde_json::Value::as_str)
                        .map(str::to_owned)
                        .unwrap_or_else(|| truncate(trimmed));
                    (message, exceptions, ErrorBody::Json)
                }
                Err(_) => (truncate(trimmed), Vec::new(), ErrorBody::Text),
            }
        };
        Self {
            endpoint,
            status,
            message,
            exceptions,
            activity_id,
            request_id,
            body: kind,
            rate_limit_wait: None,
        }
    }

    /// The outer exception's short type name, if the body named one.
    pub fn exception_name(&self) -> Option<&str> {
        self.exceptions.first().map(|e| e.short_name.as_str())
    }

    /// True when the outer or any nested exception has this kind.
    pub fn has_exception(&self, kind: &ExceptionKind) -> bool {
        self.exceptions.iter().any(|e| &e.kind == kind)
    }

    /// The first exception (outer or nested) with this kind.
    pub fn find_exception(&self, kind: &ExceptionKind) -> Option<&Exception> {
        self.exceptions.iter().find(|e| &e.kind == kind)
    }

    /// True when the outer or any nested exception has exactly this short type name.
    pub fn has_exception_named(&self, short_name: &str) -> bool {
        self.exceptions.iter().any(|e| e.short_name == short_name)
    }
}

impl fmt::Display for ServiceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: status {}", self.endpoint, self.status)?;
        if let Some(name) = self.exception_name() {
            write!(f, ": {name}")?;
        }
        write!(f, ": {}", self.message)?;
        write!(
            f,
            " (activity_id={}, github_request_id={})",
            self.activity_id.as_deref().unwrap_or("-"),
            self.request_id.as_deref().unwrap_or("-")
        )
    }
}

impl std::error::Error for ServiceError {}

/// A meaningful "no" from GitHub that callers branch on.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Refusal {
    /// A scale set with this name already exists in the runner group.
    ScaleSetExists,
    /// The scale set does not exist (any more).
    ScaleSetNotFound,
    /// Another message session is active; `owner` is set when the message names it.
    SessionConflict {
        /// The owner of the active session, when the message names one.
        owner: Option<String>,
    },
    /// The session is expired or unknown to the server.
    SessionExpiredOrUnknown,
    /// A runner with this name already exists.
    AgentExists,
    /// The runner does not exist.
    AgentNotFound,
    /// The runner is busy with a job; try again later.
    JobStillRunning,
    /// The message-queue token was rejected even after a session refresh.
    QueueTokenExpired,
}

/// How a caller's policy should treat an error.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorClass {
    /// Transient (transport, timeout, 429, 5xx, rejected admin token, 401/403 from
    /// `runner-registration`): try again later.
    Retryable,
    /// GitHub said no for a reason the caller can act on.
    Refusal(Refusal),
    /// Configuration or request problems that retrying will not fix.
    Fatal,
}

impl Error {
    /// The failure itself, looking through [`Error::SharedRefresh`] (a failed admin-token
    /// refresh shared by every caller that waited for it); match variants on this.
    pub fn unshared(&self) -> &Self {
        match self {
            Self::SharedRefresh(shared) => shared.unshared(),
            other => other,
        }
    }

    /// The HTTP error details, looking through [`Error::RetriesExhausted`] and
    /// [`Error::SharedRefresh`].
    pub fn service_error(&self) -> Option<&ServiceError> {
        match self.unshared() {
            Self::Service(service) => Some(service),
            Self::RetriesExhausted { last, .. } => last.service_error(),
            _ => None,
        }
    }

    /// The HTTP status of an error response, if there was one.
    pub fn status(&self) -> Option<u16> {
        match self.unshared() {
            Self::Decode { status, .. }
            | Self::UnexpectedResponse { status, .. }
            | Self::UnusableSessionLeftOpen { status, .. } => Some(*status),
            _ => self.service_error().map(|s| s.status),
        }
    }

    /// The failure of the last attempt: `last` of [`Error::RetriesExhausted`], `self` otherwise.
    pub fn last_attempt(&self) -> &Self {
        match self.unshared() {
            Self::RetriesExhausted { last, .. } => last.last_attempt(),
            other => other,
        }
    }

    /// True when no complete response arrived within the per-request timeout (on the last
    /// attempt, looking through [`Error::RetriesExhausted`]). A create that timed out may still
    /// have succeeded on the server: look before retrying it.
    pub fn is_timeout(&self) -> bool {
        matches!(self.last_attempt(), Self::Timeout { .. })
    }

    /// True when the request could not be sent or its response not read (connection, TLS,
    /// protocol), on the last attempt, looking through [`Error::RetriesExhausted`].
    pub fn is_transport(&self) -> bool {
        matches!(self.last_attempt(), Self::Transport { .. })
    }

    /// The call that failed, when the error came from a call.
    pub fn endpoint(&self) -> Option<Endpoint> {
        match self.unshared() {
            Self::Transport { endpoint, .. }
            | Self::Tls { endpoint, .. }
            | Self::Ambiguous { endpoint, .. }
            | Self::Timeout { endpoint, .. }
            | Self::RetriesExhausted { endpoint, .. }
            | Self::Decode { endpoint, .. }
            | Self::Encode { endpoint, .. }
            | Self::InvalidRequest { endpoint, .. }
            | Self::UnexpectedResponse { endpoint, .. } => Some(*endpoint),
            Self::Service(service) => Some(service.endpoint),
            Self::UnusableSessionLeftOpen { .. } => Some(Endpoint::CreateSession),
            _ => None,
        }
    }

    /// The session a create left open on the server ([`Error::UnusableSessionLeftOpen`]), as
    /// `(scale_set_id, session_id)`: delete it before creating another.
    pub fn open_session(&self) -> Option<(GithubScaleSetId, &str)> {
        match self.unshared() {
            Self::UnusableSessionLeftOpen {
                scale_set_id,
                session_id,
                ..
            } => Some((*scale_set_id, session_id.as_str())),
            _ => None,
        }
    }

    /// The outer exception's short type name, if an error body named one.
    pub fn exception_name(&self) -> Option<&str> {
        self.service_error().and_then(ServiceError::exception_name)
    }

    /// The `ActivityId` header of the error response.
    pub fn activity_id(&self) -> Option<&str> {
        self.service_error().and_then(|s| s.activity_id.as_deref())
    }

    /// The `X-GitHub-Request-Id` header of the error response.
    pub fn request_id(&self) -> Option<&str> {
        self.service_error().and_then(|s| s.request_id.as_deref())
    }

    fn has(&self, kind: &ExceptionKind) -> bool {
        self.service_error().is_some_and(|s| s.has_exception(kind))
    }

    /// `RunnerScaleSetExistsException`, outer or nested. An unrelated 400 is not "exists".
    pub fn is_scale_set_exists(&self) -> bool {
        self.has(&ExceptionKind::RunnerScaleSetExists)
    }

    /// `RunnerScaleSetNotFoundException`, outer or nested.
    pub fn is_scale_set_not_found(&self) -> bool {
        self.has(&ExceptionKind::RunnerScaleSetNotFound)
    }

    /// `RunnerScaleSetSessionConflictException` (another session is active), or a 409 from
    /// session create whose body names no exception (text/plain or empty).
    pub fn is_session_conflict(&self) -> bool {
        self.has(&ExceptionKind::RunnerScaleSetSessionConflict)
            || self.is_bare_409(Endpoint::CreateSession)
    }

    /// A 409 from `endpoint` whose body carries no exception: the status is all there is to go
    /// on, and on these endpoints a conflict has one meaning.
    fn is_bare_409(&self, endpoint: Endpoint) -> bool {
        self.service_error()
            .is_some_and(|s| s.status == 409 && s.endpoint == endpoint && s.exceptions.is_empty())
    }

    /// The owner named by a session-conflict message ("…active session for owner X").
    pub fn session_conflict_owner(&self) -> Option<String> {
        self.service_error()?
            .find_exception(&ExceptionKind::RunnerScaleSetSessionConflict)
            .and_then(|e| session_conflict_owner(&e.message))
    }

    /// The session is expired or unknown: `RunnerScaleSetSessionExpiredException`, or a 404 from
    /// refreshing or deleting a session (the server evicted it).
    pub fn is_session_expired_or_unknown(&self) -> bool {
        if self.has(&ExceptionKind::RunnerScaleSetSessionExpired) {
            return true;
        }
        self.service_error().is_some_and(|s| {
            s.status == 404
                && matches!(
                    s.endpoint,
                    Endpoint::RefreshSession | Endpoint::DeleteSession
                )
                && !s.has_exception(&ExceptionKind::RunnerScaleSetNotFound)
        })
    }

    /// Whether GitHub's answer says the message session `session` is gone, and how it says
    /// so: the one reading of "the session is gone" for every caller. The callers differ on
    /// purpose in how much they take as proof, and say so where they ask: the adoption machine
    /// is told a session is gone only on [`SessionGone::names_the_session`] evidence (a bare
    /// 404 may be a router's), while a listener that is about to open a new session anyway
    /// takes any of them.
    pub fn session_gone(&self, session: &str) -> Option<SessionGone> {
        let service = self.service_error()?;
        if service.has_exception(&ExceptionKind::RunnerScaleSetSessionExpired) {
            return Some(SessionGone::Expired);
        }
        if matches!(service.status, 400 | 404)
            && !session.is_empty()
            && service.message.contains(session)
        {
            return Some(SessionGone::Named);
        }
        if service.status == 404
            && matches!(
                service.endpoint,
                Endpoint::RefreshSession
                    | Endpoint::DeleteSession
                    | Endpoint::GetMessage
                    | Endpoint::DeleteMessage
            )
            && !service.has_exception(&ExceptionKind::RunnerScaleSetNotFound)
        {
            return Some(SessionGone::Evicted);
        }
        self.is_queue_token_expired()
            .then_some(SessionGone::QueueTokenExpired)
    }

    /// `AgentExistsException`: a runner with that name is registered; also a 409 from the JIT
    /// config call whose body names no exception (text/plain or empty).
    pub fn is_agent_exists(&self) -> bool {
        self.has(&ExceptionKind::AgentExists) || self.is_bare_409(Endpoint::GenerateJitConfig)
    }

    /// `AgentNotFoundException`: no such runner.
    pub fn is_agent_not_found(&self) -> bool {
        self.has(&ExceptionKind::AgentNotFound)
    }

    /// `JobStillRunningException`: the runner is busy; remove it later.
    pub fn is_job_still_running(&self) -> bool {
        self.has(&ExceptionKind::JobStillRunning)
    }

    /// A 401 from the message queue or acquirejobs that a session refresh did not cure.
    pub fn is_queue_token_expired(&self) -> bool {
        self.service_error()
            .is_some_and(|s| s.status == 401 && s.endpoint.uses_queue_token())
    }

    /// `InvalidTokenException` or another 401 from the Actions service admin API.
    pub fn is_admin_token_rejected(&self) -> bool {
        self.service_error().is_some_and(|s| {
            s.status == 401
                && !s.endpoint.uses_queue_token()
                && !matches!(
                    s.endpoint,
                    Endpoint::InstallationToken
                        | Endpoint::RegistrationToken
                        | Endpoint::RunnerRegistration
                        | Endpoint::RunnerDownloads
                )
        })
    }

    /// The refusal this error represents, if any.
    pub fn refusal(&self) -> Option<Refusal> {
        if self.is_scale_set_exists() {
            Some(Refusal::ScaleSetExists)
        } else if self.is_session_conflict() {
            Some(Refusal::SessionConflict {
                owner: self.session_conflict_owner(),
            })
        } else if self.is_scale_set_not_found() {
            Some(Refusal::ScaleSetNotFound)
        } else if self.is_session_expired_or_unknown() {
            Some(Refusal::SessionExpiredOrUnknown)
        } else if self.is_agent_exists() {
            Some(Refusal::AgentExists)
        } else if self.is_agent_not_found() {
            Some(Refusal::AgentNotFound)
        } else if self.is_job_still_running() {
            Some(Refusal::JobStillRunning)
        } else if self.is_queue_token_expired() {
            Some(Refusal::QueueTokenExpired)
        } else {
            None
        }
    }

    /// Classifies the error for retry policy: refusals first, then transient failures.
    pub fn class(&self) -> ErrorClass {
        if let Some(refusal) = self.refusal() {
            return ErrorClass::Refusal(refusal);
        }
        match self.unshared() {
            Self::Transport { .. }
            | Self::Timeout { .. }
            | Self::RetriesExhausted { .. }
            | Self::UnexpectedResponse { .. }
            | Self::UnusableSessionLeftOpen { .. } => ErrorClass::Retryable,
            Self::Service(service)
                if crate::retry::is_retryable_status(service.status)
                    || service.rate_limit_wait.is_some()
                    || service
                        .endpoint
                        .also_retried_statuses()
                        .contains(&service.status)
                    || self.is_admin_token_rejected() =>
            {
                ErrorClass::Retryable
            }
            _ => ErrorClass::Fatal,
        }
    }
}

impl From<ServiceError> for Error {
    fn from(value: ServiceError) -> Self {
        Self::Service(Box::new(value))
    }
}

/// Removes a leading UTF-8 byte-order mark.
pub(crate) fn strip_bom(body: &[u8]) -> &[u8] {
    body.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(body)
}

fn truncate(text: &str) -> String {
    if text.chars().count() <= MAX_MESSAGE_CHARS {
        text.to_owned()
    } else {
        let mut cut: String = text.chars().take(MAX_MESSAGE_CHARS).collect();
        cut.push('…');
        cut
    }
}

#[cfg(test)]
mod tests;

/// How GitHub's answer says a message session is gone ([`Error::session_gone`]), strongest
/// evidence first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum SessionGone {
    /// `RunnerScaleSetSessionExpiredException`, outer or nested.
    Expired,
    /// A 400 or 404 whose message names this very session id.
    Named,
    /// A 404 from a session's own endpoint (refresh, delete, get or acknowledge a message)
    /// that names no missing scale set: the server evicted the session, or a router answered.
    Evicted,
    /// A 401 from the message queue that a session refresh did not cure: the session's queue
    /// token is dead.
    QueueTokenExpired,
}

impl SessionGone {
    /// Whether GitHub named this session as gone ([`Self::Expired`], [`Self::Named`]): proof
    /// enough to tell the adoption machine; a bare status is not.
    pub fn names_the_session(self) -> bool {
        matches!(self, Self::Expired | Self::Named)
    }
}
