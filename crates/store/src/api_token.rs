//! The API-token aggregate: bearer tokens for the REST API, stored only as SHA-256 hashes.
//!
//! Tokens are 32 random bytes, so a fast hash is enough: there is nothing to brute-force.

use std::fmt;

use async_trait::async_trait;
use base64::Engine as _;

use crate::clock::Timestamp;
use crate::error::Result;

crate::id_type! {
    /// The id of an API token row.
    ApiTokenId
}

/// The prefix of every token, so scanners can recognise a leaked one.
pub const API_TOKEN_PREFIX: &str = "sst_";

/// A token as handed to its user once, at creation. `Debug` redacts it.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiTokenSecret(String);

impl ApiTokenSecret {
    /// Wraps a presented token (e.g. from an `Authorization` header).
    pub fn new(token: impl Into<String>) -> Self {
        Self(token.into())
    }

    /// The token text. Show it to the user once; never log it.
    pub fn expose(&self) -> &str {
        &self.0
    }

    pub(crate) fn generate() -> Result<Self> {
        use ring::rand::SecureRandom as _;
        let mut bytes = [0u8; 32];
        ring::rand::SystemRandom::new()
            .fill(&mut bytes)
            .map_err(|_| crate::Error::Crypto {
                operation: "encrypt",
                what: "a new API token".to_owned(),
                reason: "the system random number generator failed".to_owned(),
            })?;
        let body = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes);
        Ok(Self(format!("{API_TOKEN_PREFIX}{body}")))
    }

    /// The SHA-256 of the token text: what the database holds.
    pub(crate) fn hash(&self) -> Vec<u8> {
        ring::digest::digest(&ring::digest::SHA256, self.0.as_bytes())
            .as_ref()
            .to_vec()
    }
}

impl fmt::Debug for ApiTokenSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiTokenSecret([redacted])")
    }
}

/// A stored API token (without the token itself, which is not stored).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiToken {
    /// The id.
    pub id: ApiTokenId,
    /// A unique name saying who or what uses it.
    pub name: String,
    /// When it was created.
    pub created_at: Timestamp,
}

/// API tokens.
#[async_trait]
pub trait ApiTokenStore: Send + Sync {
    /// Creates a token; returns the record and the token text, which is shown once and
    /// cannot be recovered. A duplicate name is [`crate::Error::Conflict`].
    async fn create_api_token(&self, name: &str) -> Result<(ApiToken, ApiTokenSecret)>;

    /// The token's record if `presented` is a valid token (looked up by its hash).
    async fn authenticate_api_token(&self, presented: &ApiTokenSecret) -> Result<Option<ApiToken>>;

    /// All tokens, by name.
    async fn list_api_tokens(&self) -> Result<Vec<ApiToken>>;

    /// Revokes a token.
    async fn revoke_api_token(&self, id: ApiTokenId) -> Result<()>;
}
