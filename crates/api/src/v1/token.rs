//! `/api/v1/tokens`: the API tokens (stored as SHA-256 hashes; a token's text is shown once,
//! when it is created).

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// An API token's record (never its text).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Token {
    /// The id.
    pub id: uuid::Uuid,
    /// Who or what uses it.
    pub name: String,
    /// When it was created (RFC 3339).
    pub created_at: String,
}

/// `POST /api/v1/tokens`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateToken {
    /// A unique name saying who or what will use it (1–64 of `A-Za-z0-9._-`).
    pub name: String,
}

/// The answer to `POST /api/v1/tokens`: the record and the token itself, shown this once.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct CreatedToken {
    /// The record.
    #[serde(flatten)]
    pub token: Token,
    /// The token (`sst_…`): keep it now, it cannot be shown again.
    pub secret: String,
}
