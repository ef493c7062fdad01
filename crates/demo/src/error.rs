//! What can stop the demo from starting or running, each naming the thing and what to do.

use std::path::{Path, PathBuf};

/// An error of the demo.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A file or directory of the data directory could not be used.
    #[error("cannot {action} {path}")]
    File {
        /// What was being done (`create`, `read`, `write`, `delete`, …).
        action: &'static str,
        /// The file.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// A file of the data directory holds something unusable.
    #[error("{path} is unusable: {reason}")]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// What is wrong and what to do.
        reason: String,
    },
    /// Another demo runs on the same data directory.
    #[error(
        "another demo already runs on this data directory (it holds {path}); stop it, or pass \
         another --data-dir"
    )]
    Busy {
        /// The lock file.
        path: PathBuf,
    },
    /// A port could not be bound.
    #[error("cannot listen on {addr} (pass another address, or 127.0.0.1:0 for any free port)")]
    Listen {
        /// The address.
        addr: std::net::SocketAddr,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// The simulated GitHub failed.
    #[error("the simulated GitHub failed")]
    Simulator(#[from] scaleset_sim::Error),
    /// The database failed.
    #[error("the demo database failed while {during}")]
    Store {
        /// What was being done.
        during: &'static str,
        /// The underlying error.
        #[source]
        source: scaleset_store::Error,
    },
    /// A spec or endpoint of the demo breaks the rules every door applies (a bug in the demo).
    #[error("the demo's {name:?} is invalid: {problems}")]
    Spec {
        /// The scale set or credentials.
        name: String,
        /// Every problem, as the spec parser names them.
        problems: String,
    },
    /// The demo's configuration is invalid (a bug in the demo).
    #[error("the demo's configuration is invalid")]
    Config(#[from] scaleset_config::ConfigError),
    /// The process could not be built (the database, the lock, the fleet).
    #[error("cannot start the demo's worker")]
    App(#[from] scaleset_app::BuildError),
    /// The control loop failed.
    #[error("the control loop failed")]
    Control(#[from] scaleset_control::Error),
    /// The control loop ended without being asked to.
    #[error("the control loop ended without being asked to")]
    Ended,
    /// A task of the demo panicked (a bug: please report it).
    #[error("a task of the demo panicked: {0}")]
    Panicked(String),
}

impl Error {
    pub(crate) fn file(action: &'static str, path: &Path, source: std::io::Error) -> Self {
        Self::File {
            action,
            path: path.to_owned(),
            source,
        }
    }
}
