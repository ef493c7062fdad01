//! Test helpers: fast demo options on a temporary data directory and what the store says about
//! the fleet.

use std::path::Path;
use std::time::Duration;

use anyhow::Result;
use scaleset_demo::{DemoOptions, JobStream};
use scaleset_store::{ScaleSet, Store};

/// Options for a test: any free port, short jobs arriving quickly, short long-polls.
pub(crate) fn options(dir: &Path) -> DemoOptions {
    let mut options = DemoOptions::new(dir.to_owned());
    options.github_listen = "127.0.0.1:0".parse().expect("an address");
    options.jobs = Some(JobStream {
        every: Duration::from_millis(300),
        run_seconds: 2..=4,
        max_unfinished: 3,
    });
    options.github.long_poll_hold = Duration::from_secs(2);
    options.github.tick_interval = Duration::from_millis(50);
    options.settings.watch_interval = Duration::from_millis(200);
    options.settings.backoff_base = Duration::from_millis(50);
    options.settings.backoff_max = Duration::from_secs(1);
    options
}

/// The store's scale sets by name.
pub(crate) async fn scale_sets(store: &dyn Store) -> Result<Vec<ScaleSet>> {
    let mut sets = store.list_scale_sets(None).await?;
    sets.sort_by(|a, b| a.spec.name().cmp(b.spec.name()));
    Ok(sets)
}
