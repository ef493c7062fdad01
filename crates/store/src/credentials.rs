//! The credentials aggregate: how to authenticate to GitHub (PAT or GitHub App) and where
//! (github.com or a GHES endpoint). Secrets are sealed by the store's keyring before they
//! reach the database.

use async_trait::async_trait;

use crate::clock::Timestamp;
use crate::error::Result;
use crate::id::CredentialsId;
use secrecy::{ExposeSecret, SecretString};

/// The GitHub endpoint credentials belong to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// The web base URL (`https://github.com` or the GHES host).
    pub base_url: String,
    /// The REST API base URL (`https://api.github.com` or `https://<ghes>/api/v3`).
    pub api_base_url: String,
    /// Extra CA certificates (PEM) to trust for a GHES endpoint.
    pub ca_bundle: Option<String>,
}

impl Endpoint {
    /// github.com.
    pub fn github_com() -> Self {
        Self {
            base_url: "https://github.com".to_owned(),
            api_base_url: "https://api.github.com".to_owned(),
            ca_bundle: None,
        }
    }
}

/// How to authenticate. `Debug` redacts the secrets.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Auth {
    /// A personal access token.
    Pat {
        /// The token.
        token: SecretString,
    },
    /// A GitHub App installation.
    App {
        /// The app id.
        app_id: i64,
        /// The installation id.
        installation_id: i64,
        /// The app's private key (PEM).
        private_key: SecretString,
    },
}

/// Equal when the method and its secret are the same: the fleet planner replaces stored
/// credentials whose secret differs from the declared one. Written out because secrecy's
/// `SecretString` has no equality of its own (this comparison is not constant-time; it compares
/// the operator's own declared and stored secrets, not a presented one).
impl PartialEq for Auth {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Self::Pat { token: a }, Self::Pat { token: b }) => {
                a.expose_secret() == b.expose_secret()
            }
            (
                Self::App {
                    app_id: a_app,
                    installation_id: a_installation,
                    private_key: a_key,
                },
                Self::App {
                    app_id: b_app,
                    installation_id: b_installation,
                    private_key: b_key,
                },
            ) => {
                a_app == b_app
                    && a_installation == b_installation
                    && a_key.expose_secret() == b_key.expose_secret()
            }
            _ => false,
        }
    }
}

impl Eq for Auth {}

/// Credentials to create or to replace existing ones with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewCredentials {
    /// A unique name operators refer to them by.
    pub name: String,
    /// The endpoint.
    pub endpoint: Endpoint,
    /// The authentication method and its secret.
    pub auth: Auth,
}

/// Stored credentials, decrypted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Credentials {
    /// The id.
    pub id: CredentialsId,
    /// The unique name.
    pub name: String,
    /// The endpoint.
    pub endpoint: Endpoint,
    /// The authentication method and its secret.
    pub auth: Auth,
    /// The id of the key the secret is sealed with.
    pub key_id: String,
    /// When they were created.
    pub created_at: Timestamp,
    /// When they were last replaced.
    pub updated_at: Timestamp,
}

/// GitHub credentials, with secrets sealed at rest.
#[async_trait]
pub trait CredentialStore: Send + Sync {
    /// Stores new credentials. A duplicate name is [`crate::Error::Conflict`].
    async fn create_credentials(&self, new: NewCredentials) -> Result<Credentials>;

    /// Reads credentials by id, decrypting the secret.
    async fn get_credentials(&self, id: CredentialsId) -> Result<Credentials>;

    /// Reads credentials by name.
    async fn get_credentials_by_name(&self, name: &str) -> Result<Credentials>;

    /// All credentials, by name.
    async fn list_credentials(&self) -> Result<Vec<Credentials>>;

    /// Replaces name, endpoint and secret (sealed with the primary key).
    async fn update_credentials(
        &self,
        id: CredentialsId,
        new: NewCredentials,
    ) -> Result<Credentials>;

    /// Replaces the credentials named `new.name` (endpoint and secret, sealed with the primary
    /// key) without opening the stored secret: for credentials whose secret the keyring can no
    /// longer open (the key that sealed them is lost), which only a replacement can mend.
    /// No credentials of that name is [`crate::Error::NotFound`].
    async fn replace_sealed_credentials(&self, new: NewCredentials) -> Result<Credentials>;

    /// Deletes credentials; still referenced by an entity is [`crate::Error::Conflict`].
    async fn delete_credentials(&self, id: CredentialsId) -> Result<()>;

    /// Re-seals every secret not sealed with the primary key (the last step of a key
    /// rotation, after which the older key can be removed). Returns how many were re-sealed.
    async fn reseal_credentials(&self) -> Result<usize>;
}
