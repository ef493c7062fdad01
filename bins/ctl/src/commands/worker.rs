//! `scalesetctl worker …`: drain a worker before stopping it (issue 33 item 4).

use anyhow::Result;
use scaleset_api::v1::DrainWorkerResult;

use super::Ctx;
use crate::cli::WorkerCommand;
use crate::exit::Outcome;

/// Runs a `worker` subcommand.
pub(crate) async fn run(ctx: &Ctx<'_>, command: WorkerCommand) -> Result<Outcome> {
    match command {
        WorkerCommand::Drain { name } => {
            let result: DrainWorkerResult = ctx.api.post(&["workers", &name, "drain"], &()).await?;
            let line = if result.drained {
                format!(
                    "worker {name} is drained: it holds no scale set; stop it now (the other \
                     workers serve its scale sets)"
                )
            } else {
                format!(
                    "draining worker {name}: it still holds {} scale set(s), handed to the other \
                     workers at its next watch interval; run this again to see what is left, \
                     then stop it",
                    result.leases
                )
            };
            ctx.done(&result, &line);
        }
    }
    Ok(Outcome::Done)
}
