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

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::Duration;

use crate::clock::SimTime;
use crate::config::{AssignmentMode, SimConfig};
use crate::scope::Scope;
use crate::snapshot::{
    AgentInfo, JobInfo, JobSpec, RunnerGroupInfo, ScaleSetInfo, SessionInfo, StateSnapshot,
    Statistics,
};

mod agent;
mod agents;
mod error;
mod job;
mod name;
mod saved;
mod scale_set;
mod session;
mod tenant;

use agent::Step;
pub(crate) use agent::{Agent, AgentPhase};
use agents::Agents;
pub(crate) use error::StateError;
pub(crate) use job::{Delivery, Job, JobEvent, JobState, MAX_JOBS_PER_ENQUEUE};
use name::{folded, same_name};
pub(crate) use saved::{SAVED_VERSION, Saved};
pub(crate) use scale_set::{Label, ScaleSet, ScaleSetInput};
pub(crate) use session::Session;
pub(crate) use tenant::{RunnerGroup, Tenant};

/// The whole simulated world.
#[derive(Debug)]
pub(crate) struct State {
    pub(crate) tenants: BTreeMap<Scope, Tenant>,
    pub(crate) scale_sets: BTreeMap<i64, ScaleSet>,
    /// The ids of the scale sets of each scope by [`folded`] name, so a lookup by name (every
    /// adoption's, every create's uniqueness check) does not compare with every scale set.
    /// Changed only beside `scale_sets`, by the methods that add, rename or remove a set.
    names: ScaleSetNames,
    /// The scale sets a timer may act on, so a tick (one per request) does not visit every
    /// scale set. Noted after every change of a set ([`State::noted`]).
    timers: Timers,
    /// The registered agents, indexed by name, scale set and whether a runner connected.
    pub(crate) agents: Agents,
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
            names: ScaleSetNames::default(),
            timers: Timers::default(),
            agents: Agents::default(),
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

    /// Changes the scale set `id` of `scope` with `change`, then notes it in the timers.
    fn change_in_scope<R>(
        &mut self,
        scope: &Scope,
        id: i64,
        change: impl FnOnce(&mut ScaleSet) -> R,
    ) -> Result<R, StateError> {
        let set = self
            .scale_sets
            .get_mut(&id)
            .filter(|s| &s.scope == scope)
            .ok_or(StateError::ScaleSetNotFound(id))?;
        let result = change(set);
        self.timers.note(set);
        Ok(result)
    }

    /// Changes the scale set `id` with `change`, then notes it in the timers; `None` if there
    /// is no such set.
    fn change<R>(&mut self, id: i64, change: impl FnOnce(&mut ScaleSet) -> R) -> Option<R> {
        let set = self.scale_sets.get_mut(&id)?;
        let result = change(set);
        self.timers.note(set);
        Some(result)
    }

    /// Scale sets of `scope`, optionally filtered by group and (case-insensitive) name.
    pub(crate) fn find_scale_sets(
        &self,
        scope: &Scope,
        group: Option<i64>,
        name: Option<&str>,
    ) -> Vec<&ScaleSet> {
        let Some(name) = name else {
            return self
                .scale_sets
                .values()
                .filter(|s| &s.scope == scope)
                .filter(|s| group.is_none_or(|g| s.group_id == g))
                .collect();
        };
        self.names
            .ids(scope, name)
            .filter_map(|id| self.scale_sets.get(&id))
            .filter(|s| group.is_none_or(|g| s.group_id == g))
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
        self.names.insert(scope, &name, id);
        let set = ScaleSet::new(id, scope, name, group_id, input, now);
        self.timers.note(&set);
        self.scale_sets.insert(id, set);
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
        let (old, new) = self.change_in_scope(scope, id, |set| {
            let old = std::mem::take(&mut set.name);
            set.apply(name, group_id, patch);
            (old, set.name.clone())
        })?;
        self.names.remove(scope, &old, id);
        self.names.insert(scope, &new, id);
        Ok(())
    }

    /// Deletes a scale set with its session, jobs, messages and agents.
    pub(crate) fn delete_scale_set(&mut self, id: i64) -> Option<ScaleSet> {
        let set = self.delete_scale_set_keeping_runners(id)?;
        self.agents.remove_set(id);
        Some(set)
    }

    /// Deletes a scale set with its session, jobs and messages, and leaves its agents
    /// registered (whether GitHub keeps them is unverified): they still answer by id and name
    /// with the deleted set's id, an idle one never gets a job, and a busy one finishes its job
    /// at its time and deregisters.
    pub(crate) fn delete_scale_set_keeping_runners(&mut self, id: i64) -> Option<ScaleSet> {
        let set = self.scale_sets.remove(&id)?;
        self.names.remove(&set.scope, &set.name, id);
        self.timers.forget(id);
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
        self.change_in_scope(scope, id, |s| {
            s.open_session(owner, now, conflict_names_owner)
        })?
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
        self.change_in_scope(scope, id, |s| s.refresh_session(sid, now))?
    }

