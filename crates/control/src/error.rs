//! The control crate's error: what failed, for which scale set, and during what.

/// A failure of the control loop. Every variant names the thing, the cause and, through its
/// message, what to do.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A configuration value is invalid.
    #[error("invalid configuration: {what}: {reason}")]
    Config {
        /// What is invalid.
        what: String,
        /// Why, and what to do.
        reason: String,
    },
    /// The runner downloads of the scale set's entity (GARM's `tools`) could not be read, and
    /// none read before are held: no runner is created (a GARM provider refuses a bootstrap
    /// without them), and the read is tried again.
    #[error(
        "no runner is created for scale set {scale_set}: the runner downloads of its GitHub \
         entity (GET …/actions/runners/downloads, the `tools` every provider is given) could \
         not be read; check that the credential may read the entity's runners (it is tried \
         again)"
    )]
    RunnerTools {
        /// The scale set's name.
        scale_set: String,
        /// Why the read failed.
        #[source]
        source: std::sync::Arc<scaleset_github::Error>,
    },
    /// A GitHub call failed.
    #[error("github call failed while {during} (scale set {scale_set})")]
    GitHub {
        /// The scale set's name.
        scale_set: String,
        /// What the controller was doing.
        during: &'static str,
        /// The client's error.
        #[source]
        source: scaleset_github::Error,
    },
    /// A store call failed.
    #[error("store call failed while {during}")]
    Store {
        /// What the controller was doing.
        during: &'static str,
        /// The store's error.
        #[source]
        source: scaleset_store::Error,
    },
    /// A provider call failed.
    #[error("provider {provider:?} failed while {during}")]
    Provider {
        /// The provider's name.
        provider: String,
        /// What the controller was doing.
        during: &'static str,
        /// The provider's error.
        #[source]
        source: scaleset_provider::Error,
    },
    /// A provider answered a create with an instance that is not provably the one asked for
    /// (another name, another pool, or a provider id another row claims): the answer is not
    /// recorded (`crate::planner::claim`).
    #[error(
        "provider {provider:?} answered the create of runner {runner:?} with an instance that \
         is not provably ours ({code}): {reason}; check the provider"
    )]
    ProviderAnswerRefused {
        /// The provider's name.
        provider: String,
        /// The runner the create was for.
        runner: String,
        /// The refusal's stable code (`answered_other_name`, ...).
        code: &'static str,
        /// Why, in words.
        reason: String,
    },
    /// A scale set names a provider the controller was not given.
    #[error(
        "scale set {scale_set} names provider {provider:?}, which is not configured; add it to \
         the providers or change the scale set"
    )]
    UnknownProvider {
        /// The scale set's name.
        scale_set: String,
        /// The provider name.
        provider: String,
    },
    /// The runner group named by a scale set does not exist on GitHub.
    #[error(
        "runner group {group:?} of scale set {scale_set} does not exist on GitHub; create it or \
         correct the scale set"
    )]
    UnknownRunnerGroup {
        /// The scale set's name.
        scale_set: String,
        /// The group's name.
        group: String,
    },
    /// GitHub answered something the adoption machine has no fact for, or the machine was fed
    /// a fact that does not fit (a driver bug).
    #[error("adoption of scale set {scale_set} stopped: {reason}")]
    Adoption {
        /// The scale set's name.
        scale_set: String,
        /// What happened.
        reason: String,
    },
    /// A fleet plan no longer matches the world: apply refused it (nothing written), or a
    /// write found its row changed since the plan (the steps before it were written).
    #[error("the fleet plan is stale: {reason}; plan again, review it and apply the new plan")]
    StalePlan {
        /// What changed.
        reason: String,
        /// The digest planning gives now, when apply refused before writing.
        current: Option<crate::plan_digest::PlanDigest>,
    },
    /// A decommission was asked to apply a plan that is not the one planned now.
    #[error(
        "the reviewed decommission plan is stale: the plan is now {current} (reviewed: \
         {reviewed}); the world changed, or the flags differ from the plan's: plan again, \
         review it and apply its digest"
    )]
    StaleDecommission {
        /// The digest of the plan now.
        current: crate::plan_digest::PlanDigest,
        /// The digest given.
        reviewed: crate::plan_digest::PlanDigest,
    },
    /// The control loop is stopping: a step was stopped mid-way (what it had opened is closed).
    #[error("stopped while serving scale set {scale_set}: the control loop is shutting down")]
    Cancelled {
        /// The scale set's name.
        scale_set: String,
    },
    /// Another worker took the scale set's lease over.
    #[error("the lease of scale set {scale_set} was taken over by another worker")]
    LeaseLost {
        /// The scale set's name.
        scale_set: String,
    },
}

impl Error {
    /// Whether the fenced write failed because the lease was taken over.
    pub fn is_lease_lost(&self) -> bool {
        match self {
            Self::LeaseLost { .. } => true,
            Self::Store { source, .. } => source.is_lease_lost(),
            _ => false,
        }
    }

    /// Whether the step stopped because the control loop is shutting down.
    pub fn is_cancelled(&self) -> bool {
        matches!(self, Self::Cancelled { .. })
    }

    /// Whether a fleet apply or a decommission refused a stale plan.
    pub fn is_stale_plan(&self) -> bool {
        matches!(
            self,
            Self::StalePlan { .. } | Self::StaleDecommission { .. }
        )
    }

    /// The GitHub error behind this one, if any.
    pub fn github(&self) -> Option<&scaleset_github::Error> {
        match self {
            Self::GitHub { source, .. } => Some(source),
            Self::RunnerTools { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// A store error in context.
pub fn store(during: &'static str) -> impl FnOnce(scaleset_store::Error) -> Error {
    move |source| Error::Store { during, source }
}

pub(crate) use scaleset_store::chain;
