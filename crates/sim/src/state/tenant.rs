//! Tenants: each seeded organization, repository and enterprise, with its runner groups (the
//! default group, id 1, and the ones created since; names unique case-insensitively).

use std::collections::BTreeMap;

use super::{State, StateError, same_name};
use crate::scope::Scope;

/// A runner group of one tenant.
#[derive(Debug, Clone)]
pub(crate) struct RunnerGroup {
    pub(crate) id: i64,
    pub(crate) name: String,
    pub(crate) is_default: bool,
}

/// One tenant's own namespace.
#[derive(Debug)]
pub(crate) struct Tenant {
    pub(crate) groups: BTreeMap<i64, RunnerGroup>,
    next_group_id: i64,
}

impl Tenant {
    pub(super) fn new() -> Self {
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
}

impl State {
    /// Runner groups of `scope`, filtered by name (case-insensitive) when given.
    pub(crate) fn groups(&self, scope: &Scope, name: Option<&str>) -> Vec<RunnerGroup> {
        self.tenants
            .get(scope)
            .map(|t| {
                t.groups
                    .values()
                    .filter(|g| name.is_none_or(|n| same_name(&g.name, n)))
                    .cloned()
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Creates a runner group; names are unique per tenant, case-insensitively.
    pub(crate) fn create_group(&mut self, scope: &Scope, name: &str) -> Result<i64, StateError> {
        let tenant = self
            .tenants
            .entry(scope.clone())
            .or_insert_with(Tenant::new);
        if tenant.groups.values().any(|g| same_name(&g.name, name)) {
            return Err(StateError::RunnerGroupExists {
                scope: scope.clone(),
                name: name.to_owned(),
            });
        }
        let id = tenant.next_group_id;
        tenant.next_group_id += 1;
        tenant.groups.insert(
            id,
            RunnerGroup {
                id,
                name: name.to_owned(),
                is_default: false,
            },
        );
        Ok(id)
    }

    pub(super) fn group_name(&self, scope: &Scope, id: i64) -> Option<String> {
        self.tenants
            .get(scope)
            .and_then(|t| t.groups.get(&id))
            .map(|g| g.name.clone())
    }
}
