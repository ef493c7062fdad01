//! The teardown executor: the one place in `control` that removes a runner from GitHub,
//! deletes an instance at a provider or generates a runner's JIT config (besides the adoption
//! driver, which executes `scaleset-adopt`'s commands). It carries out the commands of a [`Teardown`] core with one
//! `match`, feeds the answers back with the time they came, and makes no decision: what to
//! remove, in which order, under which pool key, is the core's.
//!
//! Two callers hand it a core: a served scale set's task ([`At::ScaleSet`]: retirements,
//! drains, the reconciliation's deletes, the superseded instances) and the orphan sweep
//! ([`At::Sweep`]: every stored entity's GitHub and the providers that listed the pools).

use std::time::Instant;

use scaleset_github::{Client, JitConfig, JitConfigRequest};
use scaleset_provider::Pool;
use scaleset_store::{Entity, ReasonCode};

use super::{Runners, again_on_token, instance_id_of, join_all};
use crate::error::{Error, chain, store};
use crate::shared::Shared;
use crate::teardown::{Claim, Command, Fact, FoundRunner, Note, Outcome, PoolOf, Teardown};

/// Where a teardown's commands are carried out.
pub(crate) enum At<'a, 'b> {
    /// A served scale set's task: its client, its provider, its rows.
    ScaleSet(&'a Runners<'b>),
    /// The orphan sweep: the stored entities, each with its client, and the providers.
    Sweep {
        /// The control loop's shared state (its providers).
        shared: &'a Shared,
        /// The stored entities, in the order the core's entity indexes count.
        entities: &'a [Entity],
        /// Their clients, in the same order.
        clients: &'a [Client],
    },
}

impl At<'_, '_> {
    /// The served scale set's task, for a command only it can carry out.
    fn runners(&self, command: &'static str) -> Result<&Runners<'_>, Error> {
        match self {
            Self::ScaleSet(runners) => Ok(runners),
            Self::Sweep { .. } => Err(Error::Misrouted { command }),
        }
    }
}

/// How an executed teardown ended.
pub(crate) struct Ran {
    pub(crate) outcome: Outcome,
    /// A failed delete the core did not hand to the provider's back-off.
    pub(crate) failed: Option<Error>,
    /// When the core asks to be tried again ([`Teardown::poll_timeout`]).
    pub(crate) wake: Option<Instant>,
}

impl Runners<'_> {
    /// Executes `core` with this scale set's client, provider and rows ([`execute`]).
    pub(crate) async fn execute_teardown(&self, core: Teardown) -> Result<Ran, Error> {
        execute(core, At::ScaleSet(self)).await
    }

    /// Generates a JIT config for each of `requests` (runners whose intents the scaler
    /// recorded), all at once on this task, and hands back each answer in order; what a
    /// failed one means (its intent torn down) is the scaler's and the teardown core's.
    pub(crate) async fn generate_jit_configs(
        &self,
        requests: &[JitConfigRequest],
    ) -> Vec<Result<JitConfig, scaleset_github::Error>> {
        let (client, github_id) = (self.client, self.github_id);
        join_all(
            requests.iter().map(|request| {
                again_on_token(move || client.generate_jit_config(github_id, request))
            }),
        )
        .await
    }
}

