//! The planners' and the tools cache's settings, read from [`Settings`] (which lives in
//! `scaleset-settings`, below the configuration).

use scaleset_settings::Settings;

/// The loop's own views of its settings.
pub(crate) trait Policies {
    /// When the runner downloads of an entity are read again.
    fn runner_tools_refresh(&self) -> crate::runner_tools::Refresh;
    /// The bootstrap back-off planner's settings.
    fn bootstrap_backoff(&self) -> crate::planner::bootstrap_backoff::BootPolicy;
    /// The provider back-off planner's settings.
    fn provider_backoff(&self) -> crate::planner::provider_backoff::BackoffPolicy;
}

impl Policies for Settings {
    fn runner_tools_refresh(&self) -> crate::runner_tools::Refresh {
        crate::runner_tools::Refresh {
            every: self.runner_tools_refresh,
            retry: self.runner_tools_retry,
        }
    }

    fn bootstrap_backoff(&self) -> crate::planner::bootstrap_backoff::BootPolicy {
        crate::planner::bootstrap_backoff::BootPolicy {
            base: self.bootstrap_backoff_base,
            max: self.bootstrap_backoff_max,
        }
    }

    fn provider_backoff(&self) -> crate::planner::provider_backoff::BackoffPolicy {
        crate::planner::provider_backoff::BackoffPolicy {
            base: self.provider_backoff_base,
            max: self.provider_backoff_max,
            flag_after: self.provider_failures_flagged,
        }
    }
}
