//! The credentials aggregate: how to authenticate to GitHub (PAT or GitHub App) and where
//! (github.com or a GHES endpoint). Secrets are sealed by the store's keyring before they
//! reach the database.

use async_trait::async_trait;

use crate::clock::Timestamp;
use crate::error::Result;
use crate::id::CredentialsId;
use crate::spec::SpecProblem;
use secrecy::{ExposeSecret, SecretString};

/// The GitHub endpoint credentials belong to. Build one with [`Endpoint::parse`] (or
/// [`Endpoint::github_com`]): the API base URL, when not given, is derived there and nowhere
/// else ([`Endpoint::derived_api_base_url`]), by the rule the GitHub client uses for a config
/// URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// The web base URL (`https://github.com`, `https://<tenant>.ghe.com` or the GHES host),
    /// without a trailing slash.
    pub base_url: String,
    /// The REST API base URL (`https://api.github.com`, `https://api.<tenant>.ghe.com` or
    /// `https://<ghes>/api/v3`), without a trailing slash.
    pub api_base_url: String,
    /// Extra CA certificates (PEM) to trust for a GHES endpoint.
    pub ca_bundle: Option<String>,
    /// Trust the operating system's certificate store instead of the built-in web PKI roots
    /// (a GHES whose CA the machine's administrators installed); without a `ca_bundle` only.
    pub system_trust: bool,
}

impl Endpoint {
    /// github.com.
    pub fn github_com() -> Self {
        Self {
            base_url: "https://github.com".to_owned(),
            api_base_url: "https://api.github.com".to_owned(),
            ca_bundle: None,
            system_trust: false,
        }
    }

    /// Parses an endpoint as an operator writes it: the web base URL, the REST API base URL
    /// if it is not the derived one, and extra CA certificates. Both URLs must be `http` or
    /// `https` with a host and no query, fragment or user; trailing slashes are dropped.
    ///
    /// ```
    /// use scaleset_store::Endpoint;
    ///
    /// let ghe = Endpoint::parse("https://acme.ghe.com/", None, None).unwrap();
    /// assert_eq!(ghe.api_base_url, "https://api.acme.ghe.com");
    /// let ghes = Endpoint::parse("https://ghes.example.com", None, None).unwrap();
    /// assert_eq!(ghes.api_base_url, "https://ghes.example.com/api/v3");
    /// ```
    ///
    /// # Errors
    ///
    /// Every problem, naming `base_url` or `api_base_url`.
    pub fn parse(
        base_url: &str,
        api_base_url: Option<&str>,
        ca_bundle: Option<String>,
    ) -> Result<Self, Vec<SpecProblem>> {
        let mut problems = Vec::new();
        let base = http_url("base_url", base_url)
            .map_err(|p| problems.push(p))
            .ok();
        let api = match (api_base_url, &base) {
            (Some(api), _) => http_url("api_base_url", api)
                .map_err(|p| problems.push(p))
                .ok()
                .map(|u| trimmed(&u)),
            (None, Some(base)) => Some(Self::derived_api_base_url(base)),
            // The base URL's problem is reported; the default derives from it.
            (None, None) => None,
        };
        match (base, api) {
            (Some(base), Some(api)) if problems.is_empty() => Ok(Self {
                base_url: trimmed(&base),
                api_base_url: api,
                ca_bundle,
                system_trust: false,
            }),
            _ => Err(problems),
        }
    }

    /// The REST API base URL of a web base URL, the one derivation of it: `api.<host>` for
    /// github.com (and `www.github.com`), `github.localhost` and GHE.com tenants
    /// (`<tenant>.ghe.com`); `<base>/api/v3` for a GitHub Enterprise Server. The one rule
    /// ([`scaleset_domain::api_base_url`]), which the GitHub client's config URL also calls.
    pub fn derived_api_base_url(base: &url::Url) -> String {
        scaleset_domain::api_base_url(base)
    }

