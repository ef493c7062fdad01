//! The public, serialisable views of the simulator's state that the control API and the Rust
//! handle return, and the job specification they accept.

use serde::{Deserialize, Serialize};

/// A scale set's statistics, derived from its jobs and agents (the wire shape of
/// `RunnerScaleSetStatistic`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Statistics {
    /// Jobs offered as `JobAvailable` and not yet acquired.
    pub total_available_jobs: i64,
    /// Jobs acquired and not yet assigned.
    pub total_acquired_jobs: i64,
    /// Jobs assigned to the scale set, running ones included (the scaling signal).
    pub total_assigned_jobs: i64,
    /// Jobs a runner has started.
    pub total_running_jobs: i64,
    /// Agents registered for the scale set.
    pub total_registered_runners: i64,
    /// Agents running a job.
    pub total_busy_runners: i64,
    /// Agents not running a job.
    pub total_idle_runners: i64,
}

/// How many of one scope's scale sets are listening, as `GET /_sim/listening?scope=…` returns it:
/// what a benchmark waits for when it compares two controllers on one simulator (each in its
/// own organization), since the global held-poll count cannot tell their listeners apart.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Listening {
    /// Scale sets of the scope.
    pub scale_sets: usize,
    /// Those with an open message session.
    pub sessions: usize,
    /// Message GETs held right now on the scope's scale sets.
    pub polls: usize,
    /// Scale sets with a session and at least one message GET held: listening.
    pub listening: usize,
}

/// What to enqueue: `count` jobs for one scale set. Every field is optional.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct JobSpec {
    /// How many jobs (at least 1, at most 10,000 per enqueue).
    pub count: u32,
    /// `repositoryName` (default: the scope's repository, or `app`).
    pub repository: Option<String>,
    /// `ownerName` (default: the scope's organization or owner).
    pub owner: Option<String>,
    /// `jobWorkflowRef`.
    pub workflow_ref: Option<String>,
    /// `jobDisplayName`.
    pub display_name: Option<String>,
    /// `requestLabels` (default: the scale set's name).
    pub labels: Vec<String>,
    /// The `result` a simulated runner reports (default `succeeded`).
    pub result: Option<String>,
    /// How long a simulated runner runs this job, in simulated seconds (default: the
    /// configured runner job duration).
    pub run_seconds: Option<f64>,
}

impl JobSpec {
    /// `count` jobs with every other field defaulted.
    pub fn count(count: u32) -> Self {
        Self {
            count,
            ..Self::default()
        }
    }
}

/// Everything the simulator holds, as `GET /_sim/state` returns it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StateSnapshot {
    /// Runner groups of every scope.
    pub runner_groups: Vec<RunnerGroupInfo>,
    /// Scale sets of every scope.
    pub scale_sets: Vec<ScaleSetInfo>,
    /// Jobs of every scale set, completed ones included.
    pub jobs: Vec<JobInfo>,
    /// Registered agents.
    pub agents: Vec<AgentInfo>,
}

impl StateSnapshot {
    /// The scale set with this id.
    pub fn scale_set(&self, id: i64) -> Option<&ScaleSetInfo> {
        self.scale_sets.iter().find(|s| s.id == id)
    }

    /// The scale sets named `name`, in every organization and repository: more than one in a
    /// tenant is the duplicate that tests look for after races and faults.
    pub fn scale_sets_named<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a ScaleSetInfo> {
        self.scale_sets.iter().filter(move |s| s.name == name)
    }

    /// The jobs of one scale set.
    pub fn jobs_of(&self, scale_set_id: i64) -> impl Iterator<Item = &JobInfo> {
        self.jobs
            .iter()
            .filter(move |j| j.scale_set_id == scale_set_id)
    }
}

/// A runner group.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunnerGroupInfo {
    /// The scope (`acme`, `acme/widgets`, `enterprises/big`).
    pub scope: String,
    /// Group id (1 is the default group).
    pub id: i64,
    /// Group name.
    pub name: String,
    /// Whether this is the default group.
    pub is_default: bool,
}

/// A scale set.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ScaleSetInfo {
    /// Scale-set id.
    pub id: i64,
    /// The scope it belongs to.
    pub scope: String,
    /// Name.
    pub name: String,
    /// Runner group id.
    pub runner_group_id: i64,
    /// Label names.
    pub labels: Vec<String>,
    /// The active session, if any.
    pub session: Option<SessionInfo>,
    /// Ids of messages in the log that were not deleted yet.
    pub unacknowledged_message_ids: Vec<i64>,
    /// Job messages waiting to be put into the next message.
    pub pending_job_messages: usize,
    /// Current statistics.
    pub statistics: Statistics,
}

/// A message session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionInfo {
    /// Session id (UUID).
    pub session_id: String,
    /// The owner name given at creation.
    pub owner_name: String,
    /// When it was created (simulated time, RFC 3339).
    pub created: String,
}

/// A job.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct JobInfo {
    /// The simulator's runner request id (sent on the wire in acquire mode only).
    pub runner_request_id: i64,
    /// The opaque job id.
    pub job_id: String,
    /// The scale set it is queued for.
    pub scale_set_id: i64,
    /// `queued`, `available`, `acquired`, `assigned`, `running` or `completed`.
    pub state: String,
    /// The result once completed.
    pub result: Option<String>,
    /// How many times the job was cancelled and requeued.
    pub reassignments: u32,
    /// The runner that took it.
    pub runner_name: Option<String>,
}

/// A registered agent (runner).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentInfo {
    /// Agent id.
    pub id: i64,
    /// Agent name.
    pub name: String,
    /// The scope it belongs to.
    pub scope: String,
    /// Its scale set.
    pub scale_set_id: i64,
    /// `registered` (no runner started), `idle` or `busy`.
    pub status: String,
    /// The runner request id of the job it runs.
    pub busy_with: Option<i64>,
}

/// One request the simulator answered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RequestRecord {
    /// Sequence number (from 1).
    pub seq: u64,
    /// HTTP method.
    pub method: String,
    /// Path without the query.
    pub path: String,
    /// The raw query, if any.
    pub query: Option<String>,
    /// The endpoint's request-count name (e.g. `create_scale_set`, `get_message`).
    pub endpoint: String,
    /// The status answered.
    pub status: u16,
    /// The client's address as the simulator saw it (`ip:port`), when known. A test that
    /// connects each client from its own loopback address (127.0.0.0/8) learns from this which
    /// client sent what (the chaos soak's per-worker proxies do).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peer: Option<String>,
    /// When it was answered: real milliseconds since the simulator started (not simulated
    /// time, which jumps), so the requests of several clients can be set on one time line.
    #[serde(default)]
    pub at_ms: u64,
}
