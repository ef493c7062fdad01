//! The token chain (protocol §3): App JWT → installation token → registration token →
//! admin token and service URL, and the shared admin-token cache with single-flight refresh.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Duration, SystemTime};

use http::Method;
use serde::{Deserialize, Serialize};
use url::Url;

use crate::call::{AdminConnection, AdminSource, Auth, Call, Caller, Expect, Target};
use crate::config::{ConfigUrl, Credentials, Scope};
use crate::endpoint::Endpoint;
use crate::error::{Error, Result};
use crate::jwt::{AppKey, unverified_expiry};
use crate::observer::CallObserver;
use crate::wire::decode;
use secrecy::{ExposeSecret, SecretString};

/// The admin-token cache shared by all clones of a client.
///
/// Readers take a short `std` read lock (never held across `.await`). A refresh holds a tokio
/// mutex, so N callers that find the token expired wait for one refresh instead of starting N.
/// When that refresh fails, every caller that waited for it gets the same failure
/// ([`Error::SharedRefresh`]) instead of each running the whole chain (and its retry budget)
/// again, one after another.
pub(crate) struct TokenChain {
    /// The credentials the chain starts from, replaced whole by a rotation.
    secret: RwLock<Arc<Secret>>,
    current: RwLock<Option<Arc<AdminConnection>>>,
    /// Held for the duration of a refresh; holds the failure of the last refresh, if it failed.
    refresh: tokio::sync::Mutex<Option<Arc<Error>>>,
    /// How many refreshes have finished (successfully or not).
    finished: AtomicU64,
}

impl TokenChain {
    pub(crate) fn new(secret: Secret) -> Self {
        Self {
            secret: RwLock::new(Arc::new(secret)),
            current: RwLock::new(None),
            refresh: tokio::sync::Mutex::new(None),
            finished: AtomicU64::new(0),
        }
    }

    fn fresh(&self, margin: Duration) -> Option<Arc<AdminConnection>> {
        let guard = self
            .current
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let connection = guard.as_ref()?;
        let deadline = SystemTime::now().checked_add(margin)?;
        (deadline < connection.expires_at).then(|| Arc::clone(connection))
    }

    fn store(&self, connection: Arc<AdminConnection>) {
        *self
            .current
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = Some(connection);
    }

    /// The credentials the next refresh starts from.
    fn secret(&self) -> Arc<Secret> {
        Arc::clone(
            &self
                .secret
                .read()
                .unwrap_or_else(|poisoned| poisoned.into_inner()),
        )
    }

    /// Replaces the credentials and forgets the cached connection, so the next call runs the
    /// chain with the new secret (the admin token of the old one is dropped with it: a
    /// revoked PAT may take its tokens with it).
    pub(crate) fn rotate(&self, secret: Secret) {
        *self
            .secret
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = Arc::new(secret);
        *self
            .current
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = None;
    }

    /// Forgets the cached connection if it still holds `token` (it was rejected with 401).
    pub(crate) fn invalidate(&self, token: &SecretString) {
        let mut guard = self
            .current
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if guard
            .as_ref()
            .is_some_and(|c| c.token.expose_secret() == token.expose_secret())
        {
            *guard = None;
        }
    }
}

/// Credentials as the chain uses them: the App key parsed once.
pub(crate) struct Secret {
    pub(crate) credentials: Credentials,
    pub(crate) app_key: Option<AppKey>,
}

#[derive(Deserialize)]
struct TokenResponse {
    #[serde(default, deserialize_with = "crate::lenient::null_default")]
    token: SecretString,
}

#[derive(Serialize)]
struct RunnerRegistrationRequest<'a> {
    url: &'a str,
    runner_event: &'static str,
}

#[derive(Deserialize)]
struct RunnerRegistrationResponse {
    #[serde(default, deserialize_with = "crate::lenient::null_default")]
    url: String,
    #[serde(default, deserialize_with = "crate::lenient::null_default")]
    token: SecretString,
}

