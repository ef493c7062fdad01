//! `/api/v1/instances`: the provider instances running ephemeral runners.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// Where an instance is in its life (the store's transition table, `docs/scaling.md`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum InstanceStatus {
    /// Intent recorded; the provider has not been asked yet.
    Pending,
    /// The provider is creating it.
    Creating,
    /// Running; the runner is booting or idle.
    Running,
    /// The runner is running a job.
    Busy,
    /// Being deleted from the provider.
    Deleting,
    /// Gone from the provider.
    Deleted,
    /// Failed; to be deleted.
    Failed,
}

/// A recorded instance.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Instance {
    /// The unique runner and instance name.
    pub name: String,
    /// The scale set it serves.
    pub scale_set_id: uuid::Uuid,
    /// The status.
    pub status: InstanceStatus,
    /// The provider's id for it, once known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_id: Option<String>,
    /// GitHub's runner id, once known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub github_runner_id: Option<i64>,
    /// The provider pool key (`<controller id>_<GitHub scale-set id>`).
    pub pool_key: String,
    /// When it must have registered by (RFC 3339), if a deadline applies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bootstrap_deadline: Option<String>,
    /// When it was recorded (RFC 3339).
    pub created_at: String,
    /// When it was last written (RFC 3339).
    pub updated_at: String,
    /// When an operator asked for it to go (`DELETE /api/v1/instances/{name}`; RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub removal_requested_at: Option<String>,
    /// Its bootstrap reports (`GET /api/v1/instances/{name}` only; absent in lists and for
    /// instances granted no token).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bootstrap: Option<InstanceBootstrap>,
}

/// How far an instance's bootstrap has come, as the instance reported it through the
/// instance-facing callbacks (present once the instance was granted a token).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct InstanceBootstrap {
    /// `pending` (nothing reported yet), `installing`, `idle` (the runner started) or
    /// `failed`.
    pub status: String,
    /// The message of the last status report.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The runner's GitHub agent id, once reported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<i64>,
    /// The operating system's name, once reported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub os_name: Option<String>,
    /// The operating system's version, once reported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub os_version: Option<String>,
    /// When the instance's token stops working (RFC 3339).
    pub token_expires_at: String,
    /// When the instance last reported (RFC 3339).
    pub updated_at: String,
}

/// `POST /api/v1/callbacks/status`: what GARM's bootstrap scripts send.
///
/// Unknown fields are accepted and ignored here, unlike the operator API: a bootstrap image of
/// another GARM version may send more, and a refused report would not stop the instance, only
/// blind us to it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct StatusCallback {
    /// `installing`, `idle` or `failed`.
    pub status: String,
    /// What the instance is doing or why it failed.
    #[serde(default)]
    pub message: String,
    /// The runner's agent id (sent with `idle`).
    #[serde(default)]
    pub agent_id: Option<i64>,
}

/// `POST /api/v1/callbacks/system-info`: the instance's operating system (unknown fields are
/// ignored, as for [`StatusCallback`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct SystemInfoCallback {
    /// The operating system's name (`/etc/os-release` `NAME`).
    #[serde(default)]
    pub os_name: String,
    /// Its version (`VERSION_ID`).
    #[serde(default)]
    pub os_version: String,
    /// The runner's agent id, when known.
    #[serde(default)]
    pub agent_id: Option<i64>,
}

/// `GET /api/v1/metadata/system/cert-bundle`: extra CA certificates the instance should
/// trust (the GHES endpoint's bundle, one PEM certificate per entry), GARM's shape: values are
/// base64 of the PEM text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct CertificateBundle {
    /// Certificate name → base64 of its PEM text.
    pub root_certificates: std::collections::BTreeMap<String, String>,
}
