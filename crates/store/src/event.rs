//! The event aggregate: an append-only trail per scale set (what happened and why), kept to
//! a bounded number of the most recent entries. One entry per change: what repeats the newest
//! entry is counted on it (a refusal rechecked every few minutes is one entry, not hundreds
//! that push the rest of the trail out of retention).

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
    /// When it happened first (when the entry was appended).
    pub at: Timestamp,
    /// How many times in a row it happened (1 for an entry that never repeated).
    pub count: u64,
    /// When it happened last (equal to `at` while `count` is 1).
    pub last_at: Timestamp,
}

impl Event {
    /// Whether this entry records a change: its first occurrence, not a repeat counted on it
    /// (callers log a change once, a repeat quietly).
    pub fn is_first(&self) -> bool {
        self.count <= 1
    }
}

/// Which entries [`EventStore::list_recent_events`] reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventFilter {
    /// Only this scale set's entries (every scale set's when `None`).
    pub scale_set_id: Option<ScaleSetId>,
    /// Only entries that happened at or after this time (their last occurrence, so a refusal
    /// rechecked since counts).
    pub since: Option<Timestamp>,
    /// Only entries appended after the one with this id (a follower's cursor).
    pub after: Option<i64>,
    /// At most this many: the newest of those that match.
    pub limit: u32,
}

/// Event trails. There is no delete: entries leave only by retention, which keeps the newest
/// [`crate::StoreOptions::event_retention`] entries of each scale set. The only update is the
/// repeat count of the newest entry.
#[async_trait]
pub trait EventStore: Send + Sync {
    /// Records that `kind` happened for `reason`. When the scale set's newest entry has the
    /// same kind and reason, nothing is appended: that entry's `count` goes up and its
    /// `last_at` moves to now, and it is returned. Otherwise a new entry is appended (count 1)
    /// and the trail trimmed to the retention bound.
    async fn append_event(
        &self,
        scale_set_id: ScaleSetId,
        kind: &str,
        reason: &str,
    ) -> Result<Event>;

    /// The newest `limit` entries, newest first.
    async fn list_events(&self, scale_set_id: ScaleSetId, limit: u32) -> Result<Vec<Event>>;

    /// The newest `filter.limit` entries `filter` matches, of one scale set or all, oldest
    /// first (in the order they were appended).
    async fn list_recent_events(&self, filter: EventFilter) -> Result<Vec<Event>>;
}
