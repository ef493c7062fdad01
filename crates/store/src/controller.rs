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
}