    /// An endpoint as stored. A GHE.com endpoint whose stored API base URL is
    /// `<base>/api/v3` was derived by an older version's wrong rule (GHE.com serves its REST
    /// API only at `api.<tenant>.ghe.com`): it is read as the derived one.
    pub(crate) fn from_stored(
        base_url: String,
        api_base_url: String,
        ca_bundle: Option<String>,
        system_trust: bool,
    ) -> Self {
        let wrong_ghe = url::Url::parse(&base_url).ok().filter(|base| {
            base.host_str()
                .is_some_and(|h| h.to_ascii_lowercase().ends_with(".ghe.com"))
                && api_base_url.trim_end_matches('/')
                    == format!("{}/api/v3", base_url.trim_end_matches('/'))
        });
        let api_base_url = match wrong_ghe {
            Some(base) => Self::derived_api_base_url(&base),
            None => api_base_url,
        };
        Self {
            base_url,
            api_base_url,
            ca_bundle,
            system_trust,
        }
    }
}

/// The URL's text without a trailing slash.
fn trimmed(url: &url::Url) -> String {
    url.as_str().trim_end_matches('/').to_owned()
}

/// An `http` or `https` URL with a host and no query, fragment or credentials.
fn http_url(field: &str, text: &str) -> Result<url::Url, SpecProblem> {
    let problem = |message: String| SpecProblem {
        field: field.to_owned(),
        message,
    };
    let parsed =
        url::Url::parse(text.trim()).map_err(|e| problem(format!("{text:?} is not a URL: {e}")))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(problem(format!(
            "{text:?}: only http and https URLs are allowed"
        )));
    }
    if parsed.host_str().is_none_or(str::is_empty) {
        return Err(problem(format!("{text:?} has no host")));
    }
    if let Some(url::Host::Domain(host)) = parsed.host()
        && let Some(why) = dns_name_problem(host)
    {
        // The text may be thousands of characters: only its start is quoted.
        let shown: String = text.trim().chars().take(64).collect();
        return Err(problem(format!(
            "the host of {shown:?}… {why}; give the GitHub host's DNS name"
        )));
    }
    if parsed.query().is_some()
        || parsed.fragment().is_some()
        || !parsed.username().is_empty()
        || parsed.password().is_some()
    {
        return Err(problem(format!(
            "{text:?}: give the base URL only (no query, fragment or user)"
        )));
    }
    Ok(parsed)
}

/// The longest DNS name, in characters (RFC 1035: 255 octets on the wire).
const MAX_DNS_NAME: usize = 253;
/// The longest DNS label, in characters (RFC 1035).
const MAX_DNS_LABEL: usize = 63;

/// Whether `host` (a domain name as the URL parser normalised it) can be a DNS name: at most
/// [`MAX_DNS_NAME`] characters in all, each label 1 to [`MAX_DNS_LABEL`]. `None` when it can.
fn dns_name_problem(host: &str) -> Option<String> {
    let name = host.strip_suffix('.').unwrap_or(host);
    if name.len() > MAX_DNS_NAME {
        return Some(format!(
            "is {} characters long, longer than a DNS name can be ({MAX_DNS_NAME})",
            name.len()
        ));
    }
    if let Some(label) = name.split('.').find(|l| l.len() > MAX_DNS_LABEL) {
        return Some(format!(
            "has a label of {} characters, longer than DNS allows ({MAX_DNS_LABEL})",
            label.len()
        ));
    }
    if name.split('.').any(str::is_empty) {
        return Some("has an empty label (two dots in a row)".to_owned());
    }
    None
}

/// The longest client id accepted. GitHub's are about 20 characters (`Iv1.` and 16 hex digits,
/// or `Iv23li` and 14 more); the bound only keeps a pasted paragraph out.
pub const MAX_CLIENT_ID: usize = 128;

/// A GitHub App's client id (`Iv23li…`), which GitHub shows first on the App's settings page
/// and accepts as the issuer (`iss`) of the App's JWT in place of the numeric App ID. Build one
/// with [`ClientId::parse`]. Not a secret (the client *secret* is; this crate never holds one).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ClientId(String);

