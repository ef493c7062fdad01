//! The API-token aggregate: bearer tokens for the REST API, stored only as SHA-256 hashes.
//!
//! Tokens are 32 random bytes, so a fast hash is enough: there is nothing to brute-force.

use async_trait::async_trait;
use base64::Engine as _;
use secrecy::{ExposeSecret, SecretString};

use crate::clock::Timestamp;
use crate::error::Result;
use crate::id::ApiTokenId;

/// The prefix of every token, so scanners can recognise a leaked one.
pub const API_TOKEN_PREFIX: &str = "sst_";

/// A new token for a user to be handed once: `sst_` and 32 random bytes, base64url.
pub(crate) fn generate_token() -> Result<SecretString> {
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
    Ok(SecretString::from(format!("{API_TOKEN_PREFIX}{body}")))
}

/// The SHA-256 of a token's text: what the database holds.
pub(crate) fn token_hash(token: &SecretString) -> Vec<u8> {
    ring::digest::digest(&ring::digest::SHA256, token.expose_secret().as_bytes())
        .as_ref()
        .to_vec()
}

/// What a token may do. Each scope includes the ones before it (`Read < Operate < Admin`), so
/// "may this token do X" is `token.scope >= needed`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ApiScope {
    /// Read only: the status page and the API's GET routes (a dashboard, a teammate, a CI job).
    Read,
    /// Also the scale-set actions: drain, enable or disable, retry, edit, delete, and
    /// instance removal.
    Operate,
    /// Everything: credentials, entities, tokens, creating scale sets, fleet plan/apply,
    /// decommission, workers. Tokens made before scopes existed are `admin`.
    Admin,
}

impl ApiScope {
    /// Every scope, least first.
    pub const ALL: [Self; 3] = [Self::Read, Self::Operate, Self::Admin];

    /// The stored (and command-line, and wire) name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Read => "read",
            Self::Operate => "operate",
            Self::Admin => "admin",
        }
    }

    /// The scope named `text` (`read`, `operate`, `admin`), `None` for anything else.
    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.as_str() == text)
    }
}

impl std::fmt::Display for ApiScope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
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
    /// What it may do.
    pub scope: ApiScope,
}

/// API tokens.
#[async_trait]
pub trait ApiTokenStore: Send + Sync {
    /// Creates an `admin` token (every right, as tokens had before scopes); see
    /// [`Self::create_scoped_api_token`].
    async fn create_api_token(&self, name: &str) -> Result<(ApiToken, SecretString)> {
        self.create_scoped_api_token(name, ApiScope::Admin).await
    }

    /// Creates a token of `scope`; returns the record and the token text, which is shown once
    /// and cannot be recovered. A duplicate name is [`crate::Error::Conflict`].
    async fn create_scoped_api_token(
        &self,
        name: &str,
        scope: ApiScope,
    ) -> Result<(ApiToken, SecretString)>;

    /// The token's record if `presented` is a valid token (looked up by its hash).
    async fn authenticate_api_token(&self, presented: &SecretString) -> Result<Option<ApiToken>>;

    /// All tokens, by name.
    async fn list_api_tokens(&self) -> Result<Vec<ApiToken>>;

    /// Revokes a token.
    async fn revoke_api_token(&self, id: ApiTokenId) -> Result<()>;
}
