//! What the simulated world refuses, in its own terms. `exception.rs` maps each refusal to the
//! answer GitHub gives for it (status, exception name, message) in one function.

use crate::scope::Scope;

/// A rule of the simulated world that a change would break.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum StateError {
    /// A runner group of that name (case-insensitively) exists in the scope.
    RunnerGroupExists {
        /// The scope.
        scope: Scope,
        /// The name asked for.
        name: String,
    },
    /// No runner group with this id in the scope.
    RunnerGroupNotFound(i64),
    /// No scale set with this id in the scope.
    ScaleSetNotFound(i64),
    /// A scale set needs a name.
    EmptyScaleSetName,
    /// A scale set of that name (case-insensitively) exists in the runner group.
    ScaleSetExists {
        /// The name asked for.
        name: String,
    },
    /// The scale set already has its one session.
    SessionConflict {
        /// The scale set's name.
        scale_set: String,
        /// The active session's owner, when the conflict names it.
        owner: Option<String>,
    },
    /// Refreshing a session that is not the scale set's active one.
    SessionNotFound {
        /// The session id asked for.
        session: String,
    },
    /// Deleting a session that is not the scale set's active one.
    SessionExpired {
        /// The session id asked for.
        session: String,
    },
    /// More jobs at once than one enqueue may add.
    TooManyJobs {
        /// How many were asked for.
        count: u32,
    },
    /// Enqueueing for a scale set that does not exist.
    EnqueueTargetNotFound(i64),
    /// A job's run time that is negative or not representable.
    BadRunSeconds(f64),
    /// A runner needs a name.
    EmptyRunnerName,
    /// An agent of that name (case-insensitively) exists in the scope.
    AgentExists {
        /// The name asked for.
        name: String,
    },
    /// No agent with this id in the scope.
    AgentNotFound(i64),
    /// The agent runs a job and cannot be removed.
    JobStillRunning(i64),
    /// No registered runner with this agent id (its JIT configuration was not issued here).
    RunnerNotRegistered(i64),
    /// The runner has already been started.
    RunnerAlreadyStarted {
        /// The runner's name.
        name: String,
    },
}
