//! Carries out [`crate::planner::superseded`] for one scale set: the instances recorded under
//! the pool key of a GitHub scale set that was deleted and replaced. Each is marked `deleting`
//! at once (so it counts as neither busy nor idle, for the planner and the metrics), its runner
//! looked up on GitHub, and the planner's step done: wait for a busy runner's job, remove an
//! idle runner, and delete the instance under its own (old) pool key once its runner is gone.
//! Run with every reconciliation, so a runner that ends its job later is cleaned up then.

use scaleset_github::RunnerId;
use scaleset_provider::{Pool, PoolKey};
use scaleset_store::{Instance, InstanceStatus, ReasonCode};

use super::{Runners, again_on_token, instance_id};
use crate::error::{Error, chain, store};
use crate::planner::reconcile::{AfterRemoval, after_removal, teardown};
use crate::planner::superseded::{OldRunner, Retirement, is_superseded, retirement};

impl Runners<'_> {
    /// Whether `instance` was made for the GitHub scale set this task serves.
    pub(crate) fn is_current(&self, instance: &Instance) -> bool {
        !is_superseded(
            &instance.pool_key,
            self.pool.key.as_str(),
            self.inherited.as_ref().map(|garm| garm.pool.key.as_str()),
        )
    }

    /// Retires every instance of a superseded GitHub scale set (see the module doc). A step
    /// that fails is tried again at the next reconciliation and does not fail the pass: the
    /// rows count for nothing already, and the new set must be served meanwhile. Only a lost
    /// lease ends it (another worker serves the set now).
    pub(crate) async fn retire_superseded(&self) -> Result<(), Error> {
        for instance in self.instances().await? {
            if self.is_current(&instance) {
                continue;
            }
            match self.retire_old(&instance).await {
                Ok(()) => {}
                Err(e) if e.is_lease_lost() => return Err(e),
                Err(e) => {
                    tracing::warn!(
                        runner = %instance.name,
                        error = %chain(&e),
                        "retiring an instance of a deleted GitHub scale set failed; again at \
                         the next reconciliation"
                    );
                }
            }
        }
        Ok(())
    }

    async fn retire_old(&self, instance: &Instance) -> Result<(), Error> {
        let pool = PoolKey::parse(&instance.pool_key)
            .map(Pool::new)
            .map_err(|source| Error::StoredPoolKey {
                instance: instance.name.clone(),
                pool_key: instance.pool_key.clone(),
                source,
            })?;
        let steps = teardown(instance.status);
        if steps.mark_deleting {
            self.transition(&instance.name, InstanceStatus::Deleting)
                .await?;
            self.note(
                ReasonCode::SupersededInstance,
                &format!(
                    "instance {} was made for a GitHub scale set that no longer exists (pool \
                     key {}): it no longer counts, and is deleted once its runner is gone",
                    instance.name, instance.pool_key
                ),
            )
            .await?;
        }
        let (runner, state) = self.old_runner(instance).await?;
        match retirement(state) {
            Retirement::AwaitJob => return Ok(()),
            Retirement::RemoveRunner => {
                if let Some(runner) = runner {
                    let result = again_on_token(|| self.client.remove_runner(runner)).await;
                    let removal =
                        result.map_err(self.github_error("removing a superseded runner"))?;
                    // The row is `deleting` by now: a runner that took a job after all keeps
                    // its machine until the job ends, and the row is not marked busy.
                    if after_removal(removal, InstanceStatus::Deleting) != AfterRemoval::Proceed {
                        return Ok(());
                    }
                }
            }
            Retirement::DeleteInstance => {}
        }
        if steps.delete_instance {
            self.provider
                .delete(&pool, &instance_id(instance)?)
                .await
                .map_err(self.provider_error("deleting a superseded instance"))?;
        }
        self.rows()
            .delete_instance(self.lease, &instance.name)
            .await
            .map_err(store("removing a superseded instance row"))?;
        self.note(
            ReasonCode::SupersededInstanceDeleted,
            &format!(
                "instance {} of a deleted GitHub scale set (pool key {}) has no runner left: \
                 deleted",
                instance.name, instance.pool_key
            ),
        )
        .await
    }

    /// What GitHub says of a superseded instance's runner, with its id when registered.
    async fn old_runner(
        &self,
        instance: &Instance,
    ) -> Result<(Option<RunnerId>, OldRunner), Error> {
        let found = match instance.github_runner_id {
            Some(id) => {
                let result = again_on_token(|| self.client.get_runner(RunnerId::from(id))).await;
                result.map_err(self.github_error("reading a superseded runner"))?
            }
            None => {
                // An interrupted JIT POST may have registered it: its name is unique.
                let result =
                    again_on_token(|| self.client.get_runner_by_name(&instance.name)).await;
                result.map_err(self.github_error("looking up a superseded runner by name"))?
            }
        };
        Ok(match found {
            Some(runner) if runner.busy == Some(true) => (Some(runner.id), OldRunner::Busy),
            Some(runner) => (Some(runner.id), OldRunner::Idle),
            None => (None, OldRunner::Gone),
        })
    }

    async fn note(&self, code: ReasonCode, reason: &str) -> Result<(), Error> {
        tracing::info!(event = %code, %reason, "superseded instance");
        self.shared
            .store
            .append_event(self.scale_set.id, code, reason)
            .await
            .map_err(store("appending an event"))?;
        Ok(())
    }
}
