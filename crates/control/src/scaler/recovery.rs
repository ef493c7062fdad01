//! Recovery beside the listener (issue 35 item 1, "listen before listing"). A scale set polls
//! for jobs as soon as its session is open; what a crash or a lost database left of its
//! instances is found out meanwhile:
//!
//! 1. [`Runners::recovery`] gathers the facts, and only reads: the rows of the served GitHub
//!    scale set, the provider's answer on each row a crash left `creating` and its list under
//!    our pool key (under the provider's recovery permit,
//!    [`crate::Settings::max_concurrent_recoveries`]; never a start slot), GitHub's answer on
//!    each registered runner, and GitHub's runners. A failed read is tried again after the
//!    task's backoff; the scale set listens on.
//! 2. The listener polls that future beside its long-poll, and hands what lands to
//!    [`Runners::land`], which merges it by the start planner's rules
//!    ([`crate::planner::start`]): steps for rows the listener touched or moved meanwhile are
//!    dropped, and the late reconciliation counts the touched names as recorded.
//!
//! Until the facts land, no warm pool is made and the periodic reconciliation waits; jobs are
//! served.

use std::future::Future;
use std::pin::Pin;

use scaleset_github::{Client, RunnerReference};
use scaleset_provider::{Pool, Provider, ProviderInstance};
use scaleset_store::{Instance, InstanceStatus, Lease, ReasonCode, ScaleSet, ScaleSetState};
use tokio_util::sync::CancellationToken;

use super::{Runners, again_on_token, instance_id};
use crate::ensure::record;
use crate::error::{Error, chain, store};
use crate::planner::reconcile::{Recovery, recovered_creating, recovered_registered, recovery};
use crate::planner::start::{recorded_when_landed, still_applies, unchanged};
use crate::planner::superseded::is_superseded;
use crate::planner::takeover::Inherited;
use crate::shared::Shared;
use crate::wait::{Waited, wait_jittered};

/// The facts a recovery gathered, as they were when it asked.
#[derive(Debug)]
pub(crate) struct Landed {
    /// The rows of the served GitHub scale set when the recovery began.
    rows: Vec<Instance>,
    /// What recovery decided for each of them, by name, with the instance the provider found
    /// for a `creating` row.
    steps: Vec<(String, Recovery, Option<ProviderInstance>)>,
    /// What the provider listed under our pool key.
    at_provider: Vec<ProviderInstance>,
    /// What the provider listed under GARM's pool, for a set taken over from GARM.
    garms: Vec<ProviderInstance>,
    /// GitHub's runners.
    runners: Vec<RunnerReference>,
}

/// A recovery running beside the listener: it ends with its facts (a failed read is tried
/// again; a stop leaves it pending, and the listener drops it).
pub(crate) type Recovering<'b> = Pin<Box<dyn Future<Output = Landed> + Send + 'b>>;

