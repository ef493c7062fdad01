//! Jobs and the message queue: enqueueing, release within capacity in both assignment modes,
//! acquisition, reassignment, job events turned into messages (`JobStarted` on github.com's
//! timing), at-least-once delivery and acknowledgement, and the derived statistics.

use std::time::Duration;

use super::agent::AgentPhase;
use super::{ScaleSet, State, StateError};
use crate::clock::SimTime;
use crate::config::AssignmentMode;
use crate::scope::Scope;
use crate::snapshot::{JobSpec, Statistics};

/// The most job messages one queue message carries.
pub(super) const MAX_JOBS_PER_MESSAGE: usize = 50;

/// The most jobs one enqueue may add, so that a huge `count` cannot exhaust memory.
pub(crate) const MAX_JOBS_PER_ENQUEUE: u32 = 10_000;

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
    pub(super) fn name(&self) -> &str {
        match self {
            Self::Queued => "queued",
            Self::Available => "available",
            Self::Acquired => "acquired",
            Self::Assigned => "assigned",
            Self::Running => "running",
            Self::Completed(_) => "completed",
        }
    }

    pub(super) fn in_flight(&self) -> bool {
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

/// A job event not yet turned into a message.
#[derive(Debug, Clone)]
pub(super) struct PendingEvent {
    /// The job message.
    pub(super) event: JobEvent,
    /// From when it may go out on its own; before that it only rides along with a message
    /// made for another event (github.com's `JobStarted` timing).
    pub(super) due: SimTime,
}

impl PendingEvent {
    /// An event that goes out with the next poll.
    pub(super) fn now(event: JobEvent, now: SimTime) -> Self {
        Self { event, due: now }
    }
}

/// A message in a scale set's log, kept until it is deleted (acknowledged).
#[derive(Debug, Clone)]
pub(crate) struct LoggedMessage {
    pub(crate) id: i64,
    /// The job messages it carries (the `body` array on the wire).
    pub(crate) events: Vec<JobEvent>,
}

/// A message handed to a poll.
#[derive(Debug, Clone)]
pub(crate) struct Delivery {
    pub(crate) id: i64,
    pub(crate) events: Vec<JobEvent>,
    pub(crate) statistics: Statistics,
}

impl State {
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
}

impl ScaleSet {
    /// Releases queued jobs up to `capacity` in flight, and assigns acquired jobs.
    pub(super) fn release(&mut self, capacity: Option<u64>, mode: AssignmentMode, now: SimTime) {
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
    pub(super) fn reassign(&mut self, after: Duration, max: u32, now: SimTime) {
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
