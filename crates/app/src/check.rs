//! `--check` for every binary ([`check`]: files, runner downloads, credentials, printed the
//! same way), the configuration loaded once ([`load`]), and `--check`'s one look at GitHub, shared by `scaleset-worker` and `scaleset-server`: whether
//! each declared scale set's OS and architecture has a runner download in its entity's list
//! (`scaleset_fleet::check_runner_tools`), through the same proxy settings the process uses.

use std::path::{Path, PathBuf};

use scaleset_config::Config;
pub use scaleset_fleet::ToolCheck;

use crate::env::{Env, Vars};
use crate::exit::Exit;
use crate::{errln, outln};

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

/// Loads the configuration `path` names, for `program`; an error is printed, and the exit says
/// what it was ([`Exit::Refused`]: nothing was opened).
///
/// # Errors
///
/// The [`Exit`] to leave with: no `--config`, or an invalid configuration.
pub fn load(program: &str, path: Option<&Path>, env: &Env) -> Result<(PathBuf, Config), Exit> {
    let Some(path) = path else {
        errln!("{program}: --config FILE is required (docs/configuration.md)");
        return Err(Exit::Refused);
    };
    match Config::load(path, &env.vars) {
        Ok(config) => Ok((path.to_owned(), config)),
        Err(e) => {
            errln!("{program}: {e}");
            Err(Exit::Refused)
        }
    }
}

/// `--check`, the same in every binary: every file and directory the configuration names (as
/// the process will use them), then "configuration ok", what each declared scale set's runners
/// would be installed from (warnings: GitHub's list may change, and the worker retries), and
/// which App each declared key is for.
pub fn check(program: &str, path: &Path, config: &Config, env: &Env) -> Exit {
    if let Err(e) = config.check_files(&path.display().to_string()) {
        errln!("{program}: {e}");
        return Exit::Refused;
    }
    outln!("configuration ok");
    match check_runner_tools(config, env) {
        Ok(found) => {
            for check in found {
                if check.warning {
                    errln!("{program}: warning: {}", check.text);
                } else {
                    outln!("{}", check.text);
                }
            }
        }
        Err(e) => errln!("{program}: warning: the runner downloads were not checked: {e}"),
    }
    for credentials in &config.fleet.credentials {
        outln!("{}", scaleset_config::describe_credentials(credentials));
    }
    Exit::Done
}
