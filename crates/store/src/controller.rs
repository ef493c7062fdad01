//! The controller aggregate: which controller this database belongs to (DESIGN §3).

use async_trait::async_trait;
use uuid::Uuid;

use crate::error::Result;

/// How the controller id in force was arrived at by [`ControllerStore::bind_controller`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ControllerBinding {
    /// The configured id matches the one in the database.
    Matched(Uuid),
    /// The database was empty and took the configured id.
    Adopted(Uuid),
    /// No id was configured and the database already had one: it is used. Tell the operator
    /// to pin it in the configuration.
    Stored(Uuid),
    /// No id was configured and the database was empty: a new id was generated and stored.
    /// Tell the operator to pin it in the configuration.
    Generated(Uuid),
}

impl ControllerBinding {
    /// The controller id in force.
    pub fn id(self) -> Uuid {
        match self {
            Self::Matched(id) | Self::Adopted(id) | Self::Stored(id) | Self::Generated(id) => id,
        }
    }

    /// Whether the id came from the configuration (as it should in production).
    pub fn is_configured(self) -> bool {
        matches!(self, Self::Matched(_) | Self::Adopted(_))
    }
}

/// The controller id recorded in the database.
#[async_trait]
pub trait ControllerStore: Send + Sync {
    /// The stored controller id, if any.
    async fn controller_id(&self) -> Result<Option<Uuid>>;

    /// Binds the database to a controller: a configured id that differs from the stored one
    /// is [`crate::Error::ControllerMismatch`] (the wrong database: refuse to start); an
    /// empty database takes the configured id, or a generated one if none is configured.
    /// Safe against concurrent first starts: exactly one id is ever stored.
    async fn bind_controller(&self, configured: Option<Uuid>) -> Result<ControllerBinding>;

    /// Whether the database takes writes: `Ok` at once (without touching the database) while
    /// no write has been refused; after a refused one ([`crate::Error::Unwritable`]: a full
    /// disk, a read-only database) a small write of its own, invisible to every reader (a row
    /// of a few KiB inserted and deleted in one transaction, so that a disk with no room for a
    /// new page refuses it as it refuses a create), until one succeeds. `/readyz` asks it.
    async fn check_writes(&self) -> Result<()>;
}
