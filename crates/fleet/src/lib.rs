//! The operator's whole-fleet operations, beside the autoscaling loop (`scaleset-control`)
//! rather than inside it: the declared fleet ([`Fleet`], [`DeclaredScaleSet`]) and its pure
//! planner ([`fleet_plan`]) with the driver that reads the world and writes the plan
//! ([`plan_fleet`], [`apply_fleet`], [`apply_declared`]); whether deleting a scale set deletes
//! it on GitHub ([`plan_deletion`], carried out by [`delete_on_github`]); tearing the
//! controller down ([`Decommission`] over the pure [`DecommissionPlan`]); and `--check`'s look
//! at the runner downloads of every declared set ([`check_runner_tools`]).
//!
//! The drivers (everything that calls GitHub, the store or a provider) are the `driver` feature,
//! on by default; without it the crate is the declared fleet and its pure planners, which is
//! what `scaleset-config` parses the fleet file into without building the control loop.
//!
//! What it deliberately does not do: serve scale sets. It runs GitHub calls through the loop's
//! own client builder and adoption reading, and decides every deletion in a pure planner
//! (`planner::deletion`, `planner::decommission`), as the loop does.
//!
//! ```
//! let fleet = scaleset_fleet::Fleet::default();
//! assert!(fleet.scale_sets.is_empty());
//! ```

// The planners' crate-private entry points are called by the drivers only; without them they
// are unused, and the declared fleet is all that is wanted.
#![cfg_attr(not(feature = "driver"), allow(dead_code))]

#[cfg(feature = "driver")]
mod apply;
#[cfg(feature = "driver")]
mod decommission;
#[cfg(feature = "driver")]
mod deletion;
#[cfg(feature = "driver")]
mod error;
mod plan_digest;
mod planner;
#[cfg(feature = "driver")]
mod tool_check;

#[cfg(feature = "driver")]
pub use apply::{
    Applied, ConfiguredFleet, DeclaredEdit, FleetLookup, GitHubLookup, NoLookup, OursUndeclared,
    Unlisted, apply_declared, apply_fleet, ours_undeclared, plan_fleet,
};
#[cfg(feature = "driver")]
pub use decommission::{
    ConfigureClient, Decommission, DecommissionOptions, DecommissionReport, DecommissionSource,
    parse_scope,
};
#[cfg(feature = "driver")]
pub use deletion::delete_on_github;
#[cfg(feature = "driver")]
pub use error::Error;
pub use planner::decommission::{
    Act as DecommissionAct, DecommissionPlan, Item as DecommissionItem, Scope as DecommissionScope,
    Subject as DecommissionSubject, Why as DecommissionWhy,
};
pub use planner::deletion::{Deletion, Detachment, GitHubDeletion, plan_deletion};
pub use planner::fleet::{
    Action, Change, CredentialsAction, CredentialsStep, DeclaredScaleSet, EntityStep, Fleet,
    FleetInput, FleetPlan, Lookup, PlanDigest, Reason, ScaleSetKey, ScaleSetStep, World,
    plan as fleet_plan,
};
#[cfg(feature = "driver")]
pub use tool_check::{ToolCheck, check_runner_tools};
