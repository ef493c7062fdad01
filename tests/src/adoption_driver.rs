//! The adoption tests' retry loop around the one adoption driver,
//! [`scaleset_control::adoption::run_once`] (the controller's ensure step runs the same code,
//! adding store records, checkpoints and metrics through its hooks; here there are none).
//!
//! It deliberately does not persist anything, log, or wait: [`ensure`] runs attempt after
//! attempt back to back. The backoff hint stays in each run's outcome; the simulator's state,
//! not time, is what changes between attempts here.

use anyhow::{Result, bail};
use scaleset_adopt::{Input, Outcome};
use scaleset_control::adoption::NoHooks;
pub use scaleset_control::adoption::Run;
use scaleset_github::Client;

/// Runs one attempt through the shared driver, with no hooks.
///
/// # Errors
///
/// Whatever [`scaleset_control::adoption::run_once`] reports: a client failure that is not an
/// answer from GitHub, or a machine misuse.
pub async fn run_once(client: &Client, input: Input) -> Result<Run> {
    Ok(scaleset_control::adoption::run_once(client, input, &NoHooks).await?)
}

/// Runs attempts until one does not end in [`Outcome::Retry`], bumping `attempt` as the
/// machine's contract says (without waiting the hint). Returns every run, the last one deciding.
///
/// # Errors
///
/// What [`run_once`] reports, or a machine that keeps retrying beyond its `max_attempts`.
pub async fn ensure(client: &Client, mut input: Input) -> Result<Vec<Run>> {
    let mut runs = Vec::new();
    loop {
        let run = run_once(client, input.clone()).await?;
        let retry = matches!(run.outcome, Outcome::Retry { .. });
        runs.push(run);
        if !retry {
            return Ok(runs);
        }
        if runs.len() > usize::try_from(input.retry.max_attempts).unwrap_or(usize::MAX) {
            bail!("the machine kept retrying beyond max_attempts");
        }
        input.retry.attempt += 1;
    }
}
