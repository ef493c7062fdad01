//! `POST /api/v1/plan` and `POST /api/v1/apply`: a declarative fleet, planned and applied.
//!
//! The fleet travels as its TOML text (`fleet`), exactly the `[[credentials]]` and
//! `[[scale_set]]` tables of a fleet file (docs/configuration.md), so `scalesetctl plan -f
//! fleet.toml` sends the file as it is and the server parses it with the same code as its own
//! fleet file. Credentials' secrets are read on the server (`token_env` from its environment,
//! `token_file` from its disk), never sent inline; scale sets may also name credentials
//! already stored (created through `POST /api/v1/credentials`).

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

/// `POST /api/v1/plan`: what applying this fleet would do. Writes nothing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PlanRequest {
    /// The fleet as TOML text: `[[credentials]]` and `[[scale_set]]` tables only.
    pub fleet: String,
    /// Detach stored scale sets the fleet does not declare (default false: they are kept).
    #[serde(default)]
    pub prune: bool,
}

/// `POST /api/v1/apply`: apply the fleet if planning it now gives `digest`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ApplyRequest {
    /// The fleet as TOML text, as planned.
    pub fleet: String,
    /// As planned.
    #[serde(default)]
    pub prune: bool,
    /// The `digest` of the reviewed plan. A different one now is `409 stale_plan`.
    pub digest: String,
}

/// What a step does to a scale set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum PlanAction {
    /// Stored; GitHub has none, so the ensure step creates it (or GitHub was not asked).
    Create,
    /// Stored; the ensure step adopts the scale set GitHub has.
    Adopt,
    /// The stored spec changes.
    Update,
    /// Removed from the store (prune); GitHub's scale set is left alone.
    Detach,
    /// Nothing is written; `reason` says why and what to do.
    Refuse,
    /// Nothing to do.
    Unchanged,
}

/// One field a step writes. Secrets never appear: a changed secret is `secret` from `sealed`
/// to `replaced`, a CA bundle shows its size.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct FieldChange {
    /// The field (`max_runners`, `labels`, `endpoint.base_url`, `secret`, ...).
    pub field: String,
    /// The stored value; absent when there is none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    /// The value written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,
}

/// A declared credentials' step.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct PlannedCredentials {
    /// The name.
    pub name: String,
    /// `create`, `update` or `unchanged`.
    pub action: String,
    /// The stored credentials' id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<Uuid>,
    /// What changes.
    pub changes: Vec<FieldChange>,
}

/// An entity the declared scale sets need.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct PlannedEntity {
    /// `organization acme`, `repository acme/web`, `enterprise big`.
    pub entity: String,
    /// The credentials reaching it.
    pub credentials: String,
    /// `create` or `unchanged`.
    pub action: String,
    /// The stored entity's id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<Uuid>,
}

/// A scale set's step.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct PlannedScaleSet {
    /// The scale set's name.
    pub name: String,
    /// The runner group's name.
    pub runner_group: String,
    /// `organization acme`, `repository acme/web`, `enterprise big`.
    pub entity: String,
    /// The credentials serving it.
    pub credentials: String,
    /// What happens.
    pub action: PlanAction,
    /// A stable code for the reason (`not_on_github`, `adoptable`, `adoption_refused`,
    /// `spec_changed`, `up_to_date`, `kept_disabled`, `not_declared`,
    /// `declared_in_configuration`, `pruned`, `has_instances`, ...).
    pub reason_code: String,
    /// Why, and for a refusal what to do.
    pub reason: String,
    /// The stored scale set's id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<Uuid>,
    /// The fields written (all of them for create and adopt).
    pub changes: Vec<FieldChange>,
    /// GARM's controller id, when the scale set is adopted on the takeover note
    /// `scalesetctl import garm` wrote (`adopt (imported from GARM <id>)`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub imported_from: Option<String>,
}

/// A plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct PlanResponse {
    /// The plan's digest: give it to `POST /api/v1/apply`.
    pub digest: String,
    /// Whether applying it writes anything.
    pub has_changes: bool,
    /// Whether any scale set is refused.
    pub has_refusals: bool,
    /// Whether it prunes undeclared scale sets.
    pub prune: bool,
    /// One step per declared credentials.
    pub credentials: Vec<PlannedCredentials>,
    /// The entities the declared scale sets need.
    pub entities: Vec<PlannedEntity>,
    /// One step per declared scale set, then per stored one the fleet does not declare.
    pub scale_sets: Vec<PlannedScaleSet>,
}

/// What an apply did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ApplyResponse {
    /// The plan applied (its digest is the one given).
    pub plan: PlanResponse,
    /// How many rows were written (0: the plan was unchanged, a no-op).
    pub writes: u64,
    /// The scale sets stored by this apply; the ensure step creates or adopts them on GitHub.
    pub created: Vec<Uuid>,
}
