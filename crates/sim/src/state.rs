//! The simulated world: tenants with runner groups, scale sets with their session, message log
//! and jobs, and the agents registered by `generatejitconfig`. Every rule of the protocol
//! reference that is about state (uniqueness, one session per scale set, at-least-once delivery,
//! capacity gating, assignment modes, reassignment, dormancy, simulated runners) lives here, as
//! plain synchronous methods that take the current simulated time as an argument.
//!
//! Each concern has its module, and its behaviour sits on its own type: `tenant` (runner
//! groups), `scale_set` (a scale set's session, jobs and message log), `session`, `job` (job
//! states, events and messages), `agent` (registered and simulated runners), `error` (what the
//! world refuses). `State` owns them all, finds the one a call is about and hands the call to
//! it; the modules never reach back into `State`.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use crate::clock::SimTime;
use crate::config::{AssignmentMode, SimConfig};
use crate::scope::Scope;
use crate::snapshot::{
    AgentInfo, JobInfo, JobSpec, RunnerGroupInfo, ScaleSetInfo, SessionInfo, StateSnapshot,
    Statistics,
};

mod agent;
mod error;
mod job;
mod name;
mod saved;
mod scale_set;
mod session;
mod tenant;

use agent::Step;
pub(crate) use agent::{Agent, AgentPhase};
pub(crate) use error::StateError;
pub(crate) use job::{Delivery, Job, JobEvent, JobState, MAX_JOBS_PER_ENQUEUE};
use name::same_name;
pub(crate) use saved::{SAVED_VERSION, Saved};
pub(crate) use scale_set::{Label, ScaleSet, ScaleSetInput};
pub(crate) use session::Session;
pub(crate) use tenant::{RunnerGroup, Tenant};

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

    // ----- runner groups ------------------------------------------------------------------------

    /// Runner groups of `scope`, filtered by name (case-insensitive) when given.
    pub(crate) fn groups(&self, scope: &Scope, name: Option<&str>) -> Vec<RunnerGroup> {
        self.tenants
            .get(scope)
            .map(|t| t.groups(name))
            .unwrap_or_default()
    }

    /// Creates a runner group; names are unique per tenant, case-insensitively.
    pub(crate) fn create_group(&mut self, scope: &Scope, name: &str) -> Result<i64, StateError> {
        self.tenants
            .entry(scope.clone())
            .or_insert_with(Tenant::new)
            .create_group(scope, name)
    }

    fn has_group(&self, scope: &Scope, id: i64) -> bool {
        self.tenants
            .get(scope)
            .is_some_and(|t| t.group(id).is_some())
    }

    // ----- scale sets ---------------------------------------------------------------------------

    /// The scale set `id` if it belongs to `scope`.
    pub(crate) fn scale_set(&self, scope: &Scope, id: i64) -> Result<&ScaleSet, StateError> {
        self.scale_sets
            .get(&id)
            .filter(|s| &s.scope == scope)
            .ok_or(StateError::ScaleSetNotFound(id))
    }

    fn scale_set_mut(&mut self, scope: &Scope, id: i64) -> Result<&mut ScaleSet, StateError> {
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
        if !self.has_group(scope, group_id) {
            return Err(StateError::RunnerGroupNotFound(group_id));
        }
        if !self
            .find_scale_sets(scope, Some(group_id), Some(&name))
            .is_empty()
        {
            return Err(StateError::ScaleSetExists { name });
        }
        let id = self.next_scale_set_id;
        self.next_scale_set_id += 1;
        self.scale_sets
            .insert(id, ScaleSet::new(id, scope, name, group_id, input, now));
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
        if !self.has_group(scope, group_id) {
            return Err(StateError::RunnerGroupNotFound(group_id));
        }
        if self
            .find_scale_sets(scope, Some(group_id), Some(&name))
            .iter()
            .any(|s| s.id != id)
        {
            return Err(StateError::ScaleSetExists { name });
        }
        self.scale_set_mut(scope, id)?.apply(name, group_id, patch);
        Ok(())
    }

    /// Deletes a scale set with its session, jobs, messages and agents.
    pub(crate) fn delete_scale_set(&mut self, id: i64) -> Option<ScaleSet> {
        let set = self.delete_scale_set_keeping_runners(id)?;
        self.agents.retain(|_, a| a.scale_set_id != id);
        Some(set)
    }

    /// Deletes a scale set with its session, jobs and messages, and leaves its agents
    /// registered (whether GitHub keeps them is unverified): they still answer by id and name
    /// with the deleted set's id, an idle one never gets a job, and a busy one finishes its job
    /// at its time and deregisters.
    pub(crate) fn delete_scale_set_keeping_runners(&mut self, id: i64) -> Option<ScaleSet> {
        let set = self.scale_sets.remove(&id)?;
        set.notify.notify_waiters();
        Some(set)
    }

    // ----- sessions -----------------------------------------------------------------------------

    /// Opens the scale set's one session; 409 if another is active.
    pub(crate) fn create_session(
        &mut self,
        scope: &Scope,
        id: i64,
        owner: &str,
        now: SimTime,
        conflict_names_owner: bool,
    ) -> Result<Session, StateError> {
        self.scale_set_mut(scope, id)?
            .open_session(owner, now, conflict_names_owner)
    }

    /// Refreshes the active session `sid` of scale set `id`; 404 `RunnerAdminException` if
    /// unknown.
    pub(crate) fn refresh_session(
        &mut self,
        scope: &Scope,
        id: i64,
        sid: &str,
        now: SimTime,
    ) -> Result<Session, StateError> {
        self.scale_set_mut(scope, id)?.refresh_session(sid, now)
    }

    /// Closes session `sid`; 400 `RunnerScaleSetSessionExpiredException` if unknown.
    pub(crate) fn delete_session(
        &mut self,
        scope: &Scope,
        id: i64,
        sid: &str,
        now: SimTime,
    ) -> Result<(), StateError> {
        self.scale_set_mut(scope, id)?.close_session(sid, now)
    }

    /// Drops the scale set's session as if the service evicted it; true if there was one.
    pub(crate) fn evict_session(&mut self, id: i64, now: SimTime) -> bool {
        self.scale_sets
            .get_mut(&id)
            .is_some_and(|s| s.evict_session(now))
    }

    /// Whether `session` is still the active session of scale set `id`.
    pub(crate) fn session_active(&self, id: i64, session: &str) -> bool {
        self.scale_sets
            .get(&id)
            .is_some_and(|s| s.session_active(session))
    }

    /// Records activity (a poll or an acknowledgement) on the session of scale set `id`.
    pub(crate) fn touch_session(&mut self, id: i64, now: SimTime) {
        if let Some(set) = self.scale_sets.get_mut(&id) {
            set.touch_session(now);
        }
    }

    // ----- message queue ------------------------------------------------------------------------

    /// Serves one poll: releases jobs within `capacity`, turns pending job events into
    /// messages, and returns the first un-deleted message after `last_message_id`.
    pub(crate) fn poll(
        &mut self,
        id: i64,
        last_message_id: i64,
        capacity: Option<u64>,
        mode: AssignmentMode,
        now: SimTime,
    ) -> Option<Delivery> {
        let set = self.scale_sets.get_mut(&id)?;
        set.release(capacity, mode, now);
        set.log_pending(now, &mut self.next_message_id);
        let message = set.message_after(last_message_id)?.clone();
        Some(Delivery {
            id: message.id,
            events: message.events,
            statistics: self.statistics(id),
        })
    }

    /// Deletes (acknowledges) message `message_id` of scale set `id`.
    pub(crate) fn ack(&mut self, id: i64, message_id: i64) {
        if let Some(set) = self.scale_sets.get_mut(&id) {
            set.ack(message_id);
        }
    }

    /// Jobs of scale set `id` that are offered and not yet acquired.
    pub(crate) fn acquirable(&self, scope: &Scope, id: i64) -> Result<Vec<Job>, StateError> {
        Ok(self.scale_set(scope, id)?.acquirable())
    }

    /// Acquires the offered jobs among `request_ids`; returns the ids actually acquired.
    pub(crate) fn acquire(&mut self, id: i64, request_ids: &[i64]) -> Vec<i64> {
        self.scale_sets
            .get_mut(&id)
            .map_or_else(Vec::new, |s| s.acquire(request_ids))
    }

    // ----- jobs ---------------------------------------------------------------------------------

    /// Queues jobs for scale set `id`; returns their runner request ids.
    pub(crate) fn enqueue(
        &mut self,
        id: i64,
        spec: &JobSpec,
        mode: AssignmentMode,
        now: SimTime,
    ) -> Result<Vec<i64>, StateError> {
        if spec.count > MAX_JOBS_PER_ENQUEUE {
            return Err(StateError::TooManyJobs { count: spec.count });
        }
        let (owner, repository) = {
            let set = self
                .scale_sets
                .get(&id)
                .ok_or(StateError::EnqueueTargetNotFound(id))?;
            let default_owner = match &set.scope {
                Scope::Organization(o) => o.clone(),
                Scope::Repository { owner, .. } => owner.clone(),
                Scope::Enterprise(e) => e.clone(),
            };
            let default_repo = match &set.scope {
                Scope::Repository { name, .. } => name.clone(),
                _ => "app".to_owned(),
            };
            let repository = spec.repository.clone().unwrap_or(default_repo);
            let owner = spec.owner.clone().unwrap_or(default_owner);
            (owner, repository)
        };
        let run_for = match spec.run_seconds {
            None => None,
            Some(secs) => Some(
                Duration::try_from_secs_f64(secs).map_err(|_| StateError::BadRunSeconds(secs))?,
            ),
        };
        let mut ids = Vec::new();
        for _ in 0..spec.count.max(1) {
            let request_id = self.next_request_id;
            self.next_request_id += 1;
            let run_id = self.next_run_id;
            self.next_run_id += 1;
            let set = self
                .scale_sets
                .get_mut(&id)
                .ok_or(StateError::EnqueueTargetNotFound(id))?;
            let labels = if spec.labels.is_empty() {
                vec![set.name.clone()]
            } else {
                spec.labels.clone()
            };
            set.enqueue(Job {
                request_id,
                wire_request_id: match mode {
                    AssignmentMode::AutoAssign => 0,
                    AssignmentMode::AvailableThenAcquire => request_id,
                },
                job_id: uuid::Uuid::new_v4().to_string(),
                workflow_ref: spec.workflow_ref.clone().unwrap_or_else(|| {
                    format!("{owner}/{repository}/.github/workflows/ci.yml@refs/heads/main")
                }),
                repository: repository.clone(),
                owner: owner.clone(),
                display_name: spec
                    .display_name
                    .clone()
                    .unwrap_or_else(|| format!("job {request_id}")),
                run_id,
                event_name: "push".to_owned(),
                labels,
                result: spec
                    .result
                    .clone()
                    .unwrap_or_else(|| "succeeded".to_owned()),
                run_for,
                queue_time: now,
                assigned_at: None,
                runner_assigned_at: None,
                finished_at: None,
                state: JobState::Queued,
                reassignments: 0,
                runner: None,
            });
            ids.push(request_id);
        }
        Ok(ids)
    }

    /// Derived statistics of scale set `id`: its jobs, and the agents registered for it.
    pub(crate) fn statistics(&self, id: i64) -> Statistics {
        let mut stats = self
            .scale_sets
            .get(&id)
            .map(ScaleSet::job_statistics)
            .unwrap_or_default();
        for agent in self.agents.values().filter(|a| a.scale_set_id == id) {
            stats.total_registered_runners += 1;
            if agent.is_busy() {
                stats.total_busy_runners += 1;
            } else {
                stats.total_idle_runners += 1;
            }
        }
        stats
    }

    // ----- agents -------------------------------------------------------------------------------

    /// Registers an agent for scale set `id`; 409 `AgentExistsException` on a duplicate name.
    pub(crate) fn register_agent(
        &mut self,
        scope: &Scope,
        id: i64,
        name: &str,
        now: SimTime,
    ) -> Result<Agent, StateError> {
        self.scale_set(scope, id)?;
        if name.trim().is_empty() {
            return Err(StateError::EmptyRunnerName);
        }
        if self
            .agents
            .values()
            .any(|a| &a.scope == scope && same_name(&a.name, name))
        {
            return Err(StateError::AgentExists {
                name: name.to_owned(),
            });
        }
        let agent = Agent {
            id: self.next_agent_id,
            scope: scope.clone(),
            name: name.to_owned(),
            scale_set_id: id,
            created_on: now,
            phase: AgentPhase::Registered,
        };
        self.next_agent_id += 1;
        self.agents.insert(agent.id, agent.clone());
        Ok(agent)
    }

    /// Agent `id` of `scope`; 404 `AgentNotFoundException` if unknown.
    pub(crate) fn agent(&self, scope: &Scope, id: i64) -> Result<&Agent, StateError> {
        self.agents
            .get(&id)
            .filter(|a| &a.scope == scope)
            .ok_or(StateError::AgentNotFound(id))
    }

    /// Agents of `scope`, filtered by name (case-insensitive) when given.
    pub(crate) fn find_agents(&self, scope: &Scope, name: Option<&str>) -> Vec<&Agent> {
        self.agents
            .values()
            .filter(|a| &a.scope == scope)
            .filter(|a| name.is_none_or(|n| same_name(&a.name, n)))
            .collect()
    }

    /// Removes agent `id`; 400 `JobStillRunningException` while it runs a job.
    pub(crate) fn remove_agent(&mut self, scope: &Scope, id: i64) -> Result<(), StateError> {
        if self.agent(scope, id)?.is_busy() {
            return Err(StateError::JobStillRunning(id));
        }
        self.agents.remove(&id);
        Ok(())
    }

    /// Connects a simulated runner as agent `id`; it then takes one assigned job.
    pub(crate) fn start_runner(&mut self, id: i64) -> Result<(), StateError> {
        self.agents
            .get_mut(&id)
            .ok_or(StateError::RunnerNotRegistered(id))?
            .start()
    }

    pub(crate) fn disconnect_runner(&mut self, id: i64) -> Result<(), StateError> {
        self.agents
            .get_mut(&id)
            .ok_or(StateError::AgentNotFound(id))?
            .disconnect()
    }

    // ----- timers -------------------------------------------------------------------------------

    /// Runs everything that is due at `now`: simulated runners take jobs and finish them,
    /// delayed job events that came due wake the polls, unattended assignments are cancelled
    /// and requeued, idle sessions expire, dormant scale sets are deleted. Returns the ids of
    /// the scale sets deleted for dormancy.
    pub(crate) fn process(&mut self, config: &SimConfig, now: SimTime) -> Vec<i64> {
        let mut finished = Vec::new();
        for agent in self.agents.values_mut() {
            let Some(set) = self.scale_sets.get_mut(&agent.scale_set_id) else {
                // Its scale set was deleted with the runner left registered: the runner
                // process still ends its job and deregisters (ephemeral).
                if agent.finished_without_set(now) {
                    finished.push(agent.id);
                }
                continue;
            };
            if agent.work(set, config, now) == Step::Deregisters {
                finished.push(agent.id);
            }
        }
        for id in finished {
            self.agents.remove(&id);
        }
        for set in self.scale_sets.values_mut() {
            set.wake_if_due(now);
            if let Some(after) = config.reassign_after {
                set.reassign(after, config.max_reassignments, now);
            }
            if let Some(expiry) = config.session_expiry {
                set.expire_session(expiry, now);
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

    // ----- inspection ---------------------------------------------------------------------------

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
                pending_job_messages: s.pending_events(),
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

#[cfg(test)]
mod tests;
