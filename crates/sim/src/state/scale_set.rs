//! Scale sets: create, update and delete with the uniqueness rules of the reference (per
//! runner group, case-insensitively), and lookups by id, group and name.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

use tokio::sync::Notify;

use super::job::{Job, LoggedMessage, PendingEvent};
use super::{Session, State, StateError, same_name};
use crate::clock::SimTime;
use crate::scope::Scope;

/// A label of a scale set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Label {
    pub(crate) name: String,
    pub(crate) kind: String,
}

/// A scale set.
#[derive(Debug)]
pub(crate) struct ScaleSet {
    pub(crate) id: i64,
    pub(crate) scope: Scope,
    pub(crate) name: String,
    pub(crate) group_id: i64,
    pub(crate) labels: Vec<Label>,
    pub(crate) disable_update: bool,
    pub(crate) created_on: SimTime,
    pub(crate) session: Option<Session>,
    /// When the scale set last became session-less (or was created).
    pub(crate) idle_since: SimTime,
    pub(crate) log: VecDeque<LoggedMessage>,
    pub(super) pending: Vec<PendingEvent>,
    pub(crate) jobs: BTreeMap<i64, Job>,
    pub(crate) notify: Arc<Notify>,
}

/// The fields a scale-set create or update may carry (zero values mean "not given").
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ScaleSetInput {
    pub(crate) name: String,
    pub(crate) group_id: i64,
    pub(crate) labels: Vec<Label>,
    pub(crate) disable_update: bool,
}

impl State {
    /// The scale set `id` if it belongs to `scope`.
    pub(crate) fn scale_set(&self, scope: &Scope, id: i64) -> Result<&ScaleSet, StateError> {
        self.scale_sets
            .get(&id)
            .filter(|s| &s.scope == scope)
            .ok_or(StateError::ScaleSetNotFound(id))
    }

    pub(super) fn scale_set_mut(
        &mut self,
        scope: &Scope,
        id: i64,
    ) -> Result<&mut ScaleSet, StateError> {
        self.scale_sets
            .get_mut(&id)
            .filter(|s| &s.scope == scope)
            .ok_or(StateError::ScaleSetNotFound(id))
    }

    /// Scale sets of `scope`, optionally filtered by group and (case-insensitive) name.
    pub(crate) fn find_scale_sets(
        &self,
        scope: &Scope,
        group: Option<i64>,
        name: Option<&str>,
    ) -> Vec<&ScaleSet> {
        self.scale_sets
            .values()
            .filter(|s| &s.scope == scope)
            .filter(|s| group.is_none_or(|g| s.group_id == g))
            .filter(|s| name.is_none_or(|n| same_name(&s.name, n)))
            .collect()
    }

    /// Creates a scale set; 400 `RunnerScaleSetExistsException` on a duplicate (group, name).
    pub(crate) fn create_scale_set(
        &mut self,
        scope: &Scope,
        input: ScaleSetInput,
        now: SimTime,
    ) -> Result<i64, StateError> {
        let name = input.name.trim().to_owned();
        if name.is_empty() {
            return Err(StateError::EmptyScaleSetName);
        }
        let group_id = if input.group_id == 0 {
            1
        } else {
            input.group_id
        };
        if self.group_name(scope, group_id).is_none() {
            return Err(StateError::RunnerGroupNotFound(group_id));
        }
        if !self
            .find_scale_sets(scope, Some(group_id), Some(&name))
            .is_empty()
        {
            return Err(StateError::ScaleSetExists { name });
        }
        let labels = if input.labels.is_empty() {
            vec![Label {
                name: name.clone(),
                kind: "System".to_owned(),
            }]
        } else {
            input.labels
        };
        let id = self.next_scale_set_id;
        self.next_scale_set_id += 1;
        self.scale_sets.insert(
            id,
            ScaleSet {
                id,
                scope: scope.clone(),
                name,
                group_id,
                labels,
                disable_update: input.disable_update,
                created_on: now,
                session: None,
                idle_since: now,
                log: VecDeque::new(),
                pending: Vec::new(),
                jobs: BTreeMap::new(),
                notify: Arc::new(Notify::new()),
            },
        );
        Ok(id)
    }

    /// Applies a partial update, ignoring zero-value fields.
    pub(crate) fn update_scale_set(
        &mut self,
        scope: &Scope,
        id: i64,
        patch: ScaleSetInput,
    ) -> Result<(), StateError> {
        let current = self.scale_set(scope, id)?;
        let name = if patch.name.trim().is_empty() {
            current.name.clone()
        } else {
            patch.name.trim().to_owned()
        };
        let group_id = if patch.group_id == 0 {
            current.group_id
        } else {
            patch.group_id
        };
        if self.group_name(scope, group_id).is_none() {
            return Err(StateError::RunnerGroupNotFound(group_id));
        }
        if self
            .find_scale_sets(scope, Some(group_id), Some(&name))
            .iter()
            .any(|s| s.id != id)
        {
            return Err(StateError::ScaleSetExists { name });
        }
        let set = self.scale_set_mut(scope, id)?;
        set.name = name;
        set.group_id = group_id;
        if !patch.labels.is_empty() {
            set.labels = patch.labels;
        }
        if patch.disable_update {
            set.disable_update = true;
        }
        Ok(())
    }

    /// Deletes a scale set with its session, jobs, messages and agents.
    pub(crate) fn delete_scale_set(&mut self, id: i64) -> Option<ScaleSet> {
        let set = self.scale_sets.remove(&id)?;
        self.agents.retain(|_, a| a.scale_set_id != id);
        set.notify.notify_waiters();
        Some(set)
    }
}
