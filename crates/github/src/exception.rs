//! .NET "wrapped exception" error bodies: parsing `typeName` into [`ExceptionKind`] by exact
//! short name, and finding exceptions nested through `innerException` or inside string fields.

use serde_json::Value;

/// How deep nested error documents are followed (`innerException` and JSON inside strings).
const MAX_NESTING: usize = 8;

/// The exceptions this client gives meaning to, recognised by their exact short type name.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ExceptionKind {
    /// `RunnerScaleSetExistsException`: a scale set with that name exists in the group.
    RunnerScaleSetExists,
    /// `RunnerScaleSetNotFoundException`: the scale set is gone.
    RunnerScaleSetNotFound,
    /// `RunnerScaleSetSessionConflictException`: another session is active.
    RunnerScaleSetSessionConflict,
    /// `RunnerScaleSetSessionExpiredException`: the session id is not valid any more.
    RunnerScaleSetSessionExpired,
    /// `RunnerAdminException`: a generic admin error (e.g. refreshing an evicted session).
    RunnerAdmin,
    /// `AgentExistsException`: a runner with that name is registered.
    AgentExists,
    /// `AgentNotFoundException`: no such runner.
    AgentNotFound,
    /// `JobStillRunningException`: the runner is busy; try again later.
    JobStillRunning,
    /// `InvalidTokenException`: the admin token was rejected.
    InvalidToken,
    /// `InvalidRunnerScaleSetException`: the scale-set request was rejected as invalid.
    InvalidRunnerScaleSet,
    /// Any other exception; its short name is in [`Exception::short_name`].
    Other,
}

impl ExceptionKind {
    /// Maps an exact short type name (no namespace, no assembly) to a kind.
    pub fn from_short_name(short_name: &str) -> Self {
        match short_name {
            "RunnerScaleSetExistsException" => Self::RunnerScaleSetExists,
            "RunnerScaleSetNotFoundException" => Self::RunnerScaleSetNotFound,
            "RunnerScaleSetSessionConflictException" => Self::RunnerScaleSetSessionConflict,
            "RunnerScaleSetSessionExpiredException" => Self::RunnerScaleSetSessionExpired,
            "RunnerAdminException" => Self::RunnerAdmin,
            "AgentExistsException" => Self::AgentExists,
            "AgentNotFoundException" => Self::AgentNotFound,
            "JobStillRunningException" => Self::JobStillRunning,
            "InvalidTokenException" => Self::InvalidToken,
            "InvalidRunnerScaleSetException" => Self::InvalidRunnerScaleSet,
            _ => Self::Other,
        }
    }
}

/// One exception found in an error body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exception {
    /// The type name as sent, e.g.
    /// `GitHub.Actions.Runtime.WebApi.RunnerScaleSetExistsException, GitHub.Actions.Runtime.WebApi`.
    pub type_name: String,
    /// The short class name, e.g. `RunnerScaleSetExistsException`.
    pub short_name: String,
    /// What the short name means to this client.
    pub kind: ExceptionKind,
    /// The exception's `message` (may be empty).
    pub message: String,
}

/// Reduces an assembly-qualified .NET type name to its short class name:
/// drop the assembly after the first `,`, then the namespace up to the last `.`
/// (and an enclosing type up to the last `+`).
pub fn short_type_name(type_name: &str) -> &str {
    let without_assembly = type_name.split(',').next().unwrap_or_default().trim();
    let after_namespace = without_assembly.rsplit('.').next().unwrap_or_default();
    after_namespace
        .rsplit('+')
        .next()
        .unwrap_or_default()
        .trim()
}

/// Collects every exception in a parsed error document: the outer one first, then those nested
/// through `innerException` and through JSON error documents embedded in string fields.
pub(crate) fn collect_exceptions(document: &Value) -> Vec<Exception> {
    let mut found = Vec::new();
    visit(document, 0, &mut found);
    found
}

fn visit(value: &Value, depth: usize, found: &mut Vec<Exception>) {
    if depth > MAX_NESTING {
        return;
    }
    match value {
        Value::Object(map) => {
            let type_name = map
                .get("typeName")
                .and_then(Value::as_str)
                .filter(|name| !name.trim().is_empty())
                .or_else(|| map.get("typeKey").and_then(Value::as_str));
            if let Some(type_name) = type_name {
                let short_name = short_type_name(type_name).to_owned();
                found.push(Exception {
                    type_name: type_name.to_owned(),
                    kind: ExceptionKind::from_short_name(&short_name),
                    short_name,
                    message: map
                        .get("message")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned(),
                });
            }
            if let Some(inner) = map.get("innerException") {
                visit(inner, depth + 1, found);
            }
            for (key, field) in map {
                if key == "innerException" {
                    continue;
                }
                match field {
                    Value::String(text) => {
                        if let Some(embedded) = embedded_document(text) {
                            visit(&embedded, depth + 1, found);
                        }
                    }
                    Value::Object(_) | Value::Array(_) => visit(field, depth + 1, found),
                    _ => {}
                }
            }
        }
        Value::Array(items) => {
            for item in items {
                visit(item, depth + 1, found);
            }
        }
        Value::String(text) => {
            if let Some(embedded) = embedded_document(text) {
                visit(&embedded, depth + 1, found);
            }
        }
        _ => {}
    }
}

/// A JSON object inside a string: the whole string, or the span from its first `{` to its last
/// `}` (messages like `"create failed: {\"typeName\": …}"`).
fn embedded_document(text: &str) -> Option<Value> {
    let start = text.find('{')?;
    let end = text.rfind('}')?;
    if end <= start {
        return None;
    }
    let candidate = text.get(start..=end)?;
    match serde_json::from_str::<Value>(candidate) {
        Ok(value @ Value::Object(_)) => Some(value),
        _ => None,
    }
}

/// Extracts the owner from a session-conflict message such as
/// "The actions runner scaleset x already has an active session for owner runner-1."
pub(crate) fn session_conflict_owner(message: &str) -> Option<String> {
    const MARKER: &str = "for owner ";
    let start = message.find(MARKER)? + MARKER.len();
    let rest = message.get(start..)?.trim();
    let owner = rest
        .trim_end_matches(['.', ' '])
        .trim_matches(['"', '\'', '`'])
        .trim();
    if owner.is_empty() {
        None
    } else {
        Some(owner.to_owned())
    }
}

#[cfg(test)]
mod tests;
