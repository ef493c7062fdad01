//! Tenants: each seeded organization, repository and enterprise, with its runner groups (the
//! default group, id 1, and the ones created since; names unique case-insensitively).

use std::collections::BTreeMap;

use super::error::StateError;
use super::name::same_name;
use crate::scope::Scope;

/// A runner group of one tenant.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub(crate) struct RunnerGroup {
    pub(crate) id: i64,
    pub(crate) name: String,
    pub(crate) is_default: bool,
}

/// One tenant's own namespace.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub(crate) struct Tenant {
    pub(crate) groups: BTreeMap<i64, RunnerGroup>,
    next_group_id: i64,
}

impl Tenant {
    /// A tenant with only the default group.
    pub(crate) fn new() -> Self {
        let mut groups = BTreeMap::new();
        groups.insert(
            1,
            RunnerGroup {
                id: 1,
                name: "Default".to_owned(),
                is_default: true,
            },
        );
        Self {
            groups,
            next_group_id: 2,
        }
    }

    /// The runner groups, filtered by name (case-insensitive) when given.
    pub(crate) fn groups(&self, name: Option<&str>) -> Vec<RunnerGroup> {
        self.groups
            .values()
            .filter(|g| name.is_none_or(|n| same_name(&g.name, n)))
            .cloned()
            .collect()
    }

    /// Runner group `id`, if the tenant has it.
    pub(crate) fn group(&self, id: i64) -> Option<&RunnerGroup> {
        self.groups.get(&id)
    }

    /// Creates a runner group of this tenant (`scope`); names are unique, case-insensitively.
    pub(crate) fn create_group(&mut self, scope: &Scope, name: &str) -> Result<i64, StateError> {
        if self.groups.values().any(|g| same_name(&g.name, name)) {
            return Err(StateError::RunnerGroupExists {
                scope: scope.clone(),
                name: name.to_owned(),
            });
        }
        let id = self.next_group_id;
        self.next_group_id += 1;
        self.groups.insert(
            id,
            RunnerGroup {
                id,
                name: name.to_owned(),
                is_default: false,
            },
        );
        Ok(id)
    }
}
