//! `/api/v1/entities`: the repositories, organizations and enterprises scale sets belong to.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// What kind of GitHub entity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum EntityKind {
    /// A repository; its name is `owner/repo`.
    Repository,
    /// An organization; its name is the login.
    Organization,
    /// An enterprise; its name is the slug.
    Enterprise,
}

impl EntityKind {
    /// The wire text.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Repository => "repository",
            Self::Organization => "organization",
            Self::Enterprise => "enterprise",
        }
    }
}

/// `POST /api/v1/entities`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateEntity {
    /// The kind.
    pub kind: EntityKind,
    /// `owner/repo` for a repository, the login of an organization, the slug of an
    /// enterprise: each part 1–100 of `A-Za-z0-9._-`, starting with a letter or digit.
    #[schema(
        min_length = 1,
        max_length = 201,
        pattern = "^[A-Za-z0-9][A-Za-z0-9._-]{0,99}(?:/[A-Za-z0-9][A-Za-z0-9._-]{0,99})?$"
    )]
    pub name: String,
    /// The name of the credentials used to reach it.
    #[schema(
        min_length = 1,
        max_length = 64,
        pattern = "^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"
    )]
    pub credentials: String,
}

/// A stored entity.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Entity {
    /// The id.
    pub id: uuid::Uuid,
    /// The kind.
    pub kind: EntityKind,
    /// The name (`owner/repo`, the organization, or the enterprise slug).
    pub name: String,
    /// The credentials' id.
    pub credentials_id: uuid::Uuid,
    /// The credentials' name.
    pub credentials: String,
    /// When it was created (RFC 3339).
    pub created_at: String,
}
