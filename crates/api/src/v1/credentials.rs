//! `/api/v1/credentials`: how the controller authenticates to GitHub, and where. Secrets (the
//! PAT, the App's private key) are write-only: accepted on create and replace, sealed at rest by
//! the store, never returned.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// `POST /api/v1/credentials` and `PUT /api/v1/credentials/{id}` (a replace: the secret must
/// be given again).
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateCredentials {
    /// A unique name: 1–64 of `A-Za-z0-9._-`, starting with a letter or digit.
    #[schema(
        min_length = 1,
        max_length = 64,
        pattern = "^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"
    )]
    pub name: String,
    /// The authentication method and its secret.
    pub auth: AuthInput,
    /// The GitHub endpoint. Omitted: github.com on a create; a replacement keeps the stored one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<EndpointInput>,
}

impl std::fmt::Debug for CreateCredentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CreateCredentials")
            .field("name", &self.name)
            .field("auth", &self.auth)
            .field("endpoint", &self.endpoint)
            .finish()
    }
}

/// How to authenticate, tagged by `kind`. `Debug` redacts the secrets.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum AuthInput {
    /// A personal access token (classic or fine-grained).
    Pat {
        /// The token. Write-only: at most 16384 characters, no white space at its ends.
        #[schema(
            min_length = 1,
            max_length = 16384,
            pattern = "^(?=[\\s\\S]*[^\\t-\\r \\x85\\xA0\\u1680\\u2000-\\u200A\\u2028\\u2029\\u202F\\u205F\\u3000])(?:[\\s\\S]*-----BEGIN[\\s\\S]*|[^\\t-\\r \\x85\\xA0\\u1680\\u2000-\\u200A\\u2028\\u2029\\u202F\\u205F\\u3000](?:[\\s\\S]*[^\\t-\\r \\x85\\xA0\\u1680\\u2000-\\u200A\\u2028\\u2029\\u202F\\u205F\\u3000])?)$"
        )]
        token: String,
    },
    /// A GitHub App installation. The App is named by exactly one of `app_id` or `client_id`
    /// (either is the issuer of the App's JWT); both or neither is a 400.
    App {
        /// The App's numeric "App ID". Omit when giving `client_id`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[schema(minimum = 1)]
        app_id: Option<i64>,
        /// The App's client id (`Iv23li…` or `Iv1.…`), which GitHub shows first on the App's
        /// settings page: 1–128 printable ASCII characters, no white space. Omit when giving
        /// `app_id`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[schema(min_length = 1, max_length = 128, pattern = "^[!-~]{1,128}$")]
        client_id: Option<String>,
        /// The installation's id.
        #[schema(minimum = 1)]
        installation_id: i64,
        /// The App's private key, PEM. Write-only: at most 16384 characters.
        #[schema(
            min_length = 1,
            max_length = 16384,
            pattern = "^[\\s\\S]*-----BEGIN[\\s\\S]*$"
        )]
        private_key: String,
    },
}

impl std::fmt::Debug for AuthInput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Pat { .. } => f.write_str("Pat { token: [redacted] }"),
            Self::App {
                app_id,
                client_id,
                installation_id,
                ..
            } => write!(
                f,
                "App {{ app_id: {app_id:?}, client_id: {client_id:?}, installation_id: {installation_id}, private_key: [redacted] }}"
            ),
        }
    }
}

/// Where GitHub is: github.com, GHE.com or a GHES host.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct EndpointInput {
    /// The web base URL (`https://github.com`, `https://ghes.example.com`); `http` and `https`,
    /// no query, fragment or user. The pattern is the shape the schema promises; the server
    /// also takes any other URL that parses (an IP address, a percent-escaped path).
    #[schema(
        pattern = "^https?://(?:[A-Za-z0-9]+\\.)*[A-Za-z][A-Za-z0-9]*(?::(?:6553[0-5]|655[0-2][0-9]|65[0-4][0-9]{2}|6[0-4][0-9]{3}|[1-5][0-9]{4}|[0-9]{1,4}))?(?:/[A-Za-z0-9._~-]*)*$"
    )]
    pub base_url: String,
    /// The REST API base URL. Default: `https://api.github.com` for github.com,
    /// `https://api.<tenant>.ghe.com` for a GHE.com tenant, else `<base_url>/api/v3` (GHES).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(
        pattern = "^https?://(?:[A-Za-z0-9]+\\.)*[A-Za-z][A-Za-z0-9]*(?::(?:6553[0-5]|655[0-2][0-9]|65[0-4][0-9]{2}|6[0-4][0-9]{3}|[1-5][0-9]{4}|[0-9]{1,4}))?(?:/[A-Za-z0-9._~-]*)*$"
    )]
    pub api_base_url: Option<String>,
    /// Extra CA certificates (PEM) to trust for this endpoint (a GHES with a private CA).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_bundle: Option<String>,
}

/// The kind of authentication, without its secret.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum AuthKind {
    /// A personal access token.
    Pat,
    /// A GitHub App installation.
    App,
}

/// The endpoint as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Endpoint {
    /// The web base URL.
    pub base_url: String,
    /// The REST API base URL.
    pub api_base_url: String,
    /// The extra CA certificates (PEM), if any (certificates are public; this is not a secret).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_bundle: Option<String>,
}

/// Stored credentials, without the secret.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Credentials {
    /// The id.
    pub id: uuid::Uuid,
    /// The unique name.
    pub name: String,
    /// PAT or App.
    pub kind: AuthKind,
    /// The App's id (apps named by their App ID only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub app_id: Option<i64>,
    /// The App's client id (apps named by their client id only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
    /// The installation's id (apps only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub installation_id: Option<i64>,
    /// The endpoint.
    pub endpoint: Endpoint,
    /// When they were created (RFC 3339).
    pub created_at: String,
    /// When they were last replaced (RFC 3339).
    pub updated_at: String,
}
