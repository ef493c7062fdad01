//! The process exit code, decided in one place so that scripts can rely on it. The table is the
//! one every scaleset binary follows (`scaleset_app::Exit` for the server and the worker;
//! docs/cli.md, "Exit codes"):
//!
//! | code | meaning |
//! | --- | --- |
//! | 0 | done; for `plan` and `decommission`: nothing to change |
//! | 1 | an error: bad usage, configuration, the server unreachable, refused the token, answered 4xx/5xx |
//! | 2 | refused or changes pending: a scale set was refused adoption, `plan` or a `decommission` plan has work in it, `apply` or `decommission --apply` was refused (the plan is stale or holds refusals) |
//! | 3 | partially done: `decommission --apply` left busy runners |

use std::process::ExitCode;

/// What a command that ran to its end found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// Done, nothing to report to a script.
    Done,
    /// The request was answered, and the answer is a refusal (adoption refused, apply refused).
    Refused,
    /// `plan` (or a decommission plan) found changes to make.
    Changes,
    /// Partially done: busy runners were left.
    Partial,
}

/// The exit code of a command's result. An error is printed by the caller first.
pub(crate) fn code(result: &anyhow::Result<Outcome>) -> ExitCode {
    match result {
        Ok(Outcome::Done) => ExitCode::SUCCESS,
        Ok(Outcome::Refused | Outcome::Changes) => ExitCode::from(2),
        Ok(Outcome::Partial) => ExitCode::from(3),
        Err(_) => ExitCode::FAILURE,
    }
}

/// The exit code of a command line clap could not parse (1, not clap's own 2, which means
/// "refused" here), or of `--help`/`--version` (0).
pub(crate) fn usage(error: &clap::Error) -> ExitCode {
    if error.use_stderr() {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
