//! Sessions: at most one per scale set, refreshed, closed, evicted or expired.

use super::{State, StateError};
use crate::clock::SimTime;
use crate::scope::Scope;

/// The active message session of a scale set.
#[derive(Debug, Clone)]
pub(crate) struct Session {
    pub(crate) id: String,
    pub(crate) owner: String,
    pub(crate) created: SimTime,
    /// Last poll, acknowledgement or refresh.
    pub(crate) last_seen: SimTime,
}

impl State {
    /// Opens the scale set's one session; 409 if another is active.
    pub(crate) fn create_session(
        &mut self,
        scope: &Scope,
        id: i64,
        owner: &str,
        now: SimTime,
        conflict_names_owner: bool,
    ) -> Result<Session, StateError> {
        let set = self.scale_set_mut(scope, id)?;
        if let Some(active) = &set.session {
            return Err(StateError::SessionConflict {
                scale_set: set.name.clone(),
                owner: conflict_names_owner.then(|| active.owner.clone()),
            });
        }
        let session = Session {
            id: uuid::Uuid::new_v4().to_string(),
            owner: owner.to_owned(),
            created: now,
            last_seen: now,
        };
        set.session = Some(session.clone());
        Ok(session)
    }

    /// The active session `sid` of scale set `id`; 404 `RunnerAdminException` if unknown.
    pub(crate) fn refresh_session(
        &mut self,
        scope: &Scope,
        id: i64,
        sid: &str,
        now: SimTime,
    ) -> Result<Session, StateError> {
        let set = self.scale_set_mut(scope, id)?;
        set.session
            .as_mut()
            .filter(|s| s.id.eq_ignore_ascii_case(sid))
            .map(|s| {
                s.last_seen = now;
                s.clone()
            })
            .ok_or_else(|| StateError::SessionNotFound {
                session: sid.to_owned(),
            })
    }

    /// Closes session `sid`; 400 `RunnerScaleSetSessionExpiredException` if unknown.
    pub(crate) fn delete_session(
        &mut self,
        scope: &Scope,
        id: i64,
        sid: &str,
        now: SimTime,
    ) -> Result<(), StateError> {
        let set = self.scale_set_mut(scope, id)?;
        if set
            .session
            .as_ref()
            .is_none_or(|s| !s.id.eq_ignore_ascii_case(sid))
        {
            return Err(StateError::SessionExpired {
                session: sid.to_owned(),
            });
        }
        set.session = None;
        set.idle_since = now;
        set.notify.notify_waiters();
        Ok(())
    }

    /// Drops the scale set's session as if the service evicted it; true if there was one.
    pub(crate) fn evict_session(&mut self, id: i64, now: SimTime) -> bool {
        let Some(set) = self.scale_sets.get_mut(&id) else {
            return false;
        };
        let had = set.session.take().is_some();
        if had {
            set.idle_since = now;
            set.notify.notify_waiters();
        }
        had
    }

    /// Whether `session` is still the active session of scale set `id`.
    pub(crate) fn session_active(&self, id: i64, session: &str) -> bool {
        self.scale_sets
            .get(&id)
            .and_then(|s| s.session.as_ref())
            .is_some_and(|s| s.id == session)
    }

    /// Records activity (a poll or an acknowledgement) on the session of scale set `id`.
    pub(crate) fn touch_session(&mut self, id: i64, now: SimTime) {
        if let Some(session) = self
            .scale_sets
            .get_mut(&id)
            .and_then(|s| s.session.as_mut())
        {
            session.last_seen = now;
        }
    }
}
