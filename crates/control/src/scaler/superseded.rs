//! The instances recorded under the pool key of a GitHub scale set that was deleted and
//! replaced ([`crate::planner::superseded`]). Each is handed to the teardown core
//! ([`Teardown::superseded`]), which orders its retirement: marked `deleting` at once (so it
//! counts as neither busy nor idle, for the planner and the metrics), its runner looked up on
//! GitHub, a busy runner's job waited for, an idle runner removed, and the instance deleted
//! under its own (old) pool key once its runner is gone; the teardown executor carries it
//! out. Run with every reconciliation, so a runner that ends its job later is cleaned up then.

use scaleset_github::RunnerId;
use scaleset_provider::PoolKey;
use scaleset_store::Instance;

use super::Runners;
use crate::error::{Error, chain};
use crate::planner::superseded::is_superseded;
use crate::teardown::{self, Outcome, Teardown};

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

    /// Hands one superseded row to the teardown core ([`Teardown::superseded`]), which
    /// decides each step, and its executor, which carries them out.
    async fn retire_old(&self, instance: &Instance) -> Result<(), Error> {
        let key = PoolKey::parse(&instance.pool_key).map_err(|source| Error::StoredPoolKey {
            instance: instance.name.clone(),
            pool_key: instance.pool_key.clone(),
            source,
        })?;
        let row = teardown::Row {
            name: instance.name.clone(),
            status: instance.status,
            runner_id: instance.github_runner_id.map(RunnerId::from),
            provider_id: instance.provider_id.clone(),
            pool_key: instance.pool_key.clone(),
        };
        let core = Teardown::superseded(row, key, self.ours(), std::time::Instant::now());
        let ran = self.execute_teardown(core).await?;
        match (ran.outcome, ran.failed) {
            (_, Some(failed)) => Err(failed),
            (Outcome::Unconfirmed, None) => {
                tracing::warn!(runner = %instance.name, "GitHub answered the superseded runner's look-up with another runner; asked again at the next reconciliation");
                Ok(())
            }
            _ => Ok(()),
        }
    }
}
