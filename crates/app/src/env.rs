//! [`Env`]: what a process takes from where it runs rather than from its configuration file,
//! gathered in one value so that tests (and the demo) can hand in their own.

use std::collections::BTreeMap;
use std::sync::Arc;

use scaleset_provider::Boot;
use scaleset_store::{Clock, SystemClock};

/// What comes from the process's environment: its variables (proxy settings, the test crash
/// point), the clock, and how the fake provider's machines boot.
#[derive(Clone)]
pub struct Env {
    /// The environment variables (UTF-8 names and values only). The configuration's
    /// `SCALESET_…` overrides are applied by `Config::load` before [`crate::App::build`];
    /// here they are read for the GitHub proxy (`HTTPS_PROXY`, `HTTP_PROXY`, `NO_PROXY`) and
    /// the debug builds' crash point (`SCALESET_TEST_CRASH_AT`).
    pub vars: BTreeMap<String, String>,
    /// The clock `/readyz` compares lease expiry with.
    pub clock: Arc<dyn Clock>,
    /// How the machines of the fake provider boot their runners when `[fake] state_dir` is set.
    /// `None`: through the simulator's control API at `[fake] simulator_url` when that is set,
    /// else they do not boot (the bootstrap deadline removes them). The demo hands in its
    /// in-process simulator here.
    pub fake_boot: Option<Arc<dyn Boot>>,
}

impl std::fmt::Debug for Env {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Variable values may be secrets (tokens named by `token_env`): names only.
        f.debug_struct("Env")
            .field("vars", &self.vars.keys().collect::<Vec<_>>())
            .field("clock", &self.clock)
            .field("fake_boot", &self.fake_boot.is_some())
            .finish()
    }
}

impl Env {
    /// The environment `vars`, the system clock, no boot hook.
    pub fn new(vars: BTreeMap<String, String>) -> Self {
        Self {
            vars,
            clock: Arc::new(SystemClock),
            fake_boot: None,
        }
    }

    /// This process's environment (variables whose name and value are UTF-8).
    pub fn from_process() -> Self {
        Self::new(
            std::env::vars_os()
                .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
                .collect(),
        )
    }

    /// With `boot` for the fake provider's machines.
    #[must_use]
    pub fn with_fake_boot(mut self, boot: Arc<dyn Boot>) -> Self {
        self.fake_boot = Some(boot);
        self
    }
}

/// The variables as the GitHub client's proxy settings read them (the library never reads the
/// process environment itself).
pub(crate) struct Vars<'a>(pub(crate) &'a BTreeMap<String, String>);

impl scaleset_github::Environment for Vars<'_> {
    fn var(&self, name: &str) -> Option<String> {
        self.0.get(name).cloned()
    }
}
