//! The provider's view of an instance (the JSON an executable prints on
//! stdout), its status values, and how that output is validated.

use std::fmt;

use base64::Engine as _;
use serde::{Deserialize, Serialize};

use crate::command::Command;
use crate::error::{Error, OutputProblem};

/// The longest instance name accepted (a file name's limit on common file systems).
pub const INSTANCE_NAME_MAX: usize = 255;

/// Checks that an instance name is one safe path component by the one name rule
/// ([`scaleset_domain::check_name`]): 1 to [`INSTANCE_NAME_MAX`] characters of
/// `A-Za-z0-9._-`, starting with a letter or digit (so never empty, `.`, `..`, hidden, or
/// holding a `/`). Every provider refuses any other name before it writes a file or runs an
/// executable; the spec rules keep runner prefixes to the same characters, so a refusal here
/// means a spec written past them.
///
/// ```
/// use scaleset_provider::{Command, check_instance_name};
///
/// assert!(check_instance_name(Command::CreateInstance, "linux-abcdefgh").is_ok());
/// assert!(check_instance_name(Command::CreateInstance, "../../../pfx-w3kojd6g").is_err());
/// ```
///
/// # Errors
///
/// [`Error::InvalidName`] saying what is wrong.
pub fn check_instance_name(command: Command, name: &str) -> Result<(), Error> {
    scaleset_domain::check_name(name, INSTANCE_NAME_MAX).map_err(|reason| Error::InvalidName {
        command,
        name: name.to_owned(),
        reason,
    })
}

/// An instance as the provider sees it (GARM's `ProviderInstance`).
///
/// Field names on the wire are GARM's: `provider_id`, `name`, `os_type`,
/// `os_name`, `os_version`, `os_arch`, `addresses`, `status`,
/// `provider_fault`. Unknown fields are ignored so newer providers keep working.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ProviderInstance {
    /// The provider's unique ID for the instance (an OpenStack UUID, an LXD name, ...).
    pub provider_id: String,
    /// The instance name we chose (the runner name).
    pub name: String,
    /// Operating-system type, as the provider reports it (`linux`, `windows`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub os_type: Option<String>,
    /// Operating-system name (`ubuntu`, ...).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub os_name: Option<String>,
    /// Operating-system version (`22.04`, ...).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub os_version: Option<String>,
    /// CPU architecture (`amd64`, `arm64`, ...).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub os_arch: Option<String>,
    /// Addresses the provider reports.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub addresses: Vec<Address>,
    /// The lifecycle status.
    pub status: InstanceStatus,
    /// An error message from the cloud, if the provider reported one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provider_fault: Option<String>,
    /// The pool the instance belongs to, when the provider reports one (GARM's providers do
    /// not; a provider that does is held to it: an answer naming another pool is not ours).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pool_id: Option<String>,
}

impl ProviderInstance {
    /// The ID to address this instance with (`GARM_INSTANCE_ID`): the provider ID.
    pub fn id(&self) -> InstanceId {
        InstanceId(self.provider_id.clone())
    }
}

/// One address of an instance.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Address {
    /// The address (IPv4, IPv6 or a host name).
    pub address: String,
    /// `public` or `private` in GARM; kept as printed.
    #[serde(rename = "type", default)]
    pub kind: String,
}

/// The status values GARM defines for provider instances.
///
/// GARM's controller only expects `running`, `stopped`, `error` and `unknown`
/// from a provider, but its shared parameter package defines all of these; we
/// accept every defined value and reject anything else as
/// [`OutputProblem::UnknownStatus`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum InstanceStatus {
    /// Running.
    Running,
    /// Stopped.
    Stopped,
    /// Failed; see `provider_fault`.
    Error,
    /// Deletion requested.
    PendingDelete,
    /// Forced deletion requested.
    PendingForceDelete,
    /// Being deleted.
    Deleting,
    /// Deleted.
    Deleted,
    /// Creation requested.
    PendingCreate,
    /// Being created.
    Creating,
    /// The provider cannot tell.
    Unknown,
}

impl InstanceStatus {
    /// The wire string.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Running => "running",
            Self::Stopped => "stopped",
            Self::Error => "error",
            Self::PendingDelete => "pending_delete",
            Self::PendingForceDelete => "pending_force_delete",
            Self::Deleting => "deleting",
            Self::Deleted => "deleted",
            Self::PendingCreate => "pending_create",
            Self::Creating => "creating",
            Self::Unknown => "unknown",
        }
    }

    fn parse(text: &str) -> Option<Self> {
        Some(match text {
            "running" => Self::Running,
            "stopped" => Self::Stopped,
            "error" => Self::Error,
            "pending_delete" => Self::PendingDelete,
            "pending_force_delete" => Self::PendingForceDelete,
            "deleting" => Self::Deleting,
            "deleted" => Self::Deleted,
            "pending_create" => Self::PendingCreate,
            "creating" => Self::Creating,
            "unknown" => Self::Unknown,
            _ => return None,
        })
    }
}

