//! The errors the simulated services answer, and the one function that turns them into status
//! codes and bodies (.NET wrapped exceptions for the Actions service, GitHub REST error documents,
//! router-level text/plain 404s, body-less 401s), applying the error-shape faults.

use serde_json::{Value, json};

use crate::fault::{Faults, NestedStyle};

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

    /// GitHub REST's 404.
    pub(crate) fn rest_not_found() -> Self {
        Self::Rest {
            status: 404,
            message: "Not Found",
        }
    }

    /// 404 `RunnerScaleSetNotFoundException` for scale set `id`.
    pub(crate) fn scale_set_not_found(id: i64) -> Self {
        Self::exception(
            404,
            "RunnerScaleSetNotFoundException",
            format!("No RunnerScaleSet found with identifier: {id}."),
        )
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
