//! The simulated world: tenants with runner groups, scale sets with their session, message log
//! and jobs, and the agents registered by `generatejitconfig`. Every rule of the protocol
//! reference that is about state (uniqueness, one session per scale set, at-least-once delivery,
//! capacity gating, assignment modes, reassignment, dormancy, simulated runners) lives here, as
//! plain synchronous methods that take the current simulated time as an argument.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;

use crate::clock::SimTime;
use crate::config::{AssignmentMode, SimConfig};
use crate::scope::Scope;
use crate::snapshot::{
    AgentInfo, JobInfo, JobSpec, RunnerGroupInfo, ScaleSetInfo, SessionInfo, StateSnapshot,
    Statistics,
};

/// The most job messages one queue message carries.
const MAX_JOBS_PER_MESSAGE: usize = 50;

/// The most jobs one enqueue may add, so that a huge `count` cannot exhaust memory.
pub(crate) const MAX_JOBS_PER_ENQUEUE: u32 = 10_000;

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
    fn new() -> Self {
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

/// A label of a scale set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Label {
    pub(crate) name: String,
    pub(crate) kind: String,
}

/// The active message session of a scale set.
#[derive(Debug, Clone)]
pub(crate) struct Session {
    pub(crate) id: String,
    pub(crate) owner: String,
    pub(crate) created: SimTime,
    /// Last poll, acknowledgement or refresh.
    pub(crate) last_seen: SimTime,
}

/// A message in a scale set's log, kept until it is deleted (acknowledged).
#[derive(Debug, Clone)]
pub(crate) struct LoggedMessage {
    pub(crate) id: i64,
    /// The job messages it carries (the `body` array on the wire).
    pub(crate) events: Vec<JobEvent>,
}

/// Where a job is in its life.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum JobState {
    /// Waiting on the server side (beyond capacity, or no listener polled yet).
    Queued,
    /// Offered to the scale set as `JobAvailable` (acquire mode).
    Available,
    /// Acquired by the listener, not yet assigned (acquire mode).
    Acquired,
    /// Assigned to the scale set (`JobAssigned` sent), waiting for a runner.
    Assigned,
    /// Taken by a runner (`JobStarted` sent).
    Running,
    /// Finished with this result (`JobCompleted` sent).
    Completed(String),
}

impl JobState {
    fn name(&self) -> &str {
        match self {
            Self::Queued => "queued",
            Self::Available => "available",
            Self::Acquired => "acquired",
            Self::Assigned => "assigned",
            Self::Running => "running",
            Self::Completed(_) => "completed",
        }
    }

    fn in_flight(&self) -> bool {
        matches!(
            self,
            Self::Available | Self::Acquired | Self::Assigned | Self::Running
        )
    }
}

/// A job message of the queue: what happened to a job, with the job as it was then. The
/// protocol module renders it.
#[derive(Debug, Clone)]
pub(crate) enum JobEvent {
    /// Offered to the scale set (acquire mode).
    Available(Job),
    /// Assigned to the scale set.
    Assigned(Job),
    /// A runner took it.
    Started {
        /// The job.
        job: Job,
        /// The runner's agent id and name.
        runner: (i64, String),
    },
    /// It finished (or its assignment was cancelled, with no runner).
    Completed {
        /// The job.
        job: Job,
        /// The runner's agent id and name, if one ran it.
        runner: Option<(i64, String)>,
        /// `succeeded`, `failed`, `canceled`, ….
        result: String,
    },
}

/// A job queued for a scale set.
#[derive(Debug, Clone)]
pub(crate) struct Job {
    pub(crate) request_id: i64,
    /// The `runnerRequestId` job messages carry: 0 in auto-assign mode, as on github.com.
    pub(crate) wire_request_id: i64,
    pub(crate) job_id: String,
    pub(crate) repository: String,
    pub(crate) owner: String,
    pub(crate) workflow_ref: String,
    pub(crate) display_name: String,
    pub(crate) run_id: i64,
    pub(crate) event_name: String,
    pub(crate) labels: Vec<String>,
    pub(crate) result: String,
    pub(crate) run_for: Option<Duration>,
    pub(crate) queue_time: SimTime,
    pub(crate) assigned_at: Option<SimTime>,
    pub(crate) runner_assigned_at: Option<SimTime>,
    pub(crate) finished_at: Option<SimTime>,
    pub(crate) state: JobState,
    pub(crate) reassignments: u32,
    pub(crate) runner: Option<(i64, String)>,
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
    pending: Vec<PendingEvent>,
    pub(crate) jobs: BTreeMap<i64, Job>,
    pub(crate) notify: Arc<Notify>,
}

/// A job event not yet turned into a message.
#[derive(Debug, Clone)]
struct PendingEvent {
    /// The job message.
    event: JobEvent,
    /// From when it may go out on its own; before that it only rides along with a message
    /// made for another event (github.com's `JobStarted` timing).
    due: SimTime,
}

impl PendingEvent {
    /// An event that goes out with the next poll.
    fn now(event: JobEvent, now: SimTime) -> Self {
        Self { event, due: now }
    }
}

