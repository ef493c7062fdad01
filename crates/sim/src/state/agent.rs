//! Agents: runners registered by `generatejitconfig` (names unique per tenant), and the
//! simulated runners that take one job, run it in simulated time and deregister.

use super::job::{JobEvent, JobState, PendingEvent};
use super::{State, StateError, same_name};
use crate::clock::SimTime;
use crate::config::SimConfig;
use crate::scope::Scope;

/// What an agent (runner) is doing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum AgentPhase {
    /// Registered by `generatejitconfig`; no runner has started with its JIT config.
    Registered,
    /// A simulated runner is connected and waits for a job.
    Idle,
    /// A simulated runner runs job `request_id` until `until`.
    Busy { request_id: i64, until: SimTime },
}

/// A registered runner.
#[derive(Debug, Clone)]
pub(crate) struct Agent {
    pub(crate) id: i64,
    pub(crate) scope: Scope,
    pub(crate) name: String,
    pub(crate) scale_set_id: i64,
    pub(crate) created_on: SimTime,
    pub(crate) phase: AgentPhase,
}

impl State {
    /// Registers an agent for scale set `id`; 409 `AgentExistsException` on a duplicate name.
    pub(crate) fn register_agent(
        &mut self,
        scope: &Scope,
        id: i64,
        name: &str,
        now: SimTime,
    ) -> Result<Agent, StateError> {
        self.scale_set(scope, id)?;
        if name.trim().is_empty() {
            return Err(StateError::EmptyRunnerName);
        }
        if self
            .agents
            .values()
            .any(|a| &a.scope == scope && same_name(&a.name, name))
        {
            return Err(StateError::AgentExists {
                name: name.to_owned(),
            });
        }
        let agent = Agent {
            id: self.next_agent_id,
            scope: scope.clone(),
            name: name.to_owned(),
            scale_set_id: id,
            created_on: now,
            phase: AgentPhase::Registered,
        };
        self.next_agent_id += 1;
        self.agents.insert(agent.id, agent.clone());
        Ok(agent)
    }

    /// Agent `id` of `scope`; 404 `AgentNotFoundException` if unknown.
    pub(crate) fn agent(&self, scope: &Scope, id: i64) -> Result<&Agent, StateError> {
        self.agents
            .get(&id)
            .filter(|a| &a.scope == scope)
            .ok_or(StateError::AgentNotFound(id))
    }

    /// Agents of `scope`, filtered by name (case-insensitive) when given.
    pub(crate) fn find_agents(&self, scope: &Scope, name: Option<&str>) -> Vec<&Agent> {
        self.agents
            .values()
            .filter(|a| &a.scope == scope)
            .filter(|a| name.is_none_or(|n| same_name(&a.name, n)))
            .collect()
    }

    /// Removes agent `id`; 400 `JobStillRunningException` while it runs a job.
    pub(crate) fn remove_agent(&mut self, scope: &Scope, id: i64) -> Result<(), StateError> {
        let agent = self.agent(scope, id)?;
        if matches!(agent.phase, AgentPhase::Busy { .. }) {
            return Err(StateError::JobStillRunning(id));
        }
        self.agents.remove(&id);
        Ok(())
    }

    /// Connects a simulated runner as agent `id`; it then takes one assigned job.
    pub(crate) fn start_runner(&mut self, id: i64) -> Result<(), StateError> {
        let agent = self
            .agents
            .get_mut(&id)
            .ok_or(StateError::RunnerNotRegistered(id))?;
        if agent.phase != AgentPhase::Registered {
            return Err(StateError::RunnerAlreadyStarted {
                name: agent.name.clone(),
            });
        }
        agent.phase = AgentPhase::Idle;
        Ok(())
    }

    pub(super) fn run_runners(&mut self, config: &SimConfig, now: SimTime) {
        let agent_ids: Vec<i64> = self.agents.keys().copied().collect();
        for agent_id in agent_ids {
            let Some(agent) = self.agents.get(&agent_id).cloned() else {
                continue;
            };
            let Some(set) = self.scale_sets.get_mut(&agent.scale_set_id) else {
                continue;
            };
            match agent.phase {
                AgentPhase::Registered => {}
                AgentPhase::Idle => {
                    let Some(job) = set
                        .jobs
                        .values_mut()
                        .find(|j| j.state == JobState::Assigned)
                    else {
                        continue;
                    };
                    job.state = JobState::Running;
                    job.runner_assigned_at = Some(now);
                    job.runner = Some((agent.id, agent.name.clone()));
                    let until = now.plus(job.run_for.unwrap_or(config.runner_job_duration));
                    let event = JobEvent::Started {
                        job: job.clone(),
                        runner: (agent.id, agent.name.clone()),
                    };
                    let request_id = job.request_id;
                    set.pending.push(PendingEvent {
                        event,
                        due: now.plus(config.job_started_delay),
                    });
                    if config.job_started_delay.is_zero() {
                        set.notify.notify_waiters();
                    }
                    if let Some(a) = self.agents.get_mut(&agent_id) {
                        a.phase = AgentPhase::Busy { request_id, until };
                    }
                }
                AgentPhase::Busy { request_id, until } => {
                    if now < until {
                        continue;
                    }
                    if let Some(job) = set.jobs.get_mut(&request_id) {
                        job.finished_at = Some(now);
                        job.state = JobState::Completed(job.result.clone());
                        let result = job.result.clone();
                        let event = JobEvent::Completed {
                            job: job.clone(),
                            runner: Some((agent.id, agent.name.clone())),
                            result,
                        };
                        set.pending.push(PendingEvent::now(event, now));
                        set.notify.notify_waiters();
                    }
                    // An ephemeral runner deregisters itself when its job is done.
                    self.agents.remove(&agent_id);
                }
            }
        }
    }
}
