//! [`Client`]: the cloneable handle shared by every caller. It joins the call executor
//! ([`crate::call`]) and the token chain ([`crate::token`]) that feeds it the admin token.

use std::sync::Arc;

use secrecy::ExposeSecret;
use url::Url;

use crate::call::{Call, Caller};
use crate::config::{ClientConfig, ConfigUrl, Credentials, Scope};
use crate::error::{Error, Result};
use crate::http::Incoming;
use crate::jwt::AppKey;
use crate::observer::CallObserver;
use crate::token::{AdminTokens, Secret, TokenChain};

/// A client for one config URL (repository, organization or enterprise).
///
/// Cloning is cheap: clones share one connection pool and one admin-token cache. Independent
/// calls run concurrently; only an admin-token refresh is single-flight.
#[derive(Clone)]
pub struct Client {
    inner: Arc<Inner>,
    /// Told about every call made through this handle (and the token-chain calls it triggers).
    observer: Option<Arc<dyn CallObserver>>,
}

struct Inner {
    caller: Caller,
    tokens: TokenChain,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("config", &self.inner.caller.config)
            .field("api_base", &self.inner.caller.api_base.as_str())
            .finish_non_exhaustive()
    }
}

impl Client {
    /// Builds a client: validates the credentials (a PAT that can be sent as a header, a
    /// parseable App key, no App credentials at enterprise scope), loads the trust roots and
    /// creates the connection pool. No request is made.
    pub fn new(config: ClientConfig) -> Result<Self> {
        let secret = secret(&config.credentials, &config.config_url)?;
        let observer = config.observer.clone();
        Ok(Self {
            inner: Arc::new(Inner {
                caller: Caller::new(config)?,
                tokens: TokenChain::new(secret),
            }),
            observer,
        })
    }

    /// Replaces the credentials the token chain starts from (a rotated PAT or App key): the
    /// cached admin token is dropped, so the next call fetches a new one with them. Every
    /// clone of this client uses them from then on.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidConfig`] for credentials [`Client::new`] would refuse; the old ones
    /// stay in use.
    pub fn rotate_credentials(&self, credentials: Credentials) -> Result<()> {
        let secret = secret(&credentials, &self.inner.caller.config.config_url)?;
        self.inner.tokens.rotate(secret);
        Ok(())
    }

    /// A handle on the same client (connections, admin token) whose calls are reported to
    /// `observer` instead of the configured one: for code that receives clients built
    /// elsewhere (a factory, a cache) and counts their calls in its own metrics.
    #[must_use]
    pub fn with_observer(&self, observer: Arc<dyn CallObserver>) -> Self {
        Self {
            inner: Arc::clone(&self.inner),
            observer: Some(observer),
        }
    }

    /// The config URL this client serves.
    pub fn config_url(&self) -> &ConfigUrl {
        &self.inner.caller.config.config_url
    }

    /// The PEM CA bundle this client trusts instead of the public roots (a GHES with a private
    /// CA), if it was given one: what the runners of this endpoint must trust too.
    pub fn ca_bundle_pem(&self) -> Option<&[u8]> {
        match &self.inner.caller.config.trust_roots {
            crate::config::TrustRoots::CaBundle(pem) => Some(pem),
            _ => None,
        }
    }

    /// The REST API base in use (derived or overridden).
    pub fn api_base(&self) -> &Url {
        &self.inner.caller.api_base
    }

    /// The current Actions service URL, running the token chain first if the admin token is
    /// missing or about to expire.
    pub async fn service_url(&self) -> Result<Url> {
        Ok(self.admin().connection_now().await?.service_url.clone())
    }

    /// Runs one call with retries; calls to the Actions service (or with admin auth) get the
    /// admin connection from the token chain before each attempt.
    pub(crate) async fn execute(&self, call: &Call) -> Result<Incoming> {
        self.inner
            .caller
            .execute(call, &self.admin(), self.observer.as_deref())
            .await
    }

    /// Runs one REST call that authenticates itself (no admin connection), with retries.
    pub(crate) async fn execute_rest(&self, call: &Call) -> Result<Incoming> {
        self.inner
            .caller
            .execute_rest(call, self.observer.as_deref())
            .await
    }

    pub(crate) fn admin(&self) -> AdminTokens<'_> {
        AdminTokens {
            chain: &self.inner.tokens,
            caller: &self.inner.caller,
            observer: self.observer.as_deref(),
        }
    }
}

#[cfg(test)]
mod tests;

/// Checks credentials as [`Client::new`] does and parses an App key once.
fn secret(credentials: &Credentials, config_url: &ConfigUrl) -> Result<Secret> {
    let app_key = match credentials {
        Credentials::Pat(token) => {
            if token.expose_secret().is_empty() {
                return Err(Error::InvalidConfig {
                    reason: "the personal access token is empty".to_owned(),
                });
            }
            if http::HeaderValue::from_str(token.expose_secret()).is_err() {
                return Err(Error::InvalidConfig {
                    reason: "the personal access token contains characters an HTTP header \
                             cannot carry (a line break or control character copied with \
                             it?); give the token alone"
                        .to_owned(),
                });
            }
            None
        }
        Credentials::App(app) => {
            if matches!(config_url.scope(), Scope::Enterprise { .. }) {
                return Err(Error::InvalidConfig {
                    reason: "GitHub App authentication is not supported for enterprise scope; \
                             use a personal access token with manage_runners:enterprise"
                        .to_owned(),
                });
            }
            Some(AppKey::from_pem(&app.private_key)?)
        }
    };
    Ok(Secret {
        credentials: credentials.clone(),
        app_key,
    })
}
