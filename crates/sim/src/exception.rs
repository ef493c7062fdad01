//! The errors the simulated services answer, and the one function that turns them into status
//! codes and bodies (.NET wrapped exceptions for the Actions service, GitHub REST error documents,
//! router-level text/plain 404s, body-less 401s), applying the error-shape faults.

use serde_json::{Value, json};

use crate::fault::{Faults, NestedStyle};
use crate::state::StateError;

/// An error answer of the simulated GitHub.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ApiError {
    /// An Actions-service .NET exception, e.g. `RunnerScaleSetExistsException`.
    Exception {
        /// HTTP status.
        status: u16,
        /// The short exception name (`typeKey`).
        name: &'static str,
        /// The human message.
        message: String,
    },
    /// A GitHub REST error document (`{"message", "documentation_url"}`).
    Rest {
        /// HTTP status.
        status: u16,
        /// The message.
        message: &'static str,
    },
    /// The broker's router-level `404 page not found` (text/plain).
    RouterNotFound,
    /// A 401 with no body (the message queue's answer to a bad or expired token).
    Unauthorized,
    /// A control-API error (`{"error": …}`).
    Control {
        /// HTTP status.
        status: u16,
        /// What went wrong.
        message: String,
    },
}

impl ApiError {
    /// An Actions-service exception.
    pub(crate) fn exception(status: u16, name: &'static str, message: impl Into<String>) -> Self {
        Self::Exception {
            status,
            name,
            message: message.into(),
        }
    }

    /// A control-API error.
    pub(crate) fn control(status: u16, message: impl Into<String>) -> Self {
        Self::Control {
            status,
            message: message.into(),
        }
    }

    /// GitHub REST's 401 for an unknown or expired credential.
    pub(crate) fn bad_credentials() -> Self {
        Self::Rest {
            status: 401,
            message: "Bad credentials",
        }
    }

    /// GitHub REST's 401 for a call without a token.
    pub(crate) fn requires_authentication() -> Self {
        Self::Rest {
            status: 401,
            message: "Requires authentication",
        }
    }

    /// GitHub REST's 404.
    pub(crate) fn rest_not_found() -> Self {
        Self::Rest {
            status: 404,
            message: "Not Found",
        }
    }
}

impl From<StateError> for ApiError {
    /// GitHub's answer to each refusal of the simulated world (the control API's for the
    /// refusals only control operations meet).
    fn from(error: StateError) -> Self {
        match error {
            StateError::RunnerGroupExists { scope, name } => Self::control(
                409,
                format!("runner group {name:?} already exists in {scope}"),
            ),
            StateError::RunnerGroupNotFound(id) => Self::exception(
                404,
                "RunnerGroupNotFoundException",
                format!("Runner group with id {id} was not found."),
            ),
            StateError::ScaleSetNotFound(id) => Self::exception(
                404,
                "RunnerScaleSetNotFoundException",
                format!("No RunnerScaleSet found with identifier: {id}."),
            ),
            StateError::EmptyScaleSetName => Self::exception(
                400,
                "InvalidRunnerScaleSetException",
                "The runner scale set name must not be empty.",
            ),
            StateError::ScaleSetExists { name } => Self::exception(
                400,
                "RunnerScaleSetExistsException",
                format!(
                    "A runner scale set with name '{name}' already exists in this runner group."
                ),
            ),
            StateError::SessionConflict { scale_set, owner } => Self::exception(
                409,
                "RunnerScaleSetSessionConflictException",
                match owner {
                    Some(owner) => format!(
                        "The actions runner scaleset {scale_set} already has an active session for owner {owner}."
                    ),
                    None => format!(
                        "The actions runner scaleset {scale_set} already has an active session."
                    ),
                },
            ),
            StateError::SessionNotFound { session } => Self::exception(
                404,
                "RunnerAdminException",
                format!(
                    "The runner scale set session was requested with a session ID that doesn't exist: {session}."
                ),
            ),
            StateError::SessionExpired { session } => Self::exception(
                400,
                "RunnerScaleSetSessionExpiredException",
                format!("The session identifier {session} is not valid."),
            ),
            StateError::TooManyJobs { count } => Self::control(
                400,
                format!(
                    "count {count} is more than the {} jobs one enqueue may add; enqueue in several calls",
                    crate::state::MAX_JOBS_PER_ENQUEUE
                ),
            ),
            StateError::EnqueueTargetNotFound(id) => {
                Self::control(404, format!("no scale set with id {id}"))
            }
            StateError::BadRunSeconds(secs) => Self::control(
                400,
                format!("runSeconds {secs} must be a non-negative, representable number"),
            ),
            StateError::EmptyRunnerName => Self::exception(
                400,
                "ArgumentException",
                "The runner name must not be empty.",
            ),
            StateError::AgentExists { name } => Self::exception(
                409,
                "AgentExistsException",
                format!("Agent with name {name} already exists."),
            ),
            StateError::AgentNotFound(id) => Self::exception(
                404,
                "AgentNotFoundException",
                format!("No agent found in pool 0 with identifier {id}."),
            ),
            StateError::JobStillRunning(id) => Self::exception(
                400,
                "JobStillRunningException",
                format!("Agent {id} is running a job and cannot be removed."),
            ),
            StateError::RunnerNotRegistered(id) => {
                Self::control(404, format!("no registered runner with id {id}"))
            }
            StateError::RunnerAlreadyStarted { name } => {
                Self::control(409, format!("runner {name} has already been started"))
            }
        }
    }
}

