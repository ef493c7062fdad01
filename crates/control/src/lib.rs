//! The autoscaling loop of scaleset: it turns a desired scale set in the store into a GitHub
//! runner scale set served by ephemeral runners on a compute provider.
//!
//! Per scale set, one supervised task (its own `scale_set` span; a failure in one never stops
//! another) runs, level-triggered: **ensure** (runner group by name, then the adoption machine
//! of `scaleset-adopt` through the real client, intent and outcome recorded in the store) →
//! **session** (owner `scaleset-<controller id>`; our stale session deleted first) →
//! **long-poll** → **handle** (acquire, busy, retire) → **scale** (the pure [`plan`]) →
//! **persist the cursor** (a fenced store write) → **ack**.
//!
//! What it deliberately does not do: the operator's whole-fleet operations (fleet plan/apply,
//! deleting a scale set, decommission: `scaleset-fleet`, which runs them through this crate's
//! client builder, adoption reading and pool-key rule); parse configuration files, serve HTTP
//! or expose metrics
//! (the binaries do, from [`Metrics`]' registry), or delete anything it cannot attribute to
//! itself: instances are touched only through their pool key ([`pool_key`]), runners only by
//! the names and ids it recorded.
//!
//! Main types: [`Controller`] (built from a store, a [`ClientFactory`], providers, the
//! [`ControllerIdentity`] and [`Settings`]; runs until a `CancellationToken` fires), the one
//! adoption driver [`adoption::run_once`] (store-free; the ensure step and the whole-system
//! tests both run it), [`EnsureOnce`] (the same ensure step run once, for tools and tests),
//! the pure [`plan`] with [`PlanInput`]/[`Plan`], the pure lease planner [`plan_leases`]
//! (which scale sets this worker serves among the live workers), [`Metrics`] and
//! [`Error`]. Crash points for tests are observable through [`Checkpoints`].

// The spawned scale-set task is one deep async state machine (listener, scaler, boxed rare
// steps); proving it `Send` walks its whole type, which passed the default depth of 128 once
// the listener boxed its acknowledgement of a re-delivered message ("overflow evaluating …
// Send", E0275). A limit on type-checking depth only, not on the program.
#![recursion_limit = "256"]

pub mod adoption;
mod checkpoint;
mod client_factory;
mod coalesce;
mod controller;
mod drain;
mod ensure;
mod ensure_once;
mod error;
mod hands_off;
mod identity;
mod interrupted;
mod listener;
mod metrics;
mod observed_provider;
mod orphans;
mod policies;
mod runner_tools;
mod sampler;
mod scaler;
mod session;
mod shared;
mod task;
mod wait;
mod watch;

// The decisions live in `scaleset-plan`; the loop's modules name them by their old paths.
use scaleset_plan as planner;
use scaleset_plan::{pool_keys, teardown};

pub use checkpoint::{Checkpoint, Checkpoints};
pub use client_factory::{ClientFactory, StoreClientFactory, observed_clients};
pub use controller::Controller;
pub use ensure_once::{EnsureOnce, EnsureResult};
pub use error::{
    AdoptionStop, ClientPart, ClientRefusal, Conflict, Dependency, Error, ErrorClass,
    TemplateProblem,
};
pub use hands_off::HandsOff;
pub use identity::{ControllerIdentity, runner_name};
pub use metrics::{
    CallLabels, EndpointLabel, FleetOnly, FleetRole, HistogramFamily, KindLabel,
    MAX_SCALE_SETS_EXPORTED, Metrics, PROVIDER_COMMANDS, ProviderLabels, SetLabels, SetReading,
    SetStateLabels, SetStatusLabels, StateLabel, StatusClassLabels, StatusLabel, WorkerLabel,
};
pub use planner::leases::{LeaseInput, LeasePlan, plan_leases};
pub use planner::{Plan, PlanInput, RunnerPhase, RunnerView, plan};
pub use pool_keys::pool_key;
// What the fleet operations (`scaleset-fleet`) run through the loop's own parts: one client
// builder, one adoption reading, one pool-key rule, one cancel-aware wait.
pub use adoption::observed_all;
pub use client_factory::build_client;
pub use error::store as store_error;
pub use pool_keys::our_pool;
pub use runner_tools::stored as stored_download;
pub use scaler::{again_on_token, join_all};
pub use scaleset_settings::{InstanceUrls, Settings};
pub use wait::{Waited, wait_for};
