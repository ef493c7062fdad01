//! `GET /api/v1/events`: the event trails of every scale set (or one), oldest first, for
//! `scalesetctl events` and its `--follow`.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// One event, with the scale set it is about.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct FleetEvent {
    /// Increases with every event, across every scale set: give the last one seen as `after`
    /// to ask for what is new.
    pub id: i64,
    /// The scale set's id.
    pub scale_set_id: uuid::Uuid,
    /// The scale set's name.
    pub scale_set: String,
    /// What happened (`ready`, `refused`, `create_intent`, `notice`, `warning`, …).
    pub kind: String,
    /// Why, as a stable snake_case code (`provider_failing`, `foreign_owner`, …): compare
    /// this, not `reason`, whose words and counters change; `unspecified` for an entry written
    /// before codes were kept. A repeat is the same `kind` and `code`.
    #[serde(default)]
    pub code: String,
    /// The detail, for people: the newest occurrence's text.
    pub reason: String,
    /// When it happened first (RFC 3339).
    pub at: String,
    /// How many times in a row it happened (1 when it happened once).
    pub count: u64,
    /// When it happened last (RFC 3339; equal to `at` when `count` is 1).
    pub last_at: String,
}

/// The answer to `GET /api/v1/events`: the newest events that match, oldest first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct EventList {
    /// The events, in the order they happened.
    pub items: Vec<FleetEvent>,
}