/// The assembly-qualified `typeName` GitHub gives an exception.
pub(crate) fn type_name(name: &str) -> String {
    let namespace = if name.starts_with("Agent") || name.starts_with("JobStillRunning") {
        "GitHub.DistributedTask.WebApi"
    } else if name.starts_with("InvalidToken") || name.starts_with("Vss") {
        "GitHub.Services.WebApi"
    } else {
        "GitHub.Actions.Runtime.WebApi"
    };
    format!("{namespace}.{name}, {namespace}")
}

/// The wrapped-exception document for one exception.
pub(crate) fn exception_document(name: &str, message: &str, inner: Value) -> Value {
    json!({
        "$id": "1",
        "innerException": inner,
        "message": message,
        "typeName": type_name(name),
        "typeKey": name,
        "errorCode": 0,
        "eventId": 3000,
    })
}

/// A rendered error: status, content type (if any) and body bytes.
pub(crate) struct RenderedError {
    pub(crate) status: u16,
    pub(crate) content_type: Option<&'static str>,
    pub(crate) body: Vec<u8>,
}

/// Renders `error` under the current `faults` (nesting, text/plain, BOM).
pub(crate) fn render(error: &ApiError, faults: &Faults) -> RenderedError {
    match error {
        ApiError::Exception {
            status,
            name,
            message,
        } => {
            if faults.text_plain_errors {
                return RenderedError {
                    status: *status,
                    content_type: Some("text/plain; charset=utf-8"),
                    body: message.clone().into_bytes(),
                };
            }
            let real = exception_document(name, message, Value::Null);
            let doc = match faults.nested_exceptions {
                None => real,
                Some(NestedStyle::InnerException) => exception_document(
                    "VssServiceResponseException",
                    "The service could not complete the request.",
                    real,
                ),
                Some(NestedStyle::Message) => {
                    exception_document("VssServiceException", &real.to_string(), Value::Null)
                }
            };
            json_error(*status, &doc, faults.bom)
        }
        ApiError::Rest { status, message } => json_error(
            *status,
            &json!({
                "message": message,
                "documentation_url": "https://docs.github.com/rest",
                "status": status.to_string(),
            }),
            faults.bom,
        ),
        ApiError::RouterNotFound => RenderedError {
            status: 404,
            content_type: Some("text/plain; charset=utf-8"),
            body: b"404 page not found\n".to_vec(),
        },
        ApiError::Unauthorized => RenderedError {
            status: 401,
            content_type: None,
            body: Vec::new(),
        },
        ApiError::Control { status, message } => {
            json_error(*status, &json!({ "error": message }), false)
        }
    }
}

