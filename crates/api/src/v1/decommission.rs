//! `POST /api/v1/decommission/plan` and `POST /api/v1/decommission/apply`: tear down what this
//! controller owns, and nothing else (issue 34; docs/operations.md "Decommission"). The same
//! planner and the same I/O as `scaleset-worker decommission --config FILE`.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// `POST /api/v1/decommission/plan`: what tearing down the scope would do. Writes nothing.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DecommissionRequest {
    /// Only this entity (its path: `acme`, or `acme/web` for a repository); absent: the whole
    /// controller.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entity: Option<String>,
    /// Only this scale set of `entity` (by name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scale_set: Option<String>,
    /// How long to wait for busy runners, in seconds (0: not at all; they are skipped, or
    /// killed with `force_busy`).
    #[serde(default)]
    pub wait_seconds: u64,
    /// Kill runners still busy when the wait runs out (their jobs fail).
    #[serde(default)]
    pub force_busy: bool,
    /// Delete scale sets this controller adopted too (detached otherwise: left on GitHub).
    #[serde(default)]
    pub include_adopted: bool,
}

/// `POST /api/v1/decommission/apply`: the scope and flags as planned, and the plan's digest.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DecommissionApplyRequest {
    /// As planned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entity: Option<String>,
    /// As planned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scale_set: Option<String>,
    /// As planned.
    #[serde(default)]
    pub wait_seconds: u64,
    /// As planned.
    #[serde(default)]
    pub force_busy: bool,
    /// As planned.
    #[serde(default)]
    pub include_adopted: bool,
    /// The reviewed plan's digest. Another plan now is `409 stale_plan`.
    pub digest: String,
}

/// One step of a decommission plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct DecommissionStep {
    /// `delete`, `detach`, `wait`, `kill` or `skip`.
    pub act: String,
    /// `runner`, `instance`, `scale_set`, `session` or `record`.
    pub kind: String,
    /// What it is about, in words (`scale set acme/linux (GitHub id 3)`).
    pub subject: String,
    /// A stable code for why (`owner_label`, `foreign_owner`, `pool_key`, `still_busy`, ...).
    pub reason_code: String,
    /// Why.
    pub reason: String,
}

/// A decommission plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct DecommissionPlanResponse {
    /// The plan's digest: give it to `POST /api/v1/decommission/apply`.
    pub digest: String,
    /// The steps, in the order they are applied.
    pub steps: Vec<DecommissionStep>,
}

/// A step carried out, or left.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct DecommissionOutcome {
    /// The step.
    pub step: DecommissionStep,
    /// What happened (`deleted on GitHub`, `already gone`, ...) or why it was left.
    pub outcome: String,
}

/// What an apply did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct DecommissionApplyResponse {
    /// The steps carried out, in order.
    pub done: Vec<DecommissionOutcome>,
    /// The steps left (a busy runner, the scale set it keeps), with why.
    pub left: Vec<DecommissionOutcome>,
    /// Whether busy runners of ours were left: decommission again later, or with
    /// `force_busy`.
    pub busy_left: bool,
}
