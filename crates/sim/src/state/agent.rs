//! Agents: runners registered by `generatejitconfig`, and the simulated runner that connects
//! with an agent's JIT configuration, takes one job of its scale set, runs it in simulated time
//! and deregisters.

use super::error::StateError;
use super::scale_set::ScaleSet;
use crate::clock::SimTime;
use crate::config::SimConfig;
use crate::scope::Scope;

/// What an agent (runner) is doing.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) enum AgentPhase {
    /// Registered by `generatejitconfig`; no runner has started with its JIT config.
    Registered,
    /// A simulated runner is connected and waits for a job.
    Idle,
    /// A simulated runner runs job `request_id` until `until`.
    Busy { request_id: i64, until: SimTime },
}

/// A registered runner.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub(crate) struct Agent {
    pub(crate) id: i64,
    pub(crate) scope: Scope,
    pub(crate) name: String,
    pub(crate) scale_set_id: i64,
    pub(crate) created_on: SimTime,
    pub(crate) phase: AgentPhase,
}

/// What a runner's step left it as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Step {
    /// Still registered.
    Stays,
    /// Its job is done: an ephemeral runner deregisters itself.
    Deregisters,
}

impl Agent {
    /// Whether it runs a job.
    pub(crate) fn is_busy(&self) -> bool {
        matches!(self.phase, AgentPhase::Busy { .. })
    }

    /// Connects a simulated runner; refused if one already started with this agent.
    pub(crate) fn start(&mut self) -> Result<(), StateError> {
        if self.phase != AgentPhase::Registered {
            return Err(StateError::RunnerAlreadyStarted {
                name: self.name.clone(),
            });
        }
        self.phase = AgentPhase::Idle;
        Ok(())
    }

    /// The runner's machine died (an outage, a crash): a connected, idle runner goes offline
    /// and stays registered, as GitHub keeps a runner that stopped talking to it. A busy one
    /// is refused (its job would be left running on nothing), as is one never started.
    pub(crate) fn disconnect(&mut self) -> Result<(), StateError> {
        match self.phase {
            AgentPhase::Idle => {
                self.phase = AgentPhase::Registered;
                Ok(())
            }
            AgentPhase::Busy { .. } => Err(StateError::JobStillRunning(self.id)),
            AgentPhase::Registered => Err(StateError::RunnerNotRegistered(self.id)),
        }
    }

    /// Whether a runner whose scale set is gone has ended its job by `now` (it then
    /// deregisters); an idle or unstarted one never gets a job and stays.
    pub(crate) fn finished_without_set(&self, now: SimTime) -> bool {
        matches!(self.phase, AgentPhase::Busy { until, .. } if now >= until)
    }

    /// One step of the simulated runner on its scale set at `now`: an idle runner takes an
    /// assigned job, a busy one finishes it when its time has come.
    pub(crate) fn work(&mut self, set: &mut ScaleSet, config: &SimConfig, now: SimTime) -> Step {
        match self.phase {
            AgentPhase::Registered => Step::Stays,
            AgentPhase::Idle => {
                if let Some((request_id, until)) =
                    set.start_job((self.id, self.name.clone()), config, now)
                {
                    self.phase = AgentPhase::Busy { request_id, until };
                }
                Step::Stays
            }
            AgentPhase::Busy { request_id, until } => {
                if now < until {
                    return Step::Stays;
                }
                set.finish_job(request_id, (self.id, self.name.clone()), now);
                Step::Deregisters
            }
        }
    }
}
