//! Jobs and their messages: a job's life (`JobState`), the job events the queue reports
//! (`JobEvent`, rendered by the protocol module), events waiting to become messages, and the
//! messages of a scale set's log.

use std::time::Duration;

use crate::clock::SimTime;
use crate::snapshot::Statistics;

/// The most job messages one queue message carries.
pub(crate) const MAX_JOBS_PER_MESSAGE: usize = 50;

/// The most jobs one enqueue may add, so that a huge `count` cannot exhaust memory.
pub(crate) const MAX_JOBS_PER_ENQUEUE: u32 = 10_000;

/// Where a job is in its life.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
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
    /// The state as the control API names it.
    pub(crate) fn name(&self) -> &str {
        match self {
            Self::Queued => "queued",
            Self::Available => "available",
            Self::Acquired => "acquired",
            Self::Assigned => "assigned",
            Self::Running => "running",
            Self::Completed(_) => "completed",
        }
    }

    /// Whether the job counts against the listener's capacity.
    pub(crate) fn in_flight(&self) -> bool {
        matches!(
            self,
            Self::Available | Self::Acquired | Self::Assigned | Self::Running
        )
    }
}

/// A job message of the queue: what happened to a job, with the job as it was then. The
/// protocol module renders it.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
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
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
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
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub(crate) struct PendingEvent {
    /// The job message.
    pub(crate) event: JobEvent,
    /// From when it may go out on its own; before that it only rides along with a message
    /// made for another event (github.com's `JobStarted` timing).
    pub(crate) due: SimTime,
}

impl PendingEvent {
    /// An event that goes out with the next poll.
    pub(crate) fn now(event: JobEvent, now: SimTime) -> Self {
        Self { event, due: now }
    }
}

/// A message in a scale set's log, kept until it is deleted (acknowledged).
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
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
