//! Stopping the demo during a GitHub outage (issue 29 item 8): it took 65 s while lookups
//! failed; a scale set waiting to retry its ensure must not hold the stop up.

use std::time::{Duration, Instant};

use anyhow::Result;
use scaleset_demo::{Demo, FLEET};
use scaleset_sim::Burst;
use scaleset_store::ScaleSetState;

use crate::helpers::{options, scale_sets};
use scaleset_eventually::try_eventually;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_demo_stops_promptly_while_github_lookups_fail() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let demo = Demo::start(options(dir.path())).await?;
    let store = demo.store();
    let sets = try_eventually("the fleet is ready", || {
        let store = store.clone();
        async move {
            let sets = scale_sets(store.as_ref()).await?;
            let ready =
                sets.len() == FLEET.len() && sets.iter().all(|s| s.state == ScaleSetState::Ready);
            Ok::<_, anyhow::Error>(ready.then_some(sets))
        }
    })
    .await?;
    // GitHub loses one scale set, and every lookup by name fails from now on: its ensure
    // retries for as long as the outage lasts.
    let lost = &sets[0];
    let github_id = lost.github_id.expect("a ready scale set has its GitHub id");
    demo.simulator().update_faults(|f| {
        f.server_errors = Some(Burst::new(1_000_000, 503).on("list_scale_sets"));
    });
    demo.simulator().delete_scale_set(github_id)?;
    try_eventually("the lost scale set's ensure retries", || {
        let store = store.clone();
        async move {
            let events = store.list_events(lost.id, 50).await?;
            Ok::<_, anyhow::Error>(
                events
                    .iter()
                    .any(|e| e.kind == scaleset_store::EventKind::Retry)
                    .then_some(()),
            )
        }
    })
    .await?;
    let asked = Instant::now();
    tokio::time::timeout(Duration::from_secs(20), demo.stop())
        .await
        .map_err(|_| anyhow::anyhow!("the demo did not stop within 20 s"))??;
    assert!(
        asked.elapsed() < Duration::from_secs(20),
        "stopped in {:?}",
        asked.elapsed()
    );
    Ok(())
}
