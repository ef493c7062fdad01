//! The durable part of the simulated world, as a file: tenants and their runner groups, scale
//! sets (with their session, message log, pending events and jobs), agents, and the id counters,
//! so that a simulator restarted on the same file is the same GitHub. Tokens are not kept: the
//! signing key is new on every start, so every client asks for fresh ones, as after a token
//! expiry.

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};

use super::agents::Agents;
use super::{Agent, ScaleSet, ScaleSetNames, State, Tenant, Timers};
use crate::scope::Scope;

/// The format version of the file; a file of another version is refused, not guessed at.
pub(crate) const SAVED_VERSION: u32 = 1;

/// The world as written to disk.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Saved {
    pub(crate) version: u32,
    /// How far simulated time was ahead of the wall clock.
    pub(crate) clock_offset_ms: u64,
    // Scopes are enums, not strings, so the tenants go as pairs rather than a JSON map.
    tenants: Vec<(Scope, Tenant)>,
    scale_sets: Vec<ScaleSet>,
    agents: Vec<Agent>,
    next_scale_set_id: i64,
    next_agent_id: i64,
    next_message_id: i64,
    next_request_id: i64,
    next_run_id: i64,
}

/// The same shape, borrowed from the live world for writing (no copy of the jobs).
#[derive(Serialize)]
pub(crate) struct SavedRef<'a> {
    version: u32,
    clock_offset_ms: u64,
    tenants: Vec<(&'a Scope, &'a Tenant)>,
    scale_sets: Vec<&'a ScaleSet>,
    agents: Vec<&'a Agent>,
    next_scale_set_id: i64,
    next_agent_id: i64,
    next_message_id: i64,
    next_request_id: i64,
    next_run_id: i64,
}

impl State {
    /// The durable part of the world, to be written as JSON.
    pub(crate) fn to_saved(&self, clock_offset_ms: u64) -> SavedRef<'_> {
        SavedRef {
            version: SAVED_VERSION,
            clock_offset_ms,
            tenants: self.tenants.iter().collect(),
            scale_sets: self.scale_sets.values().collect(),
            agents: self.agents.values().collect(),
            next_scale_set_id: self.next_scale_set_id,
            next_agent_id: self.next_agent_id,
            next_message_id: self.next_message_id,
            next_request_id: self.next_request_id,
            next_run_id: self.next_run_id,
        }
    }

    /// The world a saved file describes. Counters are raised past every id in the file, so a
    /// hand-edited file cannot make the simulator hand out an id twice.
    pub(crate) fn from_saved(saved: Saved) -> Self {
        let scale_sets: BTreeMap<i64, ScaleSet> =
            saved.scale_sets.into_iter().map(|s| (s.id, s)).collect();
        let agents = Agents::of(saved.agents);
        let max_set = scale_sets.keys().max().copied().unwrap_or(0);
        let max_agent = agents.keys().max().copied().unwrap_or(0);
        let max_message = scale_sets
            .values()
            .flat_map(|s| s.log.iter().map(|m| m.id))
            .max()
            .unwrap_or(0);
        let max_request = scale_sets
            .values()
            .flat_map(|s| s.jobs.keys().copied())
            .max()
            .unwrap_or(0);
        Self {
            tenants: saved.tenants.into_iter().collect(),
            names: ScaleSetNames::of(scale_sets.values()),
            timers: Timers::of(scale_sets.values()),
            scale_sets,
            agents,
            installation_tokens: HashMap::new(),
            registration_tokens: HashMap::new(),
            next_scale_set_id: saved.next_scale_set_id.max(max_set.saturating_add(1)),
            next_agent_id: saved.next_agent_id.max(max_agent.saturating_add(1)),
            next_message_id: saved.next_message_id.max(max_message.saturating_add(1)),
            next_request_id: saved.next_request_id.max(max_request.saturating_add(1)),
            next_run_id: saved.next_run_id,
        }
    }
}