impl fmt::Display for InstanceStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The ID passed as `GARM_INSTANCE_ID`: the provider ID, or the instance name
/// when the provider never returned one (GARM's rule; providers must accept both).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct InstanceId(String);

impl InstanceId {
    /// An ID from text; `None` when empty or containing control characters.
    pub fn new(text: impl Into<String>) -> Option<Self> {
        let text = text.into();
        if text.is_empty() || text.chars().any(char::is_control) {
            None
        } else {
            Some(Self(text))
        }
    }

    /// The ID as a string.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for InstanceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The wire shape, every field optional, so validation can say what is missing.
#[derive(Deserialize)]
struct RawInstance {
    #[serde(default)]
    provider_id: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    os_type: Option<String>,
    #[serde(default)]
    os_name: Option<String>,
    #[serde(default)]
    os_version: Option<String>,
    #[serde(default)]
    os_arch: Option<String>,
    #[serde(default)]
    addresses: Option<Vec<Address>>,
    #[serde(default)]
    status: Option<String>,
    #[serde(default)]
    provider_fault: Option<String>,
    #[serde(default)]
    pool_id: Option<String>,
}

impl RawInstance {
    fn validate(self) -> Result<ProviderInstance, OutputProblem> {
        let provider_id = non_empty(self.provider_id).ok_or(OutputProblem::MissingProviderId)?;
        let name = non_empty(self.name).ok_or(OutputProblem::MissingName)?;
        // GARM rejects an empty status; we read a missing or empty one as
        // `unknown` (tolerant: it carries no information either way).
        let status = match non_empty(self.status) {
            None => InstanceStatus::Unknown,
            Some(text) => {
                InstanceStatus::parse(&text).ok_or(OutputProblem::UnknownStatus { status: text })?
            }
        };
        Ok(ProviderInstance {
            provider_id,
            name,
            os_type: non_empty(self.os_type),
            os_name: non_empty(self.os_name),
            os_version: non_empty(self.os_version),
            os_arch: non_empty(self.os_arch),
            addresses: self.addresses.unwrap_or_default(),
            status,
            provider_fault: non_empty(self.provider_fault).map(decode_fault),
            pool_id: non_empty(self.pool_id),
        })
    }
}

fn non_empty(text: Option<String>) -> Option<String> {
    text.filter(|t| !t.trim().is_empty())
}

/// GARM declares `provider_fault` as Go `[]byte`, which Go's JSON encoder
/// prints as base64; hand-written providers print plain text. We decode base64
/// when it yields UTF-8 and otherwise keep the text as printed.
fn decode_fault(text: String) -> String {
    match base64::engine::general_purpose::STANDARD.decode(text.as_bytes()) {
        Ok(bytes) => String::from_utf8(bytes).unwrap_or(text),
        Err(_) => text,
    }
}

/// The `provider_fault` of whatever instance-like JSON a failing executable
/// printed (GARM asks providers to print one with `status: error`); lenient,
/// since the rest of the object may be incomplete.
pub(crate) fn fault_of(stdout: &[u8]) -> Option<String> {
    #[derive(Deserialize)]
    struct Fault {
        #[serde(default)]
        provider_fault: Option<String>,
    }
    let fault: Fault = serde_json::from_slice(stdout).ok()?;
    non_empty(fault.provider_fault).map(decode_fault)
}

/// Parses and validates the stdout of `CreateInstance` / `GetInstance`.
pub(crate) fn parse_instance(stdout: &[u8]) -> Result<ProviderInstance, OutputProblem> {
    let raw: RawInstance =
        serde_json::from_slice(stdout).map_err(|err| OutputProblem::NotJson {
            expected: "an instance object",
            detail: err.to_string(),
        })?;
    raw.validate()
}

/// Parses and validates the stdout of `ListInstances`: a JSON array of
/// instances. `null` is read as an empty list (Go prints a nil slice so).
pub(crate) fn parse_instance_list(stdout: &[u8]) -> Result<Vec<ProviderInstance>, OutputProblem> {
    let raw: Option<Vec<RawInstance>> =
        serde_json::from_slice(stdout).map_err(|err| OutputProblem::NotJson {
            expected: "an array of instances",
            detail: err.to_string(),
        })?;
    raw.unwrap_or_default()
        .into_iter()
        .map(RawInstance::validate)
        .collect()
}

#[cfg(test)]
mod tests;
