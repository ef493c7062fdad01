//! `GET /api/v1/controller`: who this controller is.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// The controller's identity and version (DESIGN §3): the names it is known by on GitHub.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ControllerInfo {
    /// The controller id (a UUID, pinned in the configuration).
    pub id: uuid::Uuid,
    /// The server's version (`CARGO_PKG_VERSION`).
    pub version: String,
    /// The owner label: `scaleset-owner-` and the 32 hex digits of the id. Scale sets this
    /// controller creates carry it; a lookup that finds it is ownership evidence.
    pub owner_label: String,
    /// Whether created scale sets get the owner label (config `owner_label`). The label is
    /// recognised as ours even when this is off.
    pub owner_label_enabled: bool,
    /// The `ownerName` of every message session: `scaleset-<id>`.
    pub session_owner: String,
}