fn json_error(status: u16, doc: &Value, bom: bool) -> RenderedError {
    RenderedError {
        status,
        content_type: Some("application/json; charset=utf-8"),
        body: json_bytes(doc, bom),
    }
}

/// Serialises `doc`, with a UTF-8 BOM in front when `bom` is set.
pub(crate) fn json_bytes(doc: &Value, bom: bool) -> Vec<u8> {
    let mut body = if bom {
        vec![0xEF, 0xBB, 0xBF]
    } else {
        Vec::new()
    };
    body.extend_from_slice(doc.to_string().as_bytes());
    body
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scope::Scope;

    #[test]
    fn every_refusal_maps_to_githubs_status_and_exception() {
        let name = |n: &str| n.to_owned();
        let cases = [
            (
                StateError::RunnerGroupExists {
                    scope: Scope::Organization(name("acme")),
                    name: name("gpu"),
                },
                409,
                None,
            ),
            (
                StateError::RunnerGroupNotFound(3),
                404,
                Some("RunnerGroupNotFoundException"),
            ),
            (
                StateError::ScaleSetNotFound(3),
                404,
                Some("RunnerScaleSetNotFoundException"),
            ),
            (
                StateError::EmptyScaleSetName,
                400,
                Some("InvalidRunnerScaleSetException"),
            ),
            (
                StateError::ScaleSetExists { name: name("a") },
                400,
                Some("RunnerScaleSetExistsException"),
            ),
            (
                StateError::SessionConflict {
                    scale_set: name("a"),
                    owner: None,
                },
                409,
                Some("RunnerScaleSetSessionConflictException"),
            ),
            (
                StateError::SessionNotFound { session: name("s") },
                404,
                Some("RunnerAdminException"),
            ),
            (
                StateError::SessionExpired { session: name("s") },
                400,
                Some("RunnerScaleSetSessionExpiredException"),
            ),
            (StateError::TooManyJobs { count: 10_001 }, 400, None),
            (StateError::EnqueueTargetNotFound(3), 404, None),
            (StateError::BadRunSeconds(-1.0), 400, None),
            (StateError::EmptyRunnerName, 400, Some("ArgumentException")),
            (
                StateError::AgentExists { name: name("r") },
                409,
                Some("AgentExistsException"),
            ),
            (
                StateError::AgentNotFound(3),
                404,
                Some("AgentNotFoundException"),
            ),
            (
                StateError::JobStillRunning(3),
                400,
                Some("JobStillRunningException"),
            ),
            (StateError::RunnerNotRegistered(3), 404, None),
            (
                StateError::RunnerAlreadyStarted { name: name("r") },
                409,
                None,
            ),
        ];
        for (error, status, exception) in cases {
            let what = format!("{error:?}");
            match (ApiError::from(error), exception) {
                (
                    ApiError::Exception {
                        status: s, name, ..
                    },
                    Some(want),
                ) => {
                    assert_eq!((s, name), (status, want), "{what}");
                }
                (ApiError::Control { status: s, .. }, None) => assert_eq!(s, status, "{what}"),
                (other, _) => panic!("{what} mapped to {other:?}"),
            }
        }
        let ApiError::Exception { message, .. } = ApiError::from(StateError::SessionConflict {
            scale_set: name("linux"),
            owner: Some(name("me")),
        }) else {
            panic!("a conflict is an exception");
        };
        assert_eq!(
            message,
            "The actions runner scaleset linux already has an active session for owner me."
        );
        // Unless the simulator is configured to name the owner, the message does not.
        let ApiError::Exception { message, .. } = ApiError::from(StateError::SessionConflict {
            scale_set: name("linux"),
            owner: None,
        }) else {
            panic!("a conflict is an exception");
        };
        assert_eq!(
            message,
            "The actions runner scaleset linux already has an active session."
        );
    }
}
