//! What can stop an [`crate::App`] from being built or from running, each naming the thing,
//! the cause and what to do.

/// Why [`crate::App::build`] failed.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// Another worker serves the SQLite file.
    #[error(
        "another worker already serves the SQLite database {database} (it holds {lock}); SQLite \
         serves one worker on one machine (scaleset-worker, or scaleset-server --with-worker): \
         stop the other one, run scaleset-server without --with-worker, or move to PostgreSQL \
         to run several workers (docs/operations.md)"
    )]
    Locked {
        /// The database file.
        database: String,
        /// The lock file.
        lock: String,
    },
    /// A decommission without a database needs the controller id from the configuration.
    #[error(
        "no database to read the controller id from, and no controller_id in the \
         configuration: without it nothing is provably ours (pool keys and the owner label are \
         derived from it); set controller_id to the id this controller ran with (its scale \
         sets' owner label scaleset-owner-<32 hex digits> shows it)"
    )]
    NoControllerId,
    /// The lock beside the SQLite file could not be taken for another reason.
    #[error("cannot lock the SQLite database")]
    Lock(#[source] scaleset_store::WriterLockError),
    /// The store could not be opened (connection, migrations, controller id).
    #[error("cannot open the database {database}")]
    Open {
        /// The database URL, its password redacted.
        database: String,
        /// The underlying error.
        #[source]
        source: scaleset_store::Error,
    },
    /// The declared fleet could not be applied to the store.
    #[error("applying the declared fleet to the database")]
    Fleet(#[source] scaleset_fleet::Error),
}

/// How the control loop ended when nobody asked it to, or failed while stopping.
#[derive(Debug, thiserror::Error)]
pub enum LoopError {
    /// The loop returned an error.
    #[error("the control loop failed")]
    Failed(#[source] scaleset_control::Error),
    /// The loop ended without being asked to.
    #[error("the control loop ended without being asked to")]
    Ended,
    /// The loop's task panicked (a bug: please report it).
    #[error("the control loop panicked: {0}")]
    Panicked(String),
}