/// Carries out each command of `core` at `at` (one `match`), feeds the answers back with the
/// time they came, and says how it ended, with a failed delete the core did not hand to the
/// back-off. It decides nothing; a GitHub or store error ends it (the rows say where it
/// stopped, and a teardown started again from them finishes).
pub(crate) async fn execute(mut core: Teardown, at: At<'_, '_>) -> Result<Ran, Error> {
    let mut failed = None;
    while let Some(command) = core.poll_command() {
        let fact = match command {
            Command::FindRunner { name } => {
                let runners = at.runners("FindRunner")?;
                let result = again_on_token(|| runners.client.get_runner_by_name(&name)).await;
                let found = result.map_err(runners.github_error("looking up a runner by name"))?;
                Some(Fact::RunnerFound(found.map(|r| FoundRunner {
                    id: r.id,
                    name: r.name,
                    scale_set: r.runner_scale_set_id,
                    busy: r.busy == Some(true),
                })))
            }
            Command::GetRunner { id } => {
                let runners = at.runners("GetRunner")?;
                let result = again_on_token(|| runners.client.get_runner(id)).await;
                let found = result.map_err(runners.github_error("reading a runner"))?;
                Some(Fact::RunnerFound(found.map(|r| FoundRunner {
                    id: r.id,
                    name: r.name,
                    scale_set: r.runner_scale_set_id,
                    busy: r.busy == Some(true),
                })))
            }
            Command::RemoveRunner { id, .. } => {
                let runners = at.runners("RemoveRunner")?;
                let result = again_on_token(|| runners.client.remove_runner(id)).await;
                let removal = result.map_err(runners.github_error("removing a runner"))?;
                Some(Fact::RunnerRemoved(removal))
            }
            Command::RemoveRegistered { entity, id, .. } => {
                let At::Sweep {
                    entities, clients, ..
                } = &at
                else {
                    return Err(Error::Misrouted {
                        command: "RemoveRegistered",
                    });
                };
                let (Some(client), Some(of)) = (clients.get(entity), entities.get(entity)) else {
                    return Err(Error::Misrouted {
                        command: "RemoveRegistered",
                    });
                };
                let removal =
                    again_on_token(|| client.remove_runner(id))
                        .await
                        .map_err(|source| Error::GitHub {
                            scale_set: of.kind.to_string(),
                            during: "removing the runner of an orphaned instance",
                            source,
                        })?;
                Some(Fact::RegistrationRemoved {
                    entity,
                    id,
                    removal,
                })
            }
            Command::Transition { name, to } => {
                at.runners("Transition")?.transition(&name, to).await?;
                Some(Fact::Moved)
            }
            Command::LookUpClaims { provider_id } => {
                let runners = at.runners("LookUpClaims")?;
                let rows = runners
                    .shared
                    .store
                    .instances_claiming(&provider_id)
                    .await
                    .map_err(store("looking up the rows claiming a provider id"))?;
                let refused = runners
                    .shared
                    .refused_ids
                    .with(|refused| refused.contains(&provider_id));
                Some(Fact::Claims {
                    claimed: rows
                        .into_iter()
                        .map(|row| Claim {
                            name: row.name,
                            provider_id: row.provider_id,
                        })
                        .collect(),
                    refused,
                })
            }
            Command::DeleteInstance { name, pool, id } => {
                let id = instance_id_of(&id)?;
                let deleted = match (pool, &at) {
                    (PoolOf::Orphaned { provider, key }, At::Sweep { shared, .. }) => {
                        // The sweep listed the pool at this provider: it is configured.
                        let Some(at) = shared.providers.get(&provider) else {
                            core.handle(Fact::InstanceDeleteFailed, Instant::now());
                            continue;
                        };
                        at.delete(&Pool::new(key), &id)
                            .await
                            .map_err(|source| Error::Provider {
                                provider: provider.clone(),
                                during: "deleting an orphaned instance",
                                source,
                            })
                    }
                    (PoolOf::Orphaned { .. }, At::ScaleSet(_)) => {
                        return Err(Error::Misrouted {
                            command: "DeleteInstance",
                        });
                    }
                    (pool, at) => {
                        let runners = at.runners("DeleteInstance")?;
                        let recorded;
                        let pool = match (pool, &runners.inherited) {
                            (PoolOf::Inherited, Some(garm)) => &garm.pool,
                            (PoolOf::Recorded(key), _) => {
                                recorded = Pool::new(key);
                                &recorded
                            }
                            _ => &runners.pool,
                        };
                        runners
                            .provider
                            .delete(pool, &id)
                            .await
                            .map_err(runners.provider_error("deleting an instance"))
                    }
                };
                match deleted {
                    Ok(()) => Some(Fact::InstanceDeleted),
                    Err(error) => {
                        tracing::warn!(runner = %name, error = %chain(&error), "instance delete failed");
                        failed = Some(error);
                        Some(Fact::InstanceDeleteFailed)
                    }
                }
            }
            Command::ProviderWorked => {
                at.runners("ProviderWorked")?.provider_succeeded().await?;
                None
            }
            Command::ProviderFailed => {
                let runners = at.runners("ProviderFailed")?;
                if let Some(error) = failed.take() {
                    runners.provider_failed(&error).await?;
                }
                None
            }
            Command::DeleteRow { name } => {
                let runners = at.runners("DeleteRow")?;
                runners
                    .rows()
                    .delete_instance(runners.lease, &name)
                    .await
                    .map_err(store("removing an instance row"))?;
                Some(Fact::RowDeleted)
            }
            Command::Note {
                note,
                name,
                pool_key,
            } => {
                let runners = at.runners("Note")?;
                let (code, reason) = match note {
                    Note::Superseded => (
                        ReasonCode::SupersededInstance,
                        format!(
                            "instance {name} was made for a GitHub scale set that no longer \
                             exists (pool key {pool_key}): it no longer counts, and is deleted \
                             once its runner is gone"
                        ),
                    ),
                    Note::SupersededDeleted => (
                        ReasonCode::SupersededInstanceDeleted,
                        format!(
                            "instance {name} of a deleted GitHub scale set (pool key \
                             {pool_key}) has no runner left: deleted"
                        ),
                    ),
                };
                tracing::info!(event = %code, %reason, "superseded instance");
                runners
                    .shared
                    .store
                    .append_event(runners.scale_set.id, code, &reason)
                    .await
                    .map_err(store("appending an event"))?;
                None
            }
        };
        if let Some(fact) = fact {
            core.handle(fact, Instant::now());
        }
    }
    // Every path of the core ends with an outcome once its commands are carried out.
    Ok(Ran {
        outcome: core.outcome().unwrap_or(Outcome::Deferred),
        failed,
        wake: core.poll_timeout(),
    })
}
