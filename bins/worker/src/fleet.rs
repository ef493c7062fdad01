//! Applies the declared fleet to the store on start, through the same plan/apply code as the
//! server's API (`scaleset_control::apply_declared`): credentials by name, entities by kind and
//! credentials, scale sets by (entity, runner group, name). Idempotent: a restart changes
//! nothing; an empty (wiped) database is rebuilt, and the control loop then finds each scale
//! set on GitHub and adopts it. Scale sets in the store that the file does not declare (made
//! through the API) are left alone (the start-up apply never prunes).

use anyhow::{Context as _, Result};
use scaleset_config::Fleet;
use scaleset_control::{Action, ControllerIdentity, apply_declared};
use scaleset_store::Store;

/// What applying changed, for the log.
#[derive(Debug, Default)]
pub(crate) struct Applied {
    pub(crate) created: usize,
    pub(crate) updated: usize,
    pub(crate) unchanged: usize,
    pub(crate) refused: usize,
}

pub(crate) async fn apply(
    store: &dyn Store,
    identity: &ControllerIdentity,
    fleet: &Fleet,
) -> Result<Applied> {
    let applied = apply_declared(store, identity, fleet)
        .await
        .context("applying the declared fleet")?;
    for step in &applied.plan.scale_sets {
        if step.action == Action::Refuse {
            tracing::warn!(scale_set = %step.key, reason = %step.reason, "declared scale set refused");
        }
    }
    let plan = &applied.plan;
    Ok(Applied {
        created: plan.count(Action::Create) + plan.count(Action::Adopt),
        updated: plan.count(Action::Update),
        unchanged: plan.count(Action::Unchanged),
        refused: plan.count(Action::Refuse),
    })
}
