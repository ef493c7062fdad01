//! Applies the declared fleet to the store on start: credentials by name, entities by kind and
//! credentials, scale sets by (entity, runner group, name). Idempotent: a restart changes
//! nothing; an empty (wiped) database is rebuilt, and the control loop then finds each scale
//! set on GitHub and adopts it. Scale sets in the store that the file does not declare (made
//! through the API) are left alone.

use anyhow::{Context as _, Result};
use scaleset_config::Fleet;
use scaleset_store::{NewEntity, NewScaleSet, ScaleSetSpec, Store};

/// What applying changed, for the log.
#[derive(Debug, Default)]
pub(crate) struct Applied {
    pub(crate) created: usize,
    pub(crate) updated: usize,
    pub(crate) unchanged: usize,
}

fn comparable(spec: &ScaleSetSpec) -> ScaleSetSpec {
    let mut spec = spec.clone();
    spec.runner_group.id = None;
    spec
}

pub(crate) async fn apply(store: &dyn Store, fleet: &Fleet) -> Result<Applied> {
    for new in &fleet.credentials {
        match store.get_credentials_by_name(&new.name).await {
            Ok(existing) => {
                if existing.endpoint != new.endpoint || existing.auth != new.auth {
                    store
                        .update_credentials(existing.id, new.clone())
                        .await
                        .with_context(|| format!("updating credentials {:?}", new.name))?;
                }
            }
            Err(e) if e.is_not_found() => {
                store
                    .create_credentials(new.clone())
                    .await
                    .with_context(|| format!("storing credentials {:?}", new.name))?;
            }
            Err(e) => {
                return Err(e).with_context(|| format!("reading credentials {:?}", new.name));
            }
        }
    }
    let mut applied = Applied::default();
    for declared in &fleet.scale_sets {
        let credentials = store
            .get_credentials_by_name(&declared.credentials)
            .await
            .with_context(|| format!("reading credentials {:?}", declared.credentials))?;
        let entities = store.list_entities().await.context("listing entities")?;
        let entity = match entities
            .into_iter()
            .find(|e| e.kind == declared.entity && e.credentials_id == credentials.id)
        {
            Some(entity) => entity,
            None => store
                .create_entity(NewEntity {
                    kind: declared.entity.clone(),
                    credentials_id: credentials.id,
                })
                .await
                .with_context(|| format!("storing entity {:?}", declared.entity))?,
        };
        let name = &declared.spec.name;
        let group = &declared.spec.runner_group.name;
        match store
            .find_scale_set(entity.id, group, name)
            .await
            .with_context(|| format!("looking up scale set {name:?}"))?
        {
            None => {
                store
                    .create_scale_set(NewScaleSet {
                        entity_id: entity.id,
                        spec: declared.spec.clone(),
                    })
                    .await
                    .with_context(|| format!("storing scale set {name:?}"))?;
                applied.created += 1;
            }
            Some(existing) if comparable(&existing.spec) != comparable(&declared.spec) => {
                let mut changed = existing.clone();
                let cached_group = existing.spec.runner_group.id;
                changed.spec = declared.spec.clone();
                changed.spec.runner_group.id = cached_group;
                store
                    .update_scale_set(&changed)
                    .await
                    .with_context(|| format!("updating scale set {name:?}"))?;
                applied.updated += 1;
            }
            Some(_) => applied.unchanged += 1,
        }
    }
    Ok(applied)
}