/// The token chain at work: its cache and the caller its REST calls go through.
pub(crate) struct AdminTokens<'a> {
    pub(crate) chain: &'a TokenChain,
    pub(crate) caller: &'a Caller,
    /// Where the chain's own calls are reported.
    pub(crate) observer: Option<&'a dyn CallObserver>,
}

impl AdminSource for AdminTokens<'_> {
    async fn connection(&self) -> Result<Arc<AdminConnection>> {
        self.connection_now().await
    }

    fn rejected(&self, token: &SecretString) {
        self.chain.invalidate(token);
    }
}

impl AdminTokens<'_> {
    fn config_url(&self) -> &ConfigUrl {
        &self.caller.config.config_url
    }

    /// The cached admin connection, refreshed (once, for all concurrent callers) when missing
    /// or within the margin of its `exp`. On failure the old connection is kept.
    pub(crate) async fn connection_now(&self) -> Result<Arc<AdminConnection>> {
        let margin = self.caller.config.admin_token_margin;
        if let Some(connection) = self.chain.fresh(margin) {
            return Ok(connection);
        }
        let tokens = self.chain;
        let seen = tokens.finished.load(Ordering::Acquire);
        let mut last_failure = tokens.refresh.lock().await;
        if let Some(connection) = tokens.fresh(margin) {
            return Ok(connection);
        }
        if tokens.finished.load(Ordering::Acquire) != seen
            && let Some(failure) = last_failure.as_ref()
        {
            // The refresh this caller waited for failed: share its outcome.
            return Err(Error::SharedRefresh(Arc::clone(failure)));
        }
        let fetched = self.fetch_admin_connection().await;
        tokens.finished.fetch_add(1, Ordering::AcqRel);
        let connection = match fetched {
            Ok(connection) => {
                *last_failure = None;
                Arc::new(connection)
            }
            Err(error) => {
                let shared = Arc::new(error);
                *last_failure = Some(Arc::clone(&shared));
                return Err(Error::SharedRefresh(shared));
            }
        };
        // Only the host: older service URLs carry a tenant token in the path.
        tracing::info!(
            service_host = connection.service_url.host_str().unwrap_or_default(),
            "github admin connection refreshed"
        );
        tokens.store(Arc::clone(&connection));
        Ok(connection)
    }

    /// The token REST calls authenticate with: the PAT itself, or a new installation token
    /// for App credentials (one `installation_token` call).
    pub(crate) async fn rest_token(&self) -> Result<SecretString> {
        let secret = self.chain.secret();
        match &secret.credentials {
            Credentials::Pat(token) => Ok(token.clone()),
            Credentials::App(app) => {
                self.installation_token(&secret, &app.client_id, app.installation_id)
                    .await
            }
        }
    }

    /// Runs the whole chain once.
    async fn fetch_admin_connection(&self) -> Result<AdminConnection> {
        let rest_token = self.rest_token().await?;
        let registration = self.registration_token(&rest_token).await?;
        self.runner_registration(&registration).await
    }

    pub(crate) fn rest_url(&self, segments: &[&str]) -> Url {
        let mut url = self.caller.api_base.clone();
        if let Ok(mut path) = url.path_segments_mut() {
            path.pop_if_empty().extend(segments);
        }
        url
    }

    /// `POST {api}/app/installations/{id}/access_tokens` with the App JWT; expects 201.
    async fn installation_token(
        &self,
        secret: &Secret,
        client_id: &str,
        installation_id: i64,
    ) -> Result<SecretString> {
        let key = secret
            .app_key
            .as_ref()
            .ok_or_else(|| Error::InvalidConfig {
                reason: "GitHub App credentials without a parsed private key".to_owned(),
            })?;
        let jwt = key.sign(client_id, SystemTime::now())?;
        let id = installation_id.to_string();
        let url = self.rest_url(&["app", "installations", &id, "access_tokens"]);
        self.post_for_token(
            Endpoint::InstallationToken,
            url,
            Auth::Bearer(jwt),
            "application/vnd.github+json",
        )
        .await
    }

    /// `POST {api}/{repos/o/r|orgs/o|enterprises/e}/actions/runners/registration-token`;
    /// expects 201.
    async fn registration_token(&self, rest_token: &SecretString) -> Result<SecretString> {
        let url = match self.config_url().scope() {
            Scope::Repository { owner, repo } => self.rest_url(&[
                "repos",
                owner,
                repo,
                "actions",
                "runners",
                "registration-token",
            ]),
            Scope::Organization { org } => {
                self.rest_url(&["orgs", org, "actions", "runners", "registration-token"])
            }
            Scope::Enterprise { enterprise } => self.rest_url(&[
                "enterprises",
                enterprise,
                "actions",
                "runners",
                "registration-token",
            ]),
        };
        // Sent as Content-Type, with no Accept header, as the official clients do (§3.4).
        self.post_for_token(
            Endpoint::RegistrationToken,
            url,
            Auth::Bearer(rest_token.clone()),
            "application/vnd.github.v3+json",
        )
        .await
    }

    /// The shared shape of the installation- and registration-token calls: a body-less POST
    /// that must answer 201 with a non-empty `token`.
    async fn post_for_token(
        &self,
        endpoint: Endpoint,
        url: Url,
        auth: Auth,
        content_type: &'static str,
    ) -> Result<SecretString> {
        let call = Call {
            endpoint,
            method: Method::POST,
            target: Target::Absolute(url),
            auth,
            headers: Vec::new(),
            content_type: Some(content_type),
            body: None,
            expect: Expect::Status(&[201]),
            long_poll: false,
            also_retry: &[],
        };
        let response = self.caller.execute_rest(&call, self.observer).await?;
        let decoded: TokenResponse = decode(endpoint, response.status, &response.body)?;
        if decoded.token.expose_secret().is_empty() {
            return Err(Error::UnexpectedResponse {
                endpoint,
                status: response.status,
                reason: format!("the {endpoint} response has no token"),
            });
        }
        Ok(decoded.token)
    }

    /// `POST {api}/actions/runner-registration` with `RemoteAuth`; any 2xx; 401/403 retried.
    async fn runner_registration(
        &self,
        registration_token: &SecretString,
    ) -> Result<AdminConnection> {
        let body = RunnerRegistrationRequest {
            url: self.config_url().as_str(),
            runner_event: "register",
        };
        let call = Call {
            endpoint: Endpoint::RunnerRegistration,
            method: Method::POST,
            target: Target::Absolute(self.rest_url(&["actions", "runner-registration"])),
            auth: Auth::Remote(registration_token.clone()),
            headers: Vec::new(),
            content_type: Some("application/json"),
            body: None,
            expect: Expect::AnySuccess,
            long_poll: false,
            also_retry: Endpoint::RunnerRegistration.also_retried_statuses(),
        }
        .json(&body)?;
        let response = self.caller.execute_rest(&call, self.observer).await?;
        let decoded: RunnerRegistrationResponse =
            decode(call.endpoint, response.status, &response.body)?;
        let unexpected = |reason: &str| Error::UnexpectedResponse {
            endpoint: Endpoint::RunnerRegistration,
            status: response.status,
            reason: reason.to_owned(),
        };
        if decoded.token.expose_secret().is_empty() {
            return Err(unexpected("the response has no admin token"));
        }
        if decoded.url.trim().is_empty() {
            return Err(unexpected("the response has no actions service url"));
        }
        let service_url = Url::parse(decoded.url.trim())
            .map_err(|_| unexpected("the actions service url is not a valid url"))?;
        let now = SystemTime::now();
        let expires_at = unverified_expiry(decoded.token.expose_secret()).unwrap_or_else(|| {
            now.checked_add(self.caller.config.admin_token_fallback_ttl)
                .unwrap_or(now)
        });
        Ok(AdminConnection {
            token: decoded.token,
            service_url,
            expires_at,
        })
    }
}
