//! [`Statistics`]: the per-scale-set job and runner counters (protocol §6.5).

use serde::Deserialize;

use crate::lenient::lenient_i64;

/// Job and runner counters of a scale set. `total_assigned_jobs` is the scaling signal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Statistics {
    /// Jobs waiting to be acquired.
    #[serde(default, deserialize_with = "lenient_i64")]
    pub total_available_jobs: i64,
    /// Jobs acquired but not yet assigned.
    #[serde(default, deserialize_with = "lenient_i64")]
    pub total_acquired_jobs: i64,
    /// Jobs assigned to this scale set (the scaling signal).
    #[serde(default, deserialize_with = "lenient_i64")]
    pub total_assigned_jobs: i64,
    /// Jobs running on a runner.
    #[serde(default, deserialize_with = "lenient_i64")]
    pub total_running_jobs: i64,
    /// Registered runners.
    #[serde(default, deserialize_with = "lenient_i64")]
    pub total_registered_runners: i64,
    /// Runners busy with a job.
    #[serde(default, deserialize_with = "lenient_i64")]
    pub total_busy_runners: i64,
    /// Idle runners.
    #[serde(default, deserialize_with = "lenient_i64")]
    pub total_idle_runners: i64,
}
