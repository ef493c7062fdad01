//! The library's error type: what can go wrong when building, serving or steering a simulator.

/// An error of the simulator library.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The configuration has problems; every one is listed.
    #[error("invalid simulator configuration: {}", problems.join("; "))]
    InvalidConfig {
        /// Each problem, in words that say what to change.
        problems: Vec<String>,
    },
    /// A socket operation failed.
    #[error("could not {action}")]
    Io {
        /// What was being done (e.g. `read the listener's address`).
        action: &'static str,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// The saved state file could not be read or written.
    #[error("could not {action} the simulator state file {path}")]
    StateFile {
        /// `read`, `write` or `decode`.
        action: &'static str,
        /// The file.
        path: std::path::PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// A JIT configuration that this simulator did not issue (or that is corrupt).
    #[error("the JIT configuration was not issued by this simulator (or is corrupt)")]
    InvalidJitConfig,
    /// A control operation named something that does not exist.
    #[error("not found: {what}")]
    NotFound {
        /// What was looked for.
        what: String,
    },
    /// A control operation conflicts with the current state.
    #[error("conflict: {what}")]
    Conflict {
        /// What conflicts.
        what: String,
    },
    /// A control request was malformed.
    #[error("bad control request: {what}")]
    BadRequest {
        /// What is wrong with it.
        what: String,
    },
}

impl Error {
    /// The HTTP status the control API answers for this error.
    pub(crate) fn status(&self) -> u16 {
        match self {
            Self::NotFound { .. } => 404,
            Self::Conflict { .. } => 409,
            Self::InvalidJitConfig | Self::BadRequest { .. } | Self::InvalidConfig { .. } => 400,
            Self::Io { .. } | Self::StateFile { .. } => 500,
        }
    }

    /// The error of a control operation the simulated world refused, with the message GitHub
    /// (or the control API) gives for the refusal.
    pub(crate) fn from_state(error: crate::state::StateError) -> Self {
        use crate::exception::ApiError;
        if let crate::state::StateError::RunnerNotRegistered(_) = error {
            return Self::InvalidJitConfig;
        }
        match ApiError::from(error) {
            ApiError::Control {
                status: 404,
                message,
            } => Self::NotFound { what: message },
            ApiError::Control {
                status: 409,
                message,
            } => Self::Conflict { what: message },
            ApiError::Control { message, .. } => Self::BadRequest { what: message },
            ApiError::Exception {
                status: 404,
                message,
                ..
            } => Self::NotFound { what: message },
            ApiError::Exception { message, .. } => Self::Conflict { what: message },
            other => Self::BadRequest {
                what: format!("{other:?}"),
            },
        }
    }
}