/// What an agent (runner) is doing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum AgentPhase {
    /// Registered by `generatejitconfig`; no runner has started with its JIT config.
    Registered,
    /// A simulated runner is connected and waits for a job.
    Idle,
    /// A simulated runner runs job `request_id` until `until`.
    Busy { request_id: i64, until: SimTime },
}

/// A registered runner.
#[derive(Debug, Clone)]
pub(crate) struct Agent {
    pub(crate) id: i64,
    pub(crate) scope: Scope,
    pub(crate) name: String,
    pub(crate) scale_set_id: i64,
    pub(crate) created_on: SimTime,
    pub(crate) phase: AgentPhase,
}

/// The fields a scale-set create or update may carry (zero values mean "not given").
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ScaleSetInput {
    pub(crate) name: String,
    pub(crate) group_id: i64,
    pub(crate) labels: Vec<Label>,
    pub(crate) disable_update: bool,
}

/// A message handed to a poll.
#[derive(Debug, Clone)]
pub(crate) struct Delivery {
    pub(crate) id: i64,
    pub(crate) events: Vec<JobEvent>,
    pub(crate) statistics: Statistics,
}

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

    // ----- runner groups -------------------------------------------------------------------

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

    fn group_name(&self, scope: &Scope, id: i64) -> Option<String> {
        self.tenants
            .get(scope)
            .and_then(|t| t.groups.get(&id))
            .map(|g| g.name.clone())
    }

    // ----- scale sets ----------------------------------------------------------------------

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

    // ----- sessions ------------------------------------------------------------------------

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

    // ----- message queue -------------------------------------------------------------------

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
        // Events not yet due wait, unless a due one makes a message they can ride along with.
        let any_due = set.pending.iter().any(|p| p.due <= now);
        while any_due && !set.pending.is_empty() {
            let take = set.pending.len().min(MAX_JOBS_PER_MESSAGE);
            let batch: Vec<JobEvent> = set.pending.drain(..take).map(|p| p.event).collect();
            let msg_id = self.next_message_id;
            self.next_message_id += 1;
            set.log.push_back(LoggedMessage {
                id: msg_id,
                events: batch,
            });
        }
        let message = set.log.iter().find(|m| m.id > last_message_id)?.clone();
        Some(Delivery {
            id: message.id,
            events: message.events,
            statistics: self.statistics(id),
        })
    }

    /// Deletes (acknowledges) message `message_id` of scale set `id`.
    pub(crate) fn ack(&mut self, id: i64, message_id: i64) {
        if let Some(set) = self.scale_sets.get_mut(&id) {
            set.log.retain(|m| m.id != message_id);
        }
    }

    /// Jobs of scale set `id` that are offered and not yet acquired.
    pub(crate) fn acquirable(&self, scope: &Scope, id: i64) -> Result<Vec<Job>, StateError> {
        let set = self.scale_set(scope, id)?;
        Ok(set
            .jobs
            .values()
            .filter(|j| j.state == JobState::Available)
            .cloned()
            .collect())
    }

    /// Acquires the offered jobs among `request_ids`; returns the ids actually acquired.
    pub(crate) fn acquire(&mut self, id: i64, request_ids: &[i64]) -> Vec<i64> {
        let Some(set) = self.scale_sets.get_mut(&id) else {
            return Vec::new();
        };
        let mut won = Vec::new();
        for rid in request_ids {
            if let Some(job) = set.jobs.get_mut(rid)
                && job.state == JobState::Available
            {
                job.state = JobState::Acquired;
                won.push(*rid);
            }
        }
        if !won.is_empty() {
            set.notify.notify_waiters();
        }
        won
    }

    // ----- jobs ----------------------------------------------------------------------------

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
            set.jobs.insert(
                request_id,
                Job {
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
                },
            );
            ids.push(request_id);
            set.notify.notify_waiters();
        }
        Ok(ids)
    }

    /// Derived statistics of scale set `id`.
    pub(crate) fn statistics(&self, id: i64) -> Statistics {
        let mut stats = Statistics::default();
        if let Some(set) = self.scale_sets.get(&id) {
            for job in set.jobs.values() {
                match job.state {
                    JobState::Available => stats.total_available_jobs += 1,
                    JobState::Acquired => stats.total_acquired_jobs += 1,
                    JobState::Assigned => stats.total_assigned_jobs += 1,
                    JobState::Running => {
                        stats.total_assigned_jobs += 1;
                        stats.total_running_jobs += 1;
                    }
                    JobState::Queued | JobState::Completed(_) => {}
                }
            }
        }
        for agent in self.agents.values().filter(|a| a.scale_set_id == id) {
            stats.total_registered_runners += 1;
            if matches!(agent.phase, AgentPhase::Busy { .. }) {
                stats.total_busy_runners += 1;
            } else {
                stats.total_idle_runners += 1;
            }
        }
        stats
    }

    // ----- agents --------------------------------------------------------------------------

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
        let agent = self.agent(scope, id)?;
        if matches!(agent.phase, AgentPhase::Busy { .. }) {
            return Err(StateError::JobStillRunning(id));
        }
        self.agents.remove(&id);
        Ok(())
    }

    /// Connects a simulated runner as agent `id`; it then takes one assigned job.
    pub(crate) fn start_runner(&mut self, id: i64) -> Result<(), StateError> {
        let agent = self
            .agents
            .get_mut(&id)
            .ok_or(StateError::RunnerNotRegistered(id))?;
        if agent.phase != AgentPhase::Registered {
            return Err(StateError::RunnerAlreadyStarted {
                name: agent.name.clone(),
            });
        }
        agent.phase = AgentPhase::Idle;
        Ok(())
    }

    // ----- timers --------------------------------------------------------------------------

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

    fn run_runners(&mut self, config: &SimConfig, now: SimTime) {
        let agent_ids: Vec<i64> = self.agents.keys().copied().collect();
        for agent_id in agent_ids {
            let Some(agent) = self.agents.get(&agent_id).cloned() else {
                continue;
            };
            let Some(set) = self.scale_sets.get_mut(&agent.scale_set_id) else {
                continue;
            };
            match agent.phase {
                AgentPhase::Registered => {}
                AgentPhase::Idle => {
                    let Some(job) = set
                        .jobs
                        .values_mut()
                        .find(|j| j.state == JobState::Assigned)
                    else {
                        continue;
                    };
                    job.state = JobState::Running;
                    job.runner_assigned_at = Some(now);
                    job.runner = Some((agent.id, agent.name.clone()));
                    let until = now.plus(job.run_for.unwrap_or(config.runner_job_duration));
                    let event = JobEvent::Started {
                        job: job.clone(),
                        runner: (agent.id, agent.name.clone()),
                    };
                    let request_id = job.request_id;
                    set.pending.push(PendingEvent {
                        event,
                        due: now.plus(config.job_started_delay),
                    });
                    if config.job_started_delay.is_zero() {
                        set.notify.notify_waiters();
                    }
                    if let Some(a) = self.agents.get_mut(&agent_id) {
                        a.phase = AgentPhase::Busy { request_id, until };
                    }
                }
                AgentPhase::Busy { request_id, until } => {
                    if now < until {
                        continue;
                    }
                    if let Some(job) = set.jobs.get_mut(&request_id) {
                        job.finished_at = Some(now);
                        job.state = JobState::Completed(job.result.clone());
                        let result = job.result.clone();
                        let event = JobEvent::Completed {
                            job: job.clone(),
                            runner: Some((agent.id, agent.name.clone())),
                            result,
                        };
                        set.pending.push(PendingEvent::now(event, now));
                        set.notify.notify_waiters();
                    }
                    // An ephemeral runner deregisters itself when its job is done.
                    self.agents.remove(&agent_id);
                }
            }
        }
    }

    // ----- inspection ----------------------------------------------------------------------

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