impl ClientId {
    /// Parses a client id tolerantly: 1 to [`MAX_CLIENT_ID`] printable ASCII characters, no
    /// white space (it is sent in a JWT claim and shown in messages). GitHub documents the
    /// `Iv` prefix for GitHub Apps' client ids (`Iv1.` for older Apps, `Iv23li` for newer), but
    /// the prefix is deliberately not required: GitHub has changed the shape before, and a
    /// wrong id is refused by GitHub at the first token fetch anyway, naming the credentials.
    ///
    /// ```
    /// use scaleset_store::ClientId;
    ///
    /// assert_eq!(ClientId::parse("Iv23liABCDEF").unwrap().as_str(), "Iv23liABCDEF");
    /// assert!(ClientId::parse("Iv23li ABC").is_err());
    /// ```
    ///
    /// # Errors
    ///
    /// [`ClientIdError`]: what is wrong with the text; its message says what to give instead
    /// (the text is quoted only when it is short).
    pub fn parse(text: &str) -> Result<Self, ClientIdError> {
        if text.is_empty() {
            return Err(ClientIdError::Empty);
        }
        if text.len() > MAX_CLIENT_ID {
            return Err(ClientIdError::TooLong {
                chars: text.chars().count(),
            });
        }
        if let Some(c) = text.chars().find(|c| !c.is_ascii_graphic()) {
            return Err(ClientIdError::NotGraphic {
                text: text.to_owned(),
                found: c,
            });
        }
        Ok(Self(text.to_owned()))
    }

    /// The client id's text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Why a text is not a GitHub App client id ([`ClientId::parse`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClientIdError {
    /// Nothing was given.
    #[error("empty; {CLIENT_ID_GIVE}")]
    Empty,
    /// Longer than [`MAX_CLIENT_ID`] bytes (the text is not quoted).
    #[error(
        "{chars} characters long, longer than a client id can be ({MAX_CLIENT_ID}); \
         {CLIENT_ID_GIVE}"
    )]
    TooLong {
        /// Its length in characters.
        chars: usize,
    },
    /// A character that is not printable ASCII, or white space.
    #[error(
        "{text:?} holds {found:?}: a client id is printable ASCII without white space; \
         {CLIENT_ID_GIVE}"
    )]
    NotGraphic {
        /// The text (short: longer ones are [`ClientIdError::TooLong`]).
        text: String,
        /// The first such character.
        found: char,
    },
}

const CLIENT_ID_GIVE: &str =
    "give the App's \"Client ID\" from its settings page (Iv23li… or Iv1.…)";

impl std::fmt::Display for ClientId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Which GitHub App credentials are for: exactly one of its two public names, whichever the
/// operator gave. Either one is the issuer (`iss`) of the App's JWT.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum AppIdentity {
    /// The numeric App ID.
    Id(i64),
    /// The client id (`Iv23li…`).
    ClientId(ClientId),
}

impl AppIdentity {
    /// The JWT issuer: the client id if given, else the App ID as a string.
    pub fn issuer(&self) -> String {
        match self {
            Self::Id(id) => id.to_string(),
            Self::ClientId(client_id) => client_id.as_str().to_owned(),
        }
    }
}

/// `12345` for an App ID, `client id Iv23li…` for a client id: what follows "App " in a message.
impl std::fmt::Display for AppIdentity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Id(id) => write!(f, "{id}"),
            Self::ClientId(client_id) => write!(f, "client id {client_id}"),
        }
    }
}

/// How to authenticate. `Debug` redacts the secrets.
#[derive(Debug, Clone)]
pub enum Auth {
    /// A personal access token.
    Pat {
        /// The token.
        token: SecretString,
    },
    /// A GitHub App installation.
    App {
        /// The App, by App ID or client id.
        app: AppIdentity,
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
                    app: a_app,
                    installation_id: a_installation,
                    private_key: a_key,
                },
                Self::App {
                    app: b_app,
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