impl<'a> Runners<'a> {
    /// Starts a recovery of this scale set's instances, GitHub counting `registered` runners
    /// of the scale set; from now on the names this task touches are remembered until
    /// [`Runners::land`].
    pub(crate) fn recovery<'b>(
        &self,
        registered: i64,
        cancel: &'b CancellationToken,
    ) -> Recovering<'b>
    where
        'a: 'b,
    {
        self.touched.begin(registered);
        let shared: &'a Shared = self.shared;
        let client: &'a Client = self.client;
        let scale_set: &'a ScaleSet = self.scale_set;
        let lease: &'a Lease = self.lease;
        let provider = self.provider.clone();
        let pool = self.pool.clone();
        let inherited = self.inherited.clone();
        Box::pin(async move {
            let mut failures = 0u32;
            loop {
                match gather(
                    shared,
                    client,
                    scale_set,
                    &*provider,
                    &pool,
                    inherited.as_ref(),
                )
                .await
                {
                    Ok(landed) => {
                        if failures > 0 {
                            recovered(shared, lease, failures).await;
                        }
                        return landed;
                    }
                    Err(error) => {
                        failures += 1;
                        tracing::warn!(error = %chain(&error), failures, "recovering the instances failed; listening on, and trying again after the backoff");
                        let backoff = shared.settings.backoff(failures);
                        show_failure(shared, lease, scale_set, &error).await;
                        if wait_jittered(cancel, backoff).await == Waited::Cancelled {
                            // The listener ends on the same stop and drops this.
                            return std::future::pending().await;
                        }
                    }
                }
            }
        })
    }

    /// Merges the facts of a recovery that ran beside the listener (see the module
    /// documentation): finishes or undoes what a crash interrupted, then reconciles with the
    /// lists it gathered.
    pub(crate) async fn land(&mut self, landed: Landed) -> Result<(), Error> {
        let Landed {
            rows: then,
            steps,
            at_provider,
            garms,
            runners,
        } = landed;
        let now = self.instances().await?;
        for (name, step, found) in steps {
            let (Some(old), Some(row)) = (
                then.iter().find(|i| i.name == name),
                now.iter().find(|i| i.name == name),
            ) else {
                continue;
            };
            if !still_applies(old.status, Some(row.status), self.touched.contains(&name)) {
                tracing::debug!(runner = %name, "moved by the listener since the recovery looked; left to the next reconciliation");
                continue;
            }
            match (step, found) {
                (Recovery::Remove, _) => self.remove_everywhere(row).await?,
                (Recovery::RecordProviderId, Some(found)) => {
                    self.rows()
                        .advance_instance(
                            self.lease,
                            &row.name,
                            InstanceStatus::Running,
                            Some(&found.provider_id),
                            None,
                        )
                        .await
                        .map_err(store("recording the provider id"))?;
                    self.touched.touch(&row.name);
                }
                _ => {}
            }
        }
        let touched = self.touched.finish();
        self.last_reconciled = Some(tokio::time::Instant::now());
        // Rows of a GitHub scale set deleted and replaced: retired as their runners go.
        self.retire_superseded().await?;
        let rows = self.instances().await?;
        let recorded = recorded_when_landed(&rows, &touched);
        let judged = unchanged(&then, &rows, &touched);
        self.apply_reconcile(&recorded, &judged, &at_provider, &garms, &runners)
            .await
    }
}

/// How a scale set's state reason begins while its recovery fails: a recovery that works
/// afterwards clears the reason only if it still says this.
const RECOVERY_FAILING: &str = "recovering the instances failed";

/// Shows on the scale set that its recovery failed with `error`, what that holds up, and what
/// to do: state `error` (counted by the attention metric), the reason, and a `recovery_failed`
/// event. The reason names no count or wait, so a failure repeated with the same cause adds to
/// one event's count instead of an event per try. A failed write is logged: the recovery is
/// tried again whatever the store says.
async fn show_failure(shared: &Shared, lease: &Lease, scale_set: &ScaleSet, error: &Error) {
    let reason = format!(
        "{RECOVERY_FAILING}: {}; jobs are served meanwhile, but no warm pool is made and what a \
         crash left (instances being created, runners without a machine) is not finished or \
         removed until it works; tried again with back-off (at most {}s apart); check that the \
         provider {:?} can list and get instances (its ListInstances and GetInstance) and that \
         GitHub answers with these credentials",
        chain(error),
        shared.settings.backoff_max.as_secs().max(1),
        scale_set.spec.provider()
    );
    let recorded = record(shared, lease, ReasonCode::RecoveryFailing, &reason, |s| {
        if matches!(s.state, ScaleSetState::Ready | ScaleSetState::Pending) {
            s.state = ScaleSetState::Error;
        }
    })
    .await;
    if let Err(e) = recorded {
        tracing::warn!(error = %chain(&e), "could not show the failed recovery on the scale set");
    }
}

/// The recovery worked after `failures` failed tries: an event says so, and the scale set is
/// ready again when the failed recovery was what it showed.
async fn recovered(shared: &Shared, lease: &Lease, failures: u32) {
    let reason = format!("recovering the instances worked after {failures} failed tries; serving");
    let written = shared
        .store
        .modify_leased_scale_set_with_event(
            lease,
            &mut |s| {
                if s.state == ScaleSetState::Error && s.state_reason.starts_with(RECOVERY_FAILING) {
                    s.state = ScaleSetState::Ready;
                    s.state_reason = reason.clone();
                }
            },
            ReasonCode::RecoveryRecovered,
            &reason,
        )
        .await;
    if let Err(e) = written {
        tracing::warn!(error = %chain(&e), "could not show the recovery's success on the scale set");
    }
}

