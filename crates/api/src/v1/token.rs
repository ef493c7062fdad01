//! `/api/v1/tokens`: the API tokens (stored as SHA-256 hashes; a token's text is shown once,
//! when `scaleset-server token create` makes it on the server's host).

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
    /// What it may do.
    pub scope: TokenScope,
}

/// What an API token may do; each scope includes the ones before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum TokenScope {
    /// The status page and every GET route.
    Read,
    /// Also the scale-set actions: drain, enable or disable, retry, edit, delete, and
    /// removing an instance.
    Operate,
    /// Everything: credentials, entities, tokens, creating scale sets, fleet plan and apply,
    /// decommission, workers.
    Admin,
}
