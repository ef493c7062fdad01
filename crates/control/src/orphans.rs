//! The orphan sweep (issue 36): the I/O around [`crate::planner::orphans`], which decides.
//! It lists the pools of this controller's instances at every provider that can
//! ([`Provider::pools`]; the GARM executable protocol cannot, so an external provider's
//! orphans are not swept: said once per sweep at debug level), keeps the pools nothing in the
//! store names, lists their instances, asks every stored entity's GitHub whether the pool's
//! scale set exists, and for a pool proven gone hands each instance to the teardown core
//! ([`Teardown::orphan`]), which retires it as the superseded cleanup does (a busy runner's
//! machine is left, an idle runner removed, then the instance deleted), and its executor
//! ([`crate::scaler::execute`]), which carries that out. A failed read leaves the pools it concerns for the next sweep. GitHub is asked
//! only about pools that still hold instances and are named by nothing stored, so a settled
//! fleet costs no GitHub call at all.

use std::collections::BTreeSet;

use scaleset_github::{Client, GithubScaleSetId};
use scaleset_provider::{Pool, PoolKey, ProviderInstance};

use crate::error::{Error, chain, store};
use crate::planner::orphans::{Answer, Proof, Registered, Unproven, candidates, proof};
use crate::scaler::{At, again_on_token, execute};
use crate::shared::Shared;
use crate::teardown::{Orphan, Outcome, Teardown};

/// What one sweep did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Swept {
    /// Orphan instances deleted.
    pub(crate) deleted: usize,
    /// Orphan instances left to end a job.
    pub(crate) awaiting: usize,
    /// Pools with instances whose scale set was not proven gone.
    pub(crate) unproven: usize,
}

/// One pool nothing stored names, and its instances at each provider listing it.
struct Candidate {
    key: PoolKey,
    id: i64,
    instances: Vec<(String, ProviderInstance)>,
}

/// Sweeps once (module documentation).
pub(crate) async fn sweep(shared: &Shared) -> Result<Swept, Error> {
    let mut listed: Vec<(String, String)> = Vec::new();
    for (name, provider) in &shared.providers {
        match provider.pools().await {
            Ok(Some(keys)) => listed.extend(keys.into_iter().map(|k| (name.clone(), k.into()))),
            Ok(None) => tracing::debug!(
                provider = %name,
                "this provider cannot list its pools: instances of a scale set GitHub deleted \
                 whose rows a database loss took are not swept there (delete them by pool key)"
            ),
            Err(source) => {
                let error = Error::Provider {
                    provider: name.clone(),
                    during: "listing the pools of this controller's instances",
                    source,
                };
                tracing::warn!(error = %chain(&error), "orphan sweep: again at the next one");
            }
        }
    }
    if listed.is_empty() {
        return Ok(Swept::default());
    }
    // Read after the pools: a row or an id written before an instance was made is seen.
    let stored_ids: BTreeSet<i64> = shared
        .store
        .list_scale_sets(None)
        .await
        .map_err(store("listing the scale sets for the orphan sweep"))?
        .into_iter()
        .filter_map(|s| s.github_id)
        .collect();
    let row_keys: BTreeSet<String> = shared
        .store
        .instance_pool_keys()
        .await
        .map_err(store("listing the instances' pool keys"))?
        .into_iter()
        .collect();
    let keys: Vec<String> = listed.iter().map(|(_, key)| key.clone()).collect();
    let mut pools = Vec::new();
    for (key, id) in candidates(shared.identity.id(), &keys, &stored_ids, &row_keys) {
        let Ok(key) = PoolKey::parse(&key) else {
            continue;
        };
        let mut instances = Vec::new();
        for (name, _) in listed.iter().filter(|(_, k)| k == key.as_str()) {
            let Some(provider) = shared.providers.get(name) else {
                continue;
            };
            let found = provider
                .list(&Pool::new(key.clone()))
                .await
                .map_err(|source| Error::Provider {
                    provider: name.clone(),
                    during: "listing the instances of an orphaned pool",
                    source,
                })?;
            instances.extend(found.into_iter().map(|i| (name.clone(), i)));
        }
        if !instances.is_empty() {
            pools.push(Candidate { key, id, instances });
        }
    }
    if pools.is_empty() {
        return Ok(Swept::default());
    }
    retire(shared, pools).await
}

