//! The exit codes of `scaleset-server` and `scaleset-worker`, chosen here only, from the one
//! table every scaleset binary follows (`scalesetctl`'s `exit` module chooses from the same
//! table; docs/cli.md, "Exit codes"):
//!
//! | code | meaning |
//! | --- | --- |
//! | 0 | done; nothing to change (a plan with no work in it) |
//! | 1 | an error: the command line is not understood, a read, a start or a step failed |
//! | 2 | changes pending or refused: a plan with work in it, a stale plan refused, an invalid configuration refused (nothing opened: systemd's `RestartPreventExitStatus=2` does not restart it) |
//! | 3 | partially done: applied, but busy runners were left; or a stop that took longer than `worker.shutdown_timeout` and was abandoned |

use std::process::ExitCode;

/// How a run of a binary ended, for its exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// Done; nothing to change. Exit 0.
    Done,
    /// An error: a bad command line, a read, a start or a step that failed. Exit 1.
    Failed,
    /// Changes pending (a plan with work in it) or refused (a stale plan, an invalid
    /// configuration): nothing was done. Exit 2.
    Refused,
    /// Partially done: busy runners were left, or a stop took longer than
    /// `worker.shutdown_timeout` and was abandoned (sessions may be left until the leases
    /// expire). Exit 3.
    Partial,
}

impl Exit {
    /// The process exit code.
    pub const fn code(self) -> u8 {
        match self {
            Self::Done => 0,
            Self::Failed => 1,
            Self::Refused => 2,
            Self::Partial => 3,
        }
    }

    /// The exit of a command line clap could not parse ([`Exit::Failed`]: clap's own 2 means
    /// "refused" in this table), or of `--help` and `--version` ([`Exit::Done`]), after
    /// printing clap's text.
    pub fn usage(error: &clap::Error) -> Self {
        let _ = error.print();
        if error.use_stderr() {
            Self::Failed
        } else {
            Self::Done
        }
    }
}

/// A run with nothing more to say than that it succeeded.
impl From<()> for Exit {
    fn from((): ()) -> Self {
        Self::Done
    }
}

/// A served process's exit after SIGTERM or SIGINT: a stop abandoned after
/// `worker.shutdown_timeout` is not the clean stop exit 0 promises, and an operator (or a test)
/// tells the two apart by the code alone.
impl From<crate::Stopped> for Exit {
    fn from(stopped: crate::Stopped) -> Self {
        match stopped {
            crate::Stopped::Cleanly => Self::Done,
            crate::Stopped::TimedOut => Self::Partial,
        }
    }
}

impl From<Exit> for ExitCode {
    fn from(exit: Exit) -> Self {
        Self::from(exit.code())
    }
}
