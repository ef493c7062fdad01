//! The entity aggregate: a repository, organization or enterprise that scale sets belong to,
//! bound to the credentials used to reach it.

use std::fmt;

use async_trait::async_trait;

use crate::clock::Timestamp;
use crate::error::Result;
use crate::id::{CredentialsId, EntityId};

/// What kind of GitHub entity, with its name.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum EntityKind {
    /// A repository `owner/name`.
    Repository {
        /// The owner (user or organization).
        owner: String,
        /// The repository name.
        name: String,
    },
    /// An organization.
    Organization {
        /// The organization login.
        name: String,
    },
    /// An enterprise.
    Enterprise {
        /// The enterprise slug.
        slug: String,
    },
}

impl EntityKind {
    /// The kind's name, as stored: `repository`, `organization` or `enterprise`.
    pub fn kind_str(&self) -> &'static str {
        match self {
            Self::Repository { .. } => "repository",
            Self::Organization { .. } => "organization",
            Self::Enterprise { .. } => "enterprise",
        }
    }

    /// The stored path: `owner/name`, the organization, or the enterprise slug.
    pub fn path(&self) -> String {
        match self {
            Self::Repository { owner, name } => format!("{owner}/{name}"),
            Self::Organization { name } => name.clone(),
            Self::Enterprise { slug } => slug.clone(),
        }
    }

    /// Rebuilds a kind from its stored form; `None` if the text is not one this version knows.
    pub(crate) fn from_stored(kind: &str, path: &str) -> Option<Self> {
        match kind {
            "repository" => {
                let (owner, name) = path.split_once('/')?;
                Some(Self::Repository {
                    owner: owner.to_owned(),
                    name: name.to_owned(),
                })
            }
            "organization" => Some(Self::Organization {
                name: path.to_owned(),
            }),
            "enterprise" => Some(Self::Enterprise {
                slug: path.to_owned(),
            }),
            _ => None,
        }
    }
}

impl fmt::Display for EntityKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.kind_str(), self.path())
    }
}

/// An entity to create.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewEntity {
    /// The kind and name.
    pub kind: EntityKind,
    /// The credentials used to reach it.
    pub credentials_id: CredentialsId,
}

/// A stored entity.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entity {
    /// The id.
    pub id: EntityId,
    /// The kind and name.
    pub kind: EntityKind,
    /// The credentials used to reach it.
    pub credentials_id: CredentialsId,
    /// When it was created.
    pub created_at: Timestamp,
}

/// Repositories, organizations and enterprises.
#[async_trait]
pub trait EntityStore: Send + Sync {
    /// Stores an entity. The same kind and name under the same credentials twice is
    /// [`crate::Error::Conflict`]; unknown credentials too.
    async fn create_entity(&self, new: NewEntity) -> Result<Entity>;

    /// Reads an entity.
    async fn get_entity(&self, id: EntityId) -> Result<Entity>;

    /// All entities.
    async fn list_entities(&self) -> Result<Vec<Entity>>;

    /// Deletes an entity; still referenced by a scale set is [`crate::Error::Conflict`].
    async fn delete_entity(&self, id: EntityId) -> Result<()>;
}
