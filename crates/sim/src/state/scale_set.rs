//! A scale set and everything that happens to it alone: its one session (opened, refreshed,
//! closed, evicted, expired), its jobs (released within capacity in both assignment modes,
//! acquired, reassigned, started and finished by runners), and its message log (job events
//! batched into messages, `JobStarted` on github.com's timing, at-least-once delivery,
//! acknowledgement).

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;

use super::error::StateError;
use super::job::{Job, JobEvent, JobState, LoggedMessage, MAX_JOBS_PER_MESSAGE, PendingEvent};
use super::session::Session;
use crate::clock::SimTime;
use crate::config::{AssignmentMode, SimConfig};
use crate::scope::Scope;
use crate::snapshot::Statistics;

/// A label of a scale set.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct Label {
    pub(crate) name: String,
    pub(crate) kind: String,
}

/// The fields a scale-set create or update may carry (zero values mean "not given").
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ScaleSetInput {
    pub(crate) name: String,
    pub(crate) group_id: i64,
    pub(crate) labels: Vec<Label>,
    pub(crate) disable_update: bool,
}

/// A scale set.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
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
    /// Wakes the polls held on this scale set (not saved: a restored scale set has no polls).
    #[serde(skip)]
    pub(crate) notify: Arc<Notify>,
}

impl ScaleSet {
    /// A new scale set `id` of `scope` in group `group_id`, named `name` (already checked);
    /// without labels it is labelled with its name.
    pub(crate) fn new(
        id: i64,
        scope: &Scope,
        name: String,
        group_id: i64,
        input: ScaleSetInput,
        now: SimTime,
    ) -> Self {
        let labels = if input.labels.is_empty() {
            vec![Label {
                name: name.clone(),
                kind: "System".to_owned(),
            }]
        } else {
            input.labels
        };
        Self {
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
        }
    }

    /// Applies a checked update: the new name and group, and the patch's non-zero fields.
    pub(crate) fn apply(&mut self, name: String, group_id: i64, patch: ScaleSetInput) {
        self.name = name;
        self.group_id = group_id;
        if !patch.labels.is_empty() {
            self.labels = patch.labels;
        }
        if patch.disable_update {
            self.disable_update = true;
        }
    }

    // ----- session ----------------------------------------------------------------------------

    /// Opens the one session; 409 if another is active (naming its owner when asked to).
    pub(crate) fn open_session(
        &mut self,
        owner: &str,
        now: SimTime,
        conflict_names_owner: bool,
    ) -> Result<Session, StateError> {
        if let Some(active) = &self.session {
            return Err(StateError::SessionConflict {
                scale_set: self.name.clone(),
                owner: conflict_names_owner.then(|| active.owner.clone()),
            });
        }
        let session = Session::open(owner, now);
        self.session = Some(session.clone());
        Ok(session)
    }

    /// Refreshes the active session `sid`; 404 `RunnerAdminException` if it is not active.
    pub(crate) fn refresh_session(
        &mut self,
        sid: &str,
        now: SimTime,
    ) -> Result<Session, StateError> {
        self.session
            .as_mut()
            .filter(|s| s.is(sid))
            .map(|s| {
                s.last_seen = now;
                s.clone()
            })
            .ok_or_else(|| StateError::SessionNotFound {
                session: sid.to_owned(),
            })
    }

    /// Closes the active session `sid`; 400 `RunnerScaleSetSessionExpiredException` if it is
    /// not active.
    pub(crate) fn close_session(&mut self, sid: &str, now: SimTime) -> Result<(), StateError> {
        if self.session.as_ref().is_none_or(|s| !s.is(sid)) {
            return Err(StateError::SessionExpired {
                session: sid.to_owned(),
            });
        }
        self.drop_session(now);
        Ok(())
    }

    /// Drops the session as if the service evicted it; true if there was one.
    pub(crate) fn evict_session(&mut self, now: SimTime) -> bool {
        let had = self.session.is_some();
        if had {
            self.drop_session(now);
        }
        had
    }

    /// Drops a session neither polled, acknowledged nor refreshed for `expiry`.
    pub(crate) fn expire_session(&mut self, expiry: Duration, now: SimTime) {
        if self
            .session
            .as_ref()
            .is_some_and(|s| now.since(s.last_seen) >= expiry)
        {
            self.drop_session(now);
        }
    }

    fn drop_session(&mut self, now: SimTime) {
        self.session = None;
        self.idle_since = now;
        self.notify.notify_waiters();
    }

    /// Whether `session` (exactly) is the active session.
    pub(crate) fn session_active(&self, session: &str) -> bool {
        self.session.as_ref().is_some_and(|s| s.id == session)
    }

    /// Records activity (a poll or an acknowledgement) on the active session.
    pub(crate) fn touch_session(&mut self, now: SimTime) {
        if let Some(session) = self.session.as_mut() {
            session.last_seen = now;
        }
    }

    // ----- jobs -------------------------------------------------------------------------------