    /// Closes session `sid`; 400 `RunnerScaleSetSessionExpiredException` if unknown.
    pub(crate) fn delete_session(
        &mut self,
        scope: &Scope,
        id: i64,
        sid: &str,
        now: SimTime,
    ) -> Result<(), StateError> {
        self.change_in_scope(scope, id, |s| s.close_session(sid, now))?
    }

    /// Drops the scale set's session as if the service evicted it; true if there was one.
    pub(crate) fn evict_session(&mut self, id: i64, now: SimTime) -> bool {
        self.change(id, |s| s.evict_session(now)).unwrap_or(false)
    }

    /// Whether `session` is still the active session of scale set `id`.
    pub(crate) fn session_active(&self, id: i64, session: &str) -> bool {
        self.scale_sets
            .get(&id)
            .is_some_and(|s| s.session_active(session))
    }

    /// Records activity (a poll or an acknowledgement) on the session of scale set `id`.
    pub(crate) fn touch_session(&mut self, id: i64, now: SimTime) {
        // Only the session's last activity changes, which the timers do not index (an
        // expiry visits every set, see `process`).
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
        self.timers.note(set);
        let message = set.message_after(last_message_id)?.clone();
        Some(Delivery {
            id: message.id,
            events: message.events,
            statistics: self.statistics(id),
        })
    }

    /// Deletes (acknowledges) message `message_id` of scale set `id`.
    pub(crate) fn ack(&mut self, id: i64, message_id: i64) {
        self.change(id, |s| s.ack(message_id));
    }

    /// Jobs of scale set `id` that are offered and not yet acquired.
    pub(crate) fn acquirable(&self, scope: &Scope, id: i64) -> Result<Vec<Job>, StateError> {
        Ok(self.scale_set(scope, id)?.acquirable())
    }

