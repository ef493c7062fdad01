//! The crate's error type: how a provider call fails, and the finer reasons an
//! executable's output is rejected.

use std::path::PathBuf;
use std::time::Duration;

use crate::command::Command;

/// Why a provider call failed.
///
/// The GARM exit codes are mapped where GARM gives them a meaning, and nowhere
/// else: 30 is [`Error::NotFound`] for `GetInstance` (and success for
/// `DeleteInstance`), 31 is [`Error::Duplicate`] for `CreateInstance`. Any
/// other non-zero exit, and 30 or 31 from any other command, is
/// [`Error::Failed`] with the exit code and its reason (providers exit 30 for
/// other things than a missing instance: LXD does when a create's image or
/// profile is missing).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The provider says the instance does not exist (GARM exit code 30 from
    /// `GetInstance`).
    #[error(
        "{command}: the provider reports the instance does not exist (exit code 30); stderr ends \
         with: {stderr_tail}"
    )]
    NotFound {
        /// The command that was run.
        command: Command,
        /// The last bytes the executable wrote to stderr, redacted as in
        /// [`Error::Failed`] (empty for the fake provider).
        stderr_tail: String,
    },
    /// The provider says the instance already exists (GARM exit code 31 from
    /// `CreateInstance`).
    #[error(
        "{command}: the provider reports the instance already exists (exit code 31); stderr ends \
         with: {stderr_tail}"
    )]
    Duplicate {
        /// The command that was run.
        command: Command,
        /// The last bytes the executable wrote to stderr, redacted as in
        /// [`Error::Failed`] (empty for the fake provider).
        stderr_tail: String,
    },
    /// The executable did not finish in time; its whole process group was killed.
    #[error(
        "{command}: the provider did not finish within {after:?}; its process group was killed \
         ({})",
        timeout_advice(*command)
    )]
    Timeout {
        /// The command that was run.
        command: Command,
        /// The configured timeout that elapsed.
        after: Duration,
    },
    /// The executable exited unsuccessfully (or was killed by a signal).
    #[error(
        "{command}: the provider failed ({}){}; stderr ends with: {stderr_tail}",
        exit_code.map_or_else(|| "killed by a signal".to_owned(), |code| format!("exit code {code}")),
        provider_fault.as_deref().map(|fault| format!(", reporting: {fault}")).unwrap_or_default()
    )]
    Failed {
        /// The command that was run.
        command: Command,
        /// The exit code, or `None` when a signal ended the process.
        exit_code: Option<i32>,
        /// The last bytes the executable wrote to stderr (bounded, lossily
        /// UTF-8, with the call's tokens and the passed-through values of
        /// eight or more characters redacted).
        stderr_tail: String,
        /// The `provider_fault` of an instance JSON the executable printed
        /// while failing, as GARM asks providers to do, if any (redacted as
        /// `stderr_tail` is).
        provider_fault: Option<String>,
    },
    /// The executable succeeded but printed something we cannot accept.
    #[error("{command}: the provider printed unusable output: {problem}")]
    BadOutput {
        /// The command that was run.
        command: Command,
        /// What is wrong with the output.
        problem: OutputProblem,
    },
    /// The instance name is not one safe path component: refused before any file is written
    /// or executable run (names become file names and command arguments).
    #[error(
        "{command}: refused the instance name {name:?}: {reason} (runner names are \
         `<runner prefix>-<8 characters>`; give the scale set a runner prefix that follows the \
         same rule)"
    )]
    InvalidName {
        /// The command that was refused.
        command: Command,
        /// The name as given.
        name: String,
        /// What is wrong with it (the one name rule's refusal).
        #[source]
        reason: scaleset_domain::NameError,
    },
    /// The executable could not be started (missing, not executable, ...).
    #[error(
        "cannot run provider executable {}: {cause} (check `executable` in the provider \
         configuration: it must exist and be executable)",
        path.display()
    )]
    Spawn {
        /// The executable's path.
        path: PathBuf,
        /// The operating-system error.
        #[source]
        cause: std::io::Error,
    },
    /// Talking to the running executable over its pipes failed.
    #[error("{command}: reading the provider's output failed")]
    Io {
        /// The command that was run.
        command: Command,
        /// The operating-system error.
        #[source]
        source: std::io::Error,
    },
}

/// Which setting bounds `command`, so a timeout message says what to raise.
fn timeout_advice(command: Command) -> &'static str {
    match command {
        Command::CreateInstance => {
            "if the cloud is slow, raise the scale set's bootstrap timeout or `create_timeout` in \
             the provider configuration"
        }
        _ => "if the cloud is slow, raise `timeout` in the provider configuration",
    }
}

impl Error {
    /// The provider reported that the instance does not exist.
    pub fn is_not_found(&self) -> bool {
        matches!(self, Self::NotFound { .. })
    }

    /// The provider reported that the instance already exists.
    pub fn is_duplicate(&self) -> bool {
        matches!(self, Self::Duplicate { .. })
    }

    /// The instance name was refused as unsafe ([`crate::check_instance_name`]).
    pub fn is_invalid_name(&self) -> bool {
        matches!(self, Self::InvalidName { .. })
    }

    /// The call timed out.
    pub fn is_timeout(&self) -> bool {
        matches!(self, Self::Timeout { .. })
    }

    /// Whether trying the same call again later may succeed.
    ///
    /// Timeouts, failures and pipe errors may be transient; a missing
    /// executable, bad output, not-found and duplicate will not change by
    /// retrying.
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            Self::Timeout { .. } | Self::Failed { .. } | Self::Io { .. }
        )
    }
}

/// What is wrong with an executable's stdout.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OutputProblem {
    /// The output is not the JSON we expected.
    #[error("not valid JSON for {expected}: {detail}")]
    NotJson {
        /// What we expected ("an instance", "a list of instances").
        expected: &'static str,
        /// The parser's message.
        detail: String,
    },
    /// An instance has no `provider_id`.
    #[error("an instance has no `provider_id`")]
    MissingProviderId,
    /// An instance has no `name`.
    #[error("an instance has no `name`")]
    MissingName,
    /// An instance has a status GARM does not define.
    #[error("an instance has the unknown status {status:?}")]
    UnknownStatus {
        /// The status as printed.
        status: String,
    },
    /// The output exceeded the stdout bound.
    #[error("more than {limit} bytes on stdout")]
    TooLarge {
        /// The bound in bytes.
        limit: usize,
    },
    /// `GetVersion` printed nothing.
    #[error("an empty version")]
    EmptyVersion,
}
