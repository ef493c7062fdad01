//! The message session of a scale set (at most one per scale set; the scale set opens,
//! refreshes, closes and expires it).

use crate::clock::SimTime;

/// The active message session of a scale set.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub(crate) struct Session {
    pub(crate) id: String,
    pub(crate) owner: String,
    pub(crate) created: SimTime,
    /// Last poll, acknowledgement or refresh.
    pub(crate) last_seen: SimTime,
}

impl Session {
    /// A new session for `owner`, with a fresh id.
    pub(crate) fn open(owner: &str, now: SimTime) -> Self {
        Self {
            id: uuid::Uuid::new_v4().to_string(),
            owner: owner.to_owned(),
            created: now,
            last_seen: now,
        }
    }

    /// Whether `sid` names this session (ids compare case-insensitively, as GUIDs do).
    pub(crate) fn is(&self, sid: &str) -> bool {
        self.id.eq_ignore_ascii_case(sid)
    }
}