    /// Acquires the offered jobs among `request_ids`; returns the ids actually acquired.
    pub(crate) fn acquire(&mut self, id: i64, request_ids: &[i64]) -> Vec<i64> {
        self.change(id, |s| s.acquire(request_ids))
            .unwrap_or_default()
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
            // A queued job has no timer until a poll releases it (noted there).
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
        for agent in self.agents.of_set(id) {
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
        if self.agents.named(scope, name).is_some() {
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
        self.agents.insert(agent.clone());
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
        if let Some(name) = name {
            return self.agents.named(scope, name).into_iter().collect();
        }
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
        self.agents.remove(id);
        Ok(())
    }

    /// Connects a simulated runner as agent `id`; it then takes one assigned job.
    pub(crate) fn start_runner(&mut self, id: i64) -> Result<(), StateError> {
        self.agents.start(id)
    }

    pub(crate) fn disconnect_runner(&mut self, id: i64) -> Result<(), StateError> {
        self.agents.disconnect(id)
    }

    // ----- timers -------------------------------------------------------------------------------

    /// Runs everything that is due at `now`: simulated runners take jobs and finish them,
    /// delayed job events that came due wake the polls, unattended assignments are cancelled
    /// and requeued, idle sessions expire, dormant scale sets are deleted. Returns the ids of
    /// the scale sets deleted for dormancy.
    pub(crate) fn process(&mut self, config: &SimConfig, now: SimTime) -> Vec<i64> {
        #[cfg(test)]
        self.timers.assert_indexes(&self.scale_sets);
        #[cfg(test)]
        self.agents.assert_indexes();
        let mut finished = Vec::new();
        // Only the runners that connected act on a tick: under a stream of jobs most agents are
        // registered by the JIT POST with their machine not up yet (issue 35: at 1,000 jobs/s
        // every request visited thousands of agents and refiled each one's set).
        for id in self.agents.started() {
            let scale_sets = &mut self.scale_sets;
            let timers = &mut self.timers;
            let step = self.agents.change(id, |agent| {
                let Some(set) = scale_sets.get_mut(&agent.scale_set_id) else {
                    // Its scale set was deleted with the runner left registered: the runner
                    // process still ends its job and deregisters (ephemeral).
                    return if agent.finished_without_set(now) {
                        Step::Deregisters
                    } else {
                        Step::Stays
                    };
                };
                let before = agent.phase.clone();
                let step = agent.work(set, config, now);
                // A step that left the runner as it was left its set as it was too.
                if step == Step::Deregisters || agent.phase != before {
                    timers.note(set);
                }
                step
            });
            if step == Some(Step::Deregisters) {
                finished.push(id);
            }
        }
        for id in finished {
            self.agents.remove(id);
        }
        // Sets with neither job events nor assigned jobs have nothing to wake or reassign; only
        // a session expiry, which concerns every session, needs them all.
        let visit: Vec<i64> = if config.session_expiry.is_some() {
            self.scale_sets.keys().copied().collect()
        } else {
            self.timers.with_jobs.iter().copied().collect()
        };
        for id in visit {
            self.change(id, |set| {
                set.wake_if_due(now);
                if let Some(after) = config.reassign_after {
                    set.reassign(after, config.max_reassignments, now);
                }
                if let Some(expiry) = config.session_expiry {
                    set.expire_session(expiry, now);
                }
            });
        }
        let mut deleted = Vec::new();
        if let Some(dormancy) = config.dormancy {
            let mut dormant = self.timers.idle_for(dormancy, now);
            // In id order, as a scan of every set finds them.
            dormant.sort_unstable();
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

/// The scale sets' ids by scope and [`folded`] name: two names [`same_name`] holds equal share
/// one entry, so the ids under the folded form of a name are exactly the sets a scan with
/// `same_name` would find, in id order.
#[derive(Debug, Default)]
struct ScaleSetNames(HashMap<Scope, HashMap<String, BTreeSet<i64>>>);

impl ScaleSetNames {
    /// The index of `sets`.
    fn of<'a>(sets: impl IntoIterator<Item = &'a ScaleSet>) -> Self {
        let mut names = Self::default();
        for set in sets {
            names.insert(&set.scope, &set.name, set.id);
        }
        names
    }

    fn insert(&mut self, scope: &Scope, name: &str, id: i64) {
        self.0
            .entry(scope.clone())
            .or_default()
            .entry(folded(name))
            .or_default()
            .insert(id);
    }

    fn remove(&mut self, scope: &Scope, name: &str, id: i64) {
        let Some(names) = self.0.get_mut(scope) else {
            return;
        };
        let key = folded(name);
        if let Some(ids) = names.get_mut(&key) {
            ids.remove(&id);
            if ids.is_empty() {
                names.remove(&key);
            }
        }
    }

    /// The ids of the sets of `scope` named `name` (case-insensitively), in id order.
    fn ids(&self, scope: &Scope, name: &str) -> impl Iterator<Item = i64> + '_ {
        self.0
            .get(scope)
            .and_then(|names| names.get(&folded(name)))
            .into_iter()
            .flatten()
            .copied()
    }
}

/// The scale sets a timer of [`State::process`] may act on. Every change of a set is noted
/// ([`Timers::note`]) by the `State` method that made it, so a tick visits only these instead
/// of every scale set (issue 35: at 10,000 sets the tick of every request was a scan).
#[derive(Debug, Default)]
struct Timers {
    /// Sets with job events waiting or a job assigned ([`ScaleSet::has_job_timers`]).
    with_jobs: BTreeSet<i64>,
    /// Sets without a session, by when they became idle, for dormancy.
    idle: BTreeSet<(SimTime, i64)>,
    /// The `idle` entry of each set in it.
    idle_since: HashMap<i64, SimTime>,
}

impl Timers {
    /// The index of `sets`.
    fn of<'a>(sets: impl IntoIterator<Item = &'a ScaleSet>) -> Self {
        let mut timers = Self::default();
        for set in sets {
            timers.note(set);
        }
        timers
    }

    /// Files `set` as it is now.
    fn note(&mut self, set: &ScaleSet) {
        if set.has_job_timers() {
            self.with_jobs.insert(set.id);
        } else {
            self.with_jobs.remove(&set.id);
        }
        let idle = set.session.is_none().then_some(set.idle_since);
        let filed = self.idle_since.get(&set.id).copied();
        if filed == idle {
            return;
        }
        if let Some(since) = filed {
            self.idle.remove(&(since, set.id));
            self.idle_since.remove(&set.id);
        }
        if let Some(since) = idle {
            self.idle.insert((since, set.id));
            self.idle_since.insert(set.id, since);
        }
    }

    /// Forgets a deleted set.
    fn forget(&mut self, id: i64) {
        self.with_jobs.remove(&id);
        if let Some(since) = self.idle_since.remove(&id) {
            self.idle.remove(&(since, id));
        }
    }

    /// The sets without a session for at least `dormancy` at `now`: the longest idle come
    /// first, so the walk stops at the first that is not.
    fn idle_for(&self, dormancy: Duration, now: SimTime) -> Vec<i64> {
        self.idle
            .iter()
            .take_while(|(since, _)| now.since(*since) >= dormancy)
            .map(|(_, id)| *id)
            .collect()
    }

    /// Panics unless the index is what noting every set of `sets` afresh gives: every test
    /// that runs the timers checks that no change went un-noted.
    #[cfg(test)]
    fn assert_indexes(&self, sets: &BTreeMap<i64, ScaleSet>) {
        let fresh = Self::of(sets.values());
        assert_eq!(self.with_jobs, fresh.with_jobs, "sets with job timers");
        assert_eq!(self.idle, fresh.idle, "idle sets");
        assert_eq!(self.idle_since, fresh.idle_since, "idle sets by id");
    }
}

#[cfg(test)]
mod tests;