/// The instance of a pool's listing that is the row named `name` whose instance id is `id`
/// (its provider id, or its name when the provider never answered one).
fn listed_instance(listed: &[ProviderInstance], name: &str, id: &str) -> Option<ProviderInstance> {
    listed
        .iter()
        .find(|i| i.provider_id == id || i.name == name)
        .cloned()
}

/// The recovery's reads (see the module documentation).
async fn gather(
    shared: &Shared,
    client: &Client,
    scale_set: &ScaleSet,
    provider: &dyn Provider,
    pool: &Pool,
    inherited: Option<&Inherited>,
) -> Result<Landed, Error> {
    let provider_error = |during: &'static str| {
        let provider = scale_set.spec.provider().to_string();
        move |source| Error::Provider {
            provider,
            during,
            source,
        }
    };
    let github_error = |during: &'static str| {
        let scale_set = scale_set.spec.name().to_string();
        move |source| Error::GitHub {
            scale_set,
            during,
            source,
        }
    };
    let rows: Vec<Instance> = shared
        .store
        .list_instances(scale_set.id)
        .await
        .map_err(store("listing instances"))?
        .into_iter()
        .filter(|i| {
            !is_superseded(
                &i.pool_key,
                pool.key.as_str(),
                inherited.map(|garm| garm.pool.key.as_str()),
            )
        })
        .collect();
    let mut steps = Vec::with_capacity(rows.len());
    let (at_provider, garms) = {
        // Held for the provider's calls only: GitHub's below need no provider permit.
        let permits = shared.recoveries.of(scale_set.spec.provider().as_str());
        let _permit = match &permits {
            Some(permits) => permits.acquire().await.ok(),
            None => None,
        };
        let mut unanswered = Vec::new();
        for row in &rows {
            if recovery(row.status, row.github_runner_id) != Recovery::AskProvider {
                continue;
            }
            // A row taken over from GARM lives in GARM's pool.
            let row_pool = match inherited {
                Some(garm) if garm.pool.key.as_str() == row.pool_key => &garm.pool,
                _ => pool,
            };
            let id = instance_id(row)?;
            match provider.get(row_pool, &id).await {
                Ok(found) => steps.push((row.name.clone(), recovered_creating(true), Some(found))),
                Err(e) if e.is_not_found() => {
                    steps.push((row.name.clone(), recovered_creating(false), None));
                }
                // GARM's real providers answer "not found" as any failure (garm-provider-aws
                // exits 1, not 30, for an instance it cannot find by name): failing the
                // recovery here would fail it on every retry, and the set would never serve
                // again. The pool's listing below decides instead (GARM itself never asks
                // GetInstance); a provider that cannot list fails the recovery there.
                Err(e) => {
                    tracing::warn!(
                        instance = %row.name,
                        error = %e,
                        "the provider's GetInstance failed; the pool's listing decides whether the instance exists"
                    );
                    unanswered.push((row, id, row_pool.key.clone()));
                }
            }
        }
        let ours = provider
            .list(pool)
            .await
            .map_err(provider_error("listing the instances of our pool"))?;
        // A set taken over from GARM: GARM's instances, under its pool id and controller id.
        let garms = match inherited {
            Some(garm) => provider
                .list(&garm.pool)
                .await
                .map_err(provider_error("listing the instances GARM left"))?,
            None => Vec::new(),
        };
        for (row, id, row_pool) in unanswered {
            let listed = if row_pool == pool.key { &ours } else { &garms };
            let found = listed_instance(listed, &row.name, id.as_str());
            steps.push((row.name.clone(), recovered_creating(found.is_some()), found));
        }
        (ours, garms)
    };
    for row in &rows {
        match recovery(row.status, row.github_runner_id) {
            Recovery::AskProvider => {}
            Recovery::AskGitHub(runner) => {
                let result = again_on_token(|| client.get_runner(runner)).await;
                let runner = result.map_err(github_error("reading a runner"))?;
                steps.push((
                    row.name.clone(),
                    recovered_registered(runner.as_ref()),
                    None,
                ));
            }
            step => steps.push((row.name.clone(), step, None)),
        }
    }
    let result = again_on_token(|| client.list_runners()).await;
    let runners = result.map_err(github_error("listing runners"))?;
    Ok(Landed {
        rows,
        steps,
        at_provider,
        garms,
        runners,
    })
}
