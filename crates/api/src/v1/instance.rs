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
}