impl ScaleSet {
    /// Releases queued jobs up to `capacity` in flight, and assigns acquired jobs.
    fn release(&mut self, capacity: Option<u64>, mode: AssignmentMode, now: SimTime) {
        let mut events = Vec::new();
        for job in self.jobs.values_mut() {
            if job.state == JobState::Acquired {
                job.state = JobState::Assigned;
                job.assigned_at = Some(now);
                events.push(JobEvent::Assigned(job.clone()));
            }
        }
        let in_flight = self.jobs.values().filter(|j| j.state.in_flight()).count() as u64;
        let mut free = capacity.map_or(u64::MAX, |c| c.saturating_sub(in_flight));
        for job in self.jobs.values_mut() {
            if free == 0 {
                break;
            }
            if job.state != JobState::Queued {
                continue;
            }
            free -= 1;
            match mode {
                AssignmentMode::AvailableThenAcquire => {
                    job.state = JobState::Available;
                    events.push(JobEvent::Available(job.clone()));
                }
                AssignmentMode::AutoAssign => {
                    job.state = JobState::Assigned;
                    job.assigned_at = Some(now);
                    events.push(JobEvent::Assigned(job.clone()));
                }
            }
        }
        self.pending
            .extend(events.into_iter().map(|e| PendingEvent::now(e, now)));
    }

    /// Cancels assignments no runner took within `after`, requeueing up to `max` times.
    fn reassign(&mut self, after: Duration, max: u32, now: SimTime) {
        let mut events = Vec::new();
        for job in self.jobs.values_mut() {
            let due = job.state == JobState::Assigned
                && job.assigned_at.is_some_and(|t| now.since(t) >= after);
            if !due {
                continue;
            }
            events.push(JobEvent::Completed {
                job: job.clone(),
                runner: None,
                result: "canceled".to_owned(),
            });
            if job.reassignments < max {
                job.reassignments += 1;
                job.state = JobState::Queued;
                job.assigned_at = None;
            } else {
                job.state = JobState::Completed("canceled".to_owned());
                job.finished_at = Some(now);
            }
        }
        if !events.is_empty() {
            self.pending
                .extend(events.into_iter().map(|e| PendingEvent::now(e, now)));
            self.notify.notify_waiters();
        }
    }
}

mod error;

pub(crate) use error::StateError;

#[cfg(test)]
mod tests;
