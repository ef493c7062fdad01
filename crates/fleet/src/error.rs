//! The fleet operations' error: what only a whole-fleet operation can hit (a declared fleet
//! that breaks the spec rules, a reviewed plan the world no longer matches, a decommission
//! that finds a scale set still served), beside every failure of the loop's own calls
//! ([`Error::Control`]). Classified with the loop's classes, so the API maps both through one
//! table.

use scaleset_control::{Conflict, ErrorClass};

use crate::plan_digest::PlanDigest;

/// A failure of a fleet operation (plan, apply, deletion, decommission, `--check`).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A decommission step names a GitHub scale set that no configured entity lists any more.
    #[error(
        "scale set {github_id} is no longer listed by any configured entity; plan the \
         decommission again"
    )]
    UnlistedScaleSet {
        /// GitHub's id of the scale set.
        github_id: i64,
    },
    /// A decommission step names a provider that is no longer configured.
    #[error("provider {provider:?} is not configured any more; plan the decommission again")]
    ProviderGone {
        /// The provider's name.
        provider: String,
    },
    /// A decommission cannot take a scale set's lease: a worker still serves it.
    #[error(
        "scale set {scale_set} is still served by worker {holder:?}; {}",
        lease_remedy(*.ours, .holder)
    )]
    LeaseHeld {
        /// The scale set (`<entity>/<name>`).
        scale_set: String,
        /// The worker holding its lease.
        holder: String,
        /// Whether the holder is this server's own worker (handing over timed out).
        ours: bool,
    },
    /// A decommission was stopped while this server's worker let a scale set go.
    #[error(
        "the decommission was stopped while this server's worker let scale set {scale_set} go; \
         decommission again"
    )]
    DecommissionStopped {
        /// The scale set (`<entity>/<name>`).
        scale_set: String,
    },
    /// A decommission scope names a scale set without its entity.
    #[error(
        "--scale-set {scale_set}: a scale set is named within its entity: add --entity (e.g. \
         --entity acme)"
    )]
    ScopeWithoutEntity {
        /// The scale set's name.
        scale_set: String,
    },
    /// A fleet plan no longer matches the world: apply refused it (nothing written), or a
    /// write found its row changed since the plan (the steps before it were written).
    #[error("the fleet plan is stale: {reason}; plan again, review it and apply the new plan")]
    StalePlan {
        /// What changed.
        reason: String,
        /// The digest planning gives now, when apply refused before writing.
        current: Option<PlanDigest>,
    },
    /// A decommission was asked to apply a plan that is not the one planned now.
    #[error(
        "the reviewed decommission plan is stale: the plan is now {current} (reviewed: \
         {reviewed}); the world changed, or the flags differ from the plan's: plan again, \
         review it and apply its digest"
    )]
    StaleDecommission {
        /// The digest of the plan now.
        current: PlanDigest,
        /// The digest given.
        reviewed: PlanDigest,
    },
    /// A call the fleet operation made through the loop's code (a GitHub client, the store, a
    /// provider) failed.
    #[error(transparent)]
    Control(#[from] scaleset_control::Error),
}

impl Error {
    /// The class of this error: what a caller may do about it (the loop's classes).
    pub fn class(&self) -> ErrorClass {
        match self {
            Self::ScopeWithoutEntity { .. } => ErrorClass::Invalid,
            Self::UnlistedScaleSet { .. }
            | Self::ProviderGone { .. }
            | Self::StalePlan { .. }
            | Self::StaleDecommission { .. } => ErrorClass::Conflict(Conflict::StalePlan),
            Self::LeaseHeld { .. } => ErrorClass::Conflict(Conflict::LeaseHeld),
            Self::DecommissionStopped { .. } => ErrorClass::Stopping,
            Self::Control(error) => error.class(),
        }
    }

    /// Whether a fleet apply or a decommission refused a plan the world no longer matches
    /// (its digest changed, or a step names a scale set or provider that is gone).
    pub fn is_stale_plan(&self) -> bool {
        self.class() == ErrorClass::Conflict(Conflict::StalePlan)
    }
}

fn lease_remedy(ours: bool, holder: &str) -> String {
    if ours {
        "this server's worker did not let it go in time; decommission again".to_owned()
    } else {
        format!(
            "stop (or drain: `scalesetctl worker drain {holder}`) the workers and decommission \
             again"
        )
    }
}

/// A store error in context.
pub(crate) fn store(during: &'static str) -> impl FnOnce(scaleset_store::Error) -> Error {
    move |source| Error::Control(scaleset_control::Error::Store { during, source })
}
pub(crate) use scaleset_store::chain;