    /// Adds a queued job; held polls look at it.
    pub(crate) fn enqueue(&mut self, job: Job) {
        self.jobs.insert(job.request_id, job);
        self.notify.notify_waiters();
    }

    /// Releases queued jobs up to `capacity` in flight, and assigns acquired jobs.
    pub(crate) fn release(&mut self, capacity: Option<u64>, mode: AssignmentMode, now: SimTime) {
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
    pub(crate) fn reassign(&mut self, after: Duration, max: u32, now: SimTime) {
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

    /// Jobs offered and not yet acquired.
    pub(crate) fn acquirable(&self) -> Vec<Job> {
        self.jobs
            .values()
            .filter(|j| j.state == JobState::Available)
            .cloned()
            .collect()
    }

    /// Acquires the offered jobs among `request_ids`; returns the ids actually acquired.
    pub(crate) fn acquire(&mut self, request_ids: &[i64]) -> Vec<i64> {
        let mut won = Vec::new();
        for rid in request_ids {
            if let Some(job) = self.jobs.get_mut(rid)
                && job.state == JobState::Available
            {
                job.state = JobState::Acquired;
                won.push(*rid);
            }
        }
        if !won.is_empty() {
            self.notify.notify_waiters();
        }
        won
    }

    /// Runner `runner` (agent id, name) takes the first assigned job; returns its request id
    /// and when it finishes. Its `JobStarted` waits `job_started_delay` (see `pending`).
    pub(crate) fn start_job(
        &mut self,
        runner: (i64, String),
        config: &SimConfig,
        now: SimTime,
    ) -> Option<(i64, SimTime)> {
        let job = self
            .jobs
            .values_mut()
            .find(|j| j.state == JobState::Assigned)?;
        job.state = JobState::Running;
        job.runner_assigned_at = Some(now);
        job.runner = Some(runner.clone());
        let until = now.plus(job.run_for.unwrap_or(config.runner_job_duration));
        let request_id = job.request_id;
        let event = JobEvent::Started {
            job: job.clone(),
            runner,
        };
        self.pending.push(PendingEvent {
            event,
            due: now.plus(config.job_started_delay),
        });
        if config.job_started_delay.is_zero() {
            self.notify.notify_waiters();
        }
        Some((request_id, until))
    }

    /// Runner `runner` finished job `request_id` with the job's result.
    pub(crate) fn finish_job(&mut self, request_id: i64, runner: (i64, String), now: SimTime) {
        if let Some(job) = self.jobs.get_mut(&request_id) {
            job.finished_at = Some(now);
            job.state = JobState::Completed(job.result.clone());
            let event = JobEvent::Completed {
                job: job.clone(),
                runner: Some(runner),
                result: job.result.clone(),
            };
            self.pending.push(PendingEvent::now(event, now));
            self.notify.notify_waiters();
        }
    }

    /// The job counts of the statistics (the runner counts come from the agents).
    pub(crate) fn job_statistics(&self) -> Statistics {
        let mut stats = Statistics::default();
        for job in self.jobs.values() {
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
        stats
    }

    // ----- message log ------------------------------------------------------------------------

    /// How many job events wait to become messages.
    pub(crate) fn pending_events(&self) -> usize {
        self.pending.len()
    }

    /// Whether a timer may act on it besides its session's: job events wait to go out (a
    /// delayed one wakes the polls when due), or a job is assigned (its assignment may be
    /// cancelled). A set without either is left alone by [`Self::wake_if_due`] and
    /// [`Self::reassign`].
    pub(crate) fn has_job_timers(&self) -> bool {
        !self.pending.is_empty() || self.jobs.values().any(|j| j.state == JobState::Assigned)
    }

    /// Wakes the held polls when a delayed event (`JobStarted`) came due, so it goes out on its
    /// own.
    pub(crate) fn wake_if_due(&self, now: SimTime) {
        if self.pending.iter().any(|p| p.due <= now) {
            self.notify.notify_waiters();
        }
    }

    /// Turns the pending events into messages of at most 50 job messages, numbered from
    /// `next_message_id`, once one of them is due (the others ride along).
    pub(crate) fn log_pending(&mut self, now: SimTime, next_message_id: &mut i64) {
        if !self.pending.iter().any(|p| p.due <= now) {
            return;
        }
        while !self.pending.is_empty() {
            let take = self.pending.len().min(MAX_JOBS_PER_MESSAGE);
            let events: Vec<JobEvent> = self.pending.drain(..take).map(|p| p.event).collect();
            let id = *next_message_id;
            *next_message_id += 1;
            self.log.push_back(LoggedMessage { id, events });
        }
    }

    /// The first un-deleted message after `last_message_id`.
    pub(crate) fn message_after(&self, last_message_id: i64) -> Option<&LoggedMessage> {
        self.log.iter().find(|m| m.id > last_message_id)
    }

    /// Deletes (acknowledges) message `message_id`.
    pub(crate) fn ack(&mut self, message_id: i64) {
        self.log.retain(|m| m.id != message_id);
    }
}
