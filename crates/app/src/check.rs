//! `--check`'s one look at GitHub, shared by `scaleset-worker` and `scaleset-server`: whether
//! each declared scale set's OS and architecture has a runner download in its entity's list
//! (`scaleset_fleet::check_runner_tools`), through the same proxy settings the process uses.

use scaleset_config::Config;
pub use scaleset_fleet::ToolCheck;

use crate::env::{Env, Vars};

/// For every declared scale set, the download a new runner gets or a warning; one GitHub read
/// per entity. Runs on a runtime of its own (the binaries check before they start one).
///
/// # Errors
///
/// When the async runtime cannot be started.
pub fn check_runner_tools(config: &Config, env: &Env) -> std::io::Result<Vec<ToolCheck>> {
    if config.fleet.scale_sets.is_empty() {
        return Ok(Vec::new());
    }
    let proxy = scaleset_github::ProxyConfig::from_env(&Vars(&env.vars));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    Ok(runtime.block_on(scaleset_fleet::check_runner_tools(
        &config.fleet,
        &move |c| c.with_proxy(proxy.clone()),
    )))
}
