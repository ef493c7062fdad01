//! The simulated world: tenants with runner groups, scale sets with their session, message log
//! and jobs, and the agents registered by `generatejitconfig`. Every rule of the protocol
//! reference that is about state (uniqueness, one session per scale set, at-least-once delivery,
//! capacity gating, assignment modes, reassignment, dormancy, simulated runners) lives here, as
//! plain synchronous methods that take the current simulated time as an argument.

use std::collections::{BTreeMap, HashMap};

use crate::clock::SimTime;
use crate::config::SimConfig;
use crate::scope::Scope;
use crate::snapshot::{
    AgentInfo, JobInfo, RunnerGroupInfo, ScaleSetInfo, SessionInfo, StateSnapshot,
};

/// The whole simulated world.
#[derive(Debug)]
pub(crate) struct State {
    pub(crate) tenants: BTreeMap<Scope, Tenant>,
    pub(crate) scale_sets: BTreeMap<i64, ScaleSet>,
    pub(crate) agents: BTreeMap<i64, Agent>,
    /// Installation token → (installation id, expiry).
    pub(crate) installation_tokens: HashMap<String, (i64, SimTime)>,
    /// Registration token → (scope, expiry).
    pub(crate) registration_tokens: HashMap<String, (Scope, SimTime)>,
    next_scale_set_id: i64,
    next_agent_id: i64,
    next_message_id: i64,
    next_request_id: i64,
    next_run_id: i64,
}

fn same_name(a: &str, b: &str) -> bool {
    a.to_lowercase() == b.to_lowercase()
}

impl State {
    /// The world as `config` seeds it.
    pub(crate) fn new(config: &SimConfig) -> Self {
        let mut state = Self {
            tenants: BTreeMap::new(),
            scale_sets: BTreeMap::new(),
            agents: BTreeMap::new(),
            installation_tokens: HashMap::new(),
            registration_tokens: HashMap::new(),
            next_scale_set_id: 1,
            next_agent_id: 1,
            next_message_id: 1,
            next_request_id: 1,
            next_run_id: 1000,
        };
        let scopes = config
            .organizations
            .iter()
            .filter_map(|o| Scope::parse_path(o))
            .chain(
                config
                    .repositories
                    .iter()
                    .filter_map(|r| Scope::parse_path(r)),
            )
            .chain(
                config
                    .enterprises
                    .iter()
                    .map(|e| Scope::Enterprise(e.to_lowercase())),
            );
        for scope in scopes {
            state.tenants.entry(scope).or_insert_with(Tenant::new);
        }
        for seed in &config.runner_groups {
            if let Some(scope) = Scope::parse_path(&seed.scope) {
                // Seeds are validated; a duplicate name simply keeps the first.
                let _ = state.create_group(&scope, &seed.name);
            }
        }
        state
    }

    /// Whether `scope` exists (is seeded).
    pub(crate) fn has_scope(&self, scope: &Scope) -> bool {
        self.tenants.contains_key(scope)
    }

    /// Runs everything that is due at `now`: simulated runners take jobs and finish them,
    /// unattended assignments are cancelled and requeued, dormant scale sets are deleted.
    /// Returns the ids of the scale sets deleted for dormancy.
    pub(crate) fn process(&mut self, config: &SimConfig, now: SimTime) -> Vec<i64> {
        self.run_runners(config, now);
        for set in self.scale_sets.values() {
            // A delayed `JobStarted` that came due wakes the held polls to go out on its own.
            if set.pending.iter().any(|p| p.due <= now) {
                set.notify.notify_waiters();
            }
        }
        if let Some(after) = config.reassign_after {
            for set in self.scale_sets.values_mut() {
                set.reassign(after, config.max_reassignments, now);
            }
        }
        if let Some(expiry) = config.session_expiry {
            for set in self.scale_sets.values_mut() {
                if set
                    .session
                    .as_ref()
                    .is_some_and(|s| now.since(s.last_seen) >= expiry)
                {
                    set.session = None;
                    set.idle_since = now;
                    set.notify.notify_waiters();
                }
            }
        }
        let mut deleted = Vec::new();
        if let Some(dormancy) = config.dormancy {
            let dormant: Vec<i64> = self
                .scale_sets
                .values()
                .filter(|s| s.session.is_none() && now.since(s.idle_since) >= dormancy)
                .map(|s| s.id)
                .collect();
            for id in dormant {
                self.delete_scale_set(id);
                deleted.push(id);
            }
        }
        deleted
    }

    /// A copy of everything, for the control API.
    pub(crate) fn snapshot(&self) -> StateSnapshot {
        let runner_groups = self
            .tenants
            .iter()
            .flat_map(|(scope, t)| {
                t.groups.values().map(move |g| RunnerGroupInfo {
                    scope: scope.to_string(),
                    id: g.id,
                    name: g.name.clone(),
                    is_default: g.is_default,
                })
            })
            .collect();
        let scale_sets = self
            .scale_sets
            .values()
            .map(|s| ScaleSetInfo {
                id: s.id,
                scope: s.scope.to_string(),
                name: s.name.clone(),
                runner_group_id: s.group_id,
                labels: s.labels.iter().map(|l| l.name.clone()).collect(),
                session: s.session.as_ref().map(|x| SessionInfo {
                    session_id: x.id.clone(),
                    owner_name: x.owner.clone(),
                    created: x.created.to_rfc3339(),
                }),
                unacknowledged_message_ids: s.log.iter().map(|m| m.id).collect(),
                pending_job_messages: s.pending.len(),
                statistics: self.statistics(s.id),
            })
            .collect();
        let jobs = self
            .scale_sets
            .values()
            .flat_map(|s| {
                s.jobs.values().map(move |j| JobInfo {
                    runner_request_id: j.request_id,
                    job_id: j.job_id.clone(),
                    scale_set_id: s.id,
                    state: j.state.name().to_owned(),
                    result: match &j.state {
                        JobState::Completed(r) => Some(r.clone()),
                        _ => None,
                    },
                    reassignments: j.reassignments,
                    runner_name: j.runner.as_ref().map(|r| r.1.clone()),
                })
            })
            .collect();
        let agents = self
            .agents
            .values()
            .map(|a| AgentInfo {
                id: a.id,
                name: a.name.clone(),
                scope: a.scope.to_string(),
                scale_set_id: a.scale_set_id,
                status: match a.phase {
                    AgentPhase::Registered => "registered",
                    AgentPhase::Idle => "idle",
                    AgentPhase::Busy { .. } => "busy",
                }
                .to_owned(),
                busy_with: match a.phase {
                    AgentPhase::Busy { request_id, .. } => Some(request_id),
                    _ => None,
                },
            })
            .collect();
        StateSnapshot {
            runner_groups,
            scale_sets,
            jobs,
            agents,
        }
    }
}

mod agent;
mod error;
mod job;
mod scale_set;
mod session;
mod tenant;

pub(crate) use agent::{Agent, AgentPhase};
pub(crate) use error::StateError;
pub(crate) use job::{Delivery, Job, JobEvent, JobState, MAX_JOBS_PER_ENQUEUE};
pub(crate) use scale_set::{Label, ScaleSet, ScaleSetInput};
pub(crate) use session::Session;
pub(crate) use tenant::{RunnerGroup, Tenant};

#[cfg(test)]
mod tests;
