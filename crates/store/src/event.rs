//! The event aggregate: an append-only trail per scale set (what happened and why), kept to
//! a bounded number of the most recent entries. One entry per change: what repeats the newest
//! entry is counted on it (a refusal rechecked every few minutes is one entry, not hundreds
//! that push the rest of the trail out of retention). "The same" means the same
//! [`EventKind`] and [`ReasonCode`]: the detail text, which carries changing counters, is
//! not compared; the newest detail is kept.

mod code;

pub use code::{EventKind, ReasonCode};

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
    /// What happened ([`ReasonCode::kind`] of its code).
    pub kind: EventKind,
    /// Why: compared to tell a repeat from a change, and rendered as a sentence at the edge
    /// ([`ReasonCode::summary`]).
    pub code: ReasonCode,
    /// The detail, for operators: the newest occurrence's text.
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
    /// Records that `code.kind()` happened for `code`, with `detail` for operators. When the
    /// scale set's newest entry has the same kind and code, nothing is appended: that entry's
    /// `count` goes up, its `last_at` moves to now and its detail becomes `detail` (a repeat
    /// whose counters changed is still a repeat), and it is returned. Otherwise a new entry is
    /// appended (count 1) and the trail trimmed to the retention bound.
    async fn append_event(
        &self,
        scale_set_id: ScaleSetId,
        code: ReasonCode,
        detail: &str,
    ) -> Result<Event>;

    /// The newest `limit` entries, newest first.
    async fn list_events(&self, scale_set_id: ScaleSetId, limit: u32) -> Result<Vec<Event>>;

    /// The newest `filter.limit` entries `filter` matches, of one scale set or all, oldest
    /// first (in the order they were appended).
    async fn list_recent_events(&self, filter: EventFilter) -> Result<Vec<Event>>;
}
