//! The registered agents with the indexes a request needs, so that no request visits every
//! agent: under a stream of jobs there are thousands, and each request used to scan them all
//! (the name check of every JIT POST, each tick's walk, each scale set's statistics). At 1,000
//! jobs/s that made the simulator, not the worker it serves, the bound of the benchmark
//! (issue 35, `docs/benchmarks.md`, "The simulator's agents").

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::ops::Deref;

use super::agent::{Agent, AgentPhase};
use super::error::StateError;
use super::name::folded;
use crate::scope::Scope;

/// The agents by id (read through `Deref`), changed only through the methods here, which keep
/// the indexes beside them.
#[derive(Debug, Default)]
pub(crate) struct Agents {
    by_id: BTreeMap<i64, Agent>,
    /// Agent ids by scope and [`folded`] name: names are unique per scope, case-insensitively.
    names: HashMap<Scope, HashMap<String, i64>>,
    /// Agent ids by scale set.
    by_set: HashMap<i64, BTreeSet<i64>>,
    /// The agents a simulated runner has connected as (idle or busy): the only ones a tick
    /// moves. Ordered by id, as a walk of every agent visits them.
    started: BTreeSet<i64>,
}

impl Deref for Agents {
    type Target = BTreeMap<i64, Agent>;

    fn deref(&self) -> &Self::Target {
        &self.by_id
    }
}

impl Agents {
    /// The agents of `agents`, indexed.
    pub(crate) fn of(agents: impl IntoIterator<Item = Agent>) -> Self {
        let mut all = Self::default();
        for agent in agents {
            all.insert(agent);
        }
        all
    }

    /// Adds (or replaces) `agent`.
    pub(crate) fn insert(&mut self, agent: Agent) {
        self.remove(agent.id);
        self.names
            .entry(agent.scope.clone())
            .or_default()
            .insert(folded(&agent.name), agent.id);
        self.by_set
            .entry(agent.scale_set_id)
            .or_default()
            .insert(agent.id);
        if agent.phase != AgentPhase::Registered {
            self.started.insert(agent.id);
        }
        self.by_id.insert(agent.id, agent);
    }

    /// Removes agent `id`, if it is registered.
    pub(crate) fn remove(&mut self, id: i64) -> Option<Agent> {
        let agent = self.by_id.remove(&id)?;
        if let Some(names) = self.names.get_mut(&agent.scope) {
            names.remove(&folded(&agent.name));
            if names.is_empty() {
                self.names.remove(&agent.scope);
            }
        }
        if let Some(ids) = self.by_set.get_mut(&agent.scale_set_id) {
            ids.remove(&id);
            if ids.is_empty() {
                self.by_set.remove(&agent.scale_set_id);
            }
        }
        self.started.remove(&id);
        Some(agent)
    }

    /// Removes every agent of scale set `set`.
    pub(crate) fn remove_set(&mut self, set: i64) {
        for id in self.by_set.get(&set).cloned().unwrap_or_default() {
            self.remove(id);
        }
    }

    /// The agent of `scope` named `name` (case-insensitive).
    pub(crate) fn named(&self, scope: &Scope, name: &str) -> Option<&Agent> {
        let id = self.names.get(scope)?.get(&folded(name))?;
        self.by_id.get(id)
    }

    /// The agents of scale set `set`, by id.
    pub(crate) fn of_set(&self, set: i64) -> impl Iterator<Item = &Agent> {
        self.by_set
            .get(&set)
            .into_iter()
            .flatten()
            .filter_map(|id| self.by_id.get(id))
    }

    /// The ids of the agents a runner has connected as, by id.
    pub(crate) fn started(&self) -> Vec<i64> {
        self.started.iter().copied().collect()
    }

    /// Agent `id`, to change its phase with `change`; the started index follows the phase.
    pub(crate) fn change<T>(&mut self, id: i64, change: impl FnOnce(&mut Agent) -> T) -> Option<T> {
        let agent = self.by_id.get_mut(&id)?;
        let out = change(agent);
        if agent.phase == AgentPhase::Registered {
            self.started.remove(&id);
        } else {
            self.started.insert(id);
        }
        Some(out)
    }

    /// Connects a simulated runner as agent `id` ([`Agent::start`]).
    pub(crate) fn start(&mut self, id: i64) -> Result<(), StateError> {
        self.change(id, Agent::start)
            .ok_or(StateError::RunnerNotRegistered(id))?
    }

    /// Disconnects agent `id`'s runner ([`Agent::disconnect`]).
    pub(crate) fn disconnect(&mut self, id: i64) -> Result<(), StateError> {
        self.change(id, Agent::disconnect)
            .ok_or(StateError::AgentNotFound(id))?
    }

    /// Checks every index against one built afresh (tests call it after every change).
    #[cfg(test)]
    pub(crate) fn assert_indexes(&self) {
        let fresh = Self::of(self.by_id.values().cloned());
        assert_eq!(self.names, fresh.names, "the agent name index drifted");
        assert_eq!(self.by_set, fresh.by_set, "the agents-by-set index drifted");
        assert_eq!(
            self.started, fresh.started,
            "the started-agents index drifted"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::SimTime;

    fn agent(id: i64, scope: &Scope, name: &str, set: i64) -> Agent {
        Agent {
            id,
            scope: scope.clone(),
            name: name.to_owned(),
            scale_set_id: set,
            created_on: SimTime::from_millis(0),
            phase: AgentPhase::Registered,
        }
    }

    #[test]
    fn the_indexes_follow_every_change() {
        let acme = Scope::Organization("acme".to_owned());
        let other = Scope::Organization("other".to_owned());
        let mut agents = Agents::default();
        agents.insert(agent(1, &acme, "Runner-A", 10));
        agents.insert(agent(2, &acme, "runner-b", 10));
        agents.insert(agent(3, &other, "runner-a", 20));
        agents.assert_indexes();

        // Names are per scope and case-insensitive.
        assert_eq!(agents.named(&acme, "RUNNER-a").map(|a| a.id), Some(1));
        assert_eq!(agents.named(&other, "runner-A").map(|a| a.id), Some(3));
        assert!(agents.named(&other, "runner-b").is_none());
        let of_set: Vec<i64> = agents.of_set(10).map(|a| a.id).collect();
        assert_eq!(of_set, vec![1, 2]);

        // Only connected runners are started; a disconnect takes one out again.
        assert!(agents.started().is_empty());
        agents.start(2).expect("start");
        agents.start(1).expect("start");
        assert_eq!(agents.started(), vec![1, 2], "in id order");
        assert!(agents.start(1).is_err(), "a second start is refused");
        agents.disconnect(1).expect("disconnect");
        assert_eq!(agents.started(), vec![2]);
        assert!(agents.start(99).is_err(), "unknown agent");
        agents.assert_indexes();

        // Removing an agent or a whole set forgets it everywhere.
        assert_eq!(agents.remove(2).map(|a| a.id), Some(2));
        assert!(agents.named(&acme, "runner-b").is_none());
        assert!(agents.started().is_empty());
        agents.remove_set(10);
        assert!(agents.named(&acme, "runner-a").is_none());
        assert_eq!(agents.of_set(10).count(), 0);
        assert_eq!(agents.keys().copied().collect::<Vec<_>>(), vec![3]);
        agents.assert_indexes();
    }
}