/// Proves each pool's scale set gone on every stored entity, then retires its instances.
async fn retire(shared: &Shared, pools: Vec<Candidate>) -> Result<Swept, Error> {
    let entities = shared
        .store
        .list_entities()
        .await
        .map_err(store("listing the entities for the orphan sweep"))?;
    let mut clients: Vec<Option<Client>> = Vec::with_capacity(entities.len());
    for entity in &entities {
        match shared.clients.entity_client(entity.id).await {
            Ok(client) => clients.push(Some(client)),
            Err(error) => {
                tracing::warn!(entity = %entity.kind, error = %chain(&error), "orphan sweep: this entity cannot be asked, so no pool is proven gone");
                clients.push(None);
            }
        }
    }
    let identity = shared.identity.adoption();
    let mut swept = Swept::default();
    let mut gone = Vec::new();
    for pool in pools {
        let mut answers = Vec::with_capacity(clients.len());
        for client in &clients {
            answers.push(match client {
                Some(client) => {
                    let id = GithubScaleSetId::from(pool.id);
                    match again_on_token(|| client.get_scale_set(id)).await {
                        Ok(set) => Answer::Found(set.labels.into_iter().map(|l| l.name).collect()),
                        Err(e) if e.is_scale_set_not_found() => Answer::NotFound,
                        Err(e) => {
                            tracing::warn!(pool = %pool.key, error = %e, "orphan sweep: looking the pool's scale set up failed; again at the next sweep");
                            Answer::Failed
                        }
                    }
                }
                None => Answer::Failed,
            });
        }
        match proof(&identity, &answers) {
            Proof::Gone => gone.push(pool),
            Proof::Unproven(why) => {
                swept.unproven += 1;
                let why = match why {
                    Unproven::NoEntity => "no entity is stored to ask",
                    Unproven::LookupFailed => "an entity could not be asked",
                    Unproven::Exists => "an entity has a scale set with its id",
                };
                tracing::info!(pool = %pool.key, instances = pool.instances.len(), reason = why, "orphan sweep: a pool nothing stored names is left (its scale set is not proven gone)");
            }
        }
    }
    if gone.is_empty() {
        return Ok(swept);
    }
    // Every entity could be asked (a pool is proven gone only then): each has its client.
    let clients: Vec<Client> = clients.into_iter().flatten().collect();
    if clients.len() != entities.len() {
        return Ok(swept);
    }
    let mut runners = Vec::new();
    for (entity, client) in clients.iter().enumerate() {
        let found = again_on_token(|| client.list_runners())
            .await
            .map_err(|source| Error::GitHub {
                scale_set: entities[entity].kind.to_string(),
                during: "listing runners for the orphan sweep",
                source,
            })?;
        runners.extend(found.into_iter().map(|r| Registered {
            entity,
            id: r.id.into(),
            name: r.name,
            busy: r.busy == Some(true),
        }));
    }
    let controller = shared.identity.id();
    for pool in gone {
        for (provider, instance) in pool.instances {
            let orphan = Orphan {
                name: instance.name.clone(),
                id: instance.id().as_str().to_owned(),
                provider: provider.clone(),
                key: pool.key.clone(),
            };
            // The teardown core decides (busy anywhere: left; idle: removed first; then the
            // instance), its executor carries it out.
            let core = Teardown::orphan(orphan, controller, &runners, std::time::Instant::now());
            let at = At::Sweep {
                shared,
                entities: &entities,
                clients: &clients,
            };
            let ran = execute(core, at).await?;
            match ran.outcome {
                Outcome::Removed => {
                    swept.deleted += 1;
                    tracing::info!(
                        event = "orphaned_pool_instance_deleted",
                        instance = %instance.name,
                        pool = %pool.key,
                        provider = %provider,
                        "deleted an instance of a GitHub scale set that no longer exists on any \
                         entity this controller serves, which nothing in the store named (its \
                         rows were lost)"
                    );
                }
                Outcome::Kept => swept.awaiting += 1,
                Outcome::Deferred => {
                    if let Some(failed) = ran.failed {
                        return Err(failed);
                    }
                }
                Outcome::NotOurs | Outcome::Unconfirmed | Outcome::AlreadyGone => {}
            }
        }
    }
    Ok(swept)
}
