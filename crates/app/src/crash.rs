//! Crash points for the process tests, compiled into debug builds only: with
//! `SCALESET_TEST_CRASH_AT=<checkpoint>` (a `scaleset_control::Checkpoint` name, e.g.
//! `InstanceCreated`), the control loop aborts the process the first time it reaches that
//! point, as a kill -9 there would: no cleanup, no session deleted, no lease released. Release
//! builds ignore the variable.

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use scaleset_control::{Checkpoint, Checkpoints};

/// The variable naming the crash point.
pub(crate) const VARIABLE: &str = "SCALESET_TEST_CRASH_AT";

#[derive(Debug)]
struct AbortAt(String);

#[async_trait]
impl Checkpoints for AbortAt {
    async fn reached(&self, point: Checkpoint, scale_set: &str) {
        if format!("{point:?}") == self.0 {
            crate::console::err(&format!(
                "{VARIABLE}: aborting at {point:?} of scale set {scale_set:?}\n"
            ));
            std::process::abort();
        }
    }
}

/// The crash hook the environment asks for (debug builds only).
pub(crate) fn from_vars(vars: &BTreeMap<String, String>) -> Option<Arc<dyn Checkpoints>> {
    if !cfg!(debug_assertions) {
        return None;
    }
    let point = vars.get(VARIABLE)?;
    Some(Arc::new(AbortAt(point.trim().to_owned())))
}
