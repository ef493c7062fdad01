//! Instances of a superseded GitHub scale set: when GitHub deleted our scale set and the worker
//! ensured a new one, the rows recorded under the old set's pool key cannot serve the new set
//! (their runners were registered with the old set, which no longer hands out jobs). They
//! count for nothing from then on, and each is retired: its runner removed from GitHub if it is
//! still registered and idle, left to end its job if it is busy, and its provider instance
//! (under the old pool key) deleted once the runner is gone. Pure: the scaler looks the runner
//! up and carries the step out.

/// Whether an instance recorded under `pool_key` belongs to a scale set other than the one
/// served under `current` (every instance carries the pool key of the GitHub scale set it was
/// made for). GARM's pool key of a set taken over from it (`inherited`) is the served set's
/// too: GARM's runners serve it until their jobs end.
pub fn is_superseded(pool_key: &str, current: &str, inherited: Option<&str>) -> bool {
    pool_key != current && inherited != Some(pool_key)
}

/// What GitHub says of a superseded instance's runner.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OldRunner {
    /// Registered and running a job.
    Busy,
    /// Registered and not running a job (idle, or its machine never connected).
    Idle,
    /// Not registered: removed with the scale set, deregistered after its job, or never made.
    Gone,
}

/// The next step for one superseded instance.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Retirement {
    /// Its runner runs a job: the machine is left to finish it; asked again later.
    AwaitJob,
    /// Its runner can never get a job: remove it from GitHub, then delete the instance.
    RemoveRunner,
    /// Its runner is gone: delete the instance under the old pool key, then its row.
    DeleteInstance,
}

/// The step for a superseded instance whose runner is as GitHub says. A machine is deleted
/// only once nothing is registered for it, so a job that runs on it is never cut short.
pub fn retirement(runner: OldRunner) -> Retirement {
    match runner {
        OldRunner::Busy => Retirement::AwaitJob,
        OldRunner::Idle => Retirement::RemoveRunner,
        OldRunner::Gone => Retirement::DeleteInstance,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_different_pool_key_is_superseded() {
        assert!(!is_superseded("c_7", "c_7", None));
        assert!(is_superseded("c_6", "c_7", None));
        assert!(is_superseded("c_7", "c_70", None));
        // Issue 37: GARM's pool key of a taken-over set is current; any other is not.
        assert!(!is_superseded("gpu-big-x", "c_7", Some("gpu-big-x")));
        assert!(!is_superseded("c_7", "c_7", Some("gpu-big-x")));
        assert!(is_superseded("c_6", "c_7", Some("gpu-big-x")));
    }

    #[test]
    fn a_busy_runner_keeps_its_machine_until_its_job_ends() {
        assert_eq!(retirement(OldRunner::Busy), Retirement::AwaitJob);
    }

    #[test]
    fn an_idle_runner_of_the_old_set_is_removed_first() {
        assert_eq!(retirement(OldRunner::Idle), Retirement::RemoveRunner);
    }

    #[test]
    fn a_gone_runner_frees_its_machine() {
        assert_eq!(retirement(OldRunner::Gone), Retirement::DeleteInstance);
    }
}
