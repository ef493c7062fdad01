//! The event aggregate: an append-only trail per scale set (what happened and why), kept to
//! a bounded number of the most recent entries.

use async_trait::async_trait;

use crate::clock::Timestamp;
use crate::error::Result;
use crate::id::ScaleSetId;

/// One entry of a scale set's trail.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// Increases with every append, across the whole store.
    pub id: i64,
    /// The scale set.
    pub scale_set_id: ScaleSetId,
    /// What happened (`adopted`, `session_opened`, …), named by the control crate.
    pub kind: String,
    /// Why, for operators.
    pub reason: String,
    /// When it was appended.
    pub at: Timestamp,
}

/// Event trails. There is no update or delete: entries leave only by retention, which keeps
/// the newest [`crate::StoreOptions::event_retention`] entries of each scale set.
#[async_trait]
pub trait EventStore: Send + Sync {
    /// Appends an entry and trims the scale set's trail to the retention bound.
    async fn append_event(
        &self,
        scale_set_id: ScaleSetId,
        kind: &str,
        reason: &str,
    ) -> Result<Event>;

    /// The newest `limit` entries, newest first.
    async fn list_events(&self, scale_set_id: ScaleSetId, limit: u32) -> Result<Vec<Event>>;
}
