//! Where a scale set's GitHub client comes from: a [`ClientFactory`] the embedder provides, or
//! [`StoreClientFactory`], which builds one from the entity and credentials in the store.

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use scaleset_github::{Client, ClientConfig, ConfigUrl, Credentials};
use scaleset_store::{Auth, CredentialsId, Endpoint, EntityId, EntityKind, ScaleSet, Store};

use crate::error::{ClientPart, ClientRefusal, Error, store};
use crate::metrics::Metrics;

/// Gives the GitHub client for a scale set (one per entity, shared by its scale sets).
#[async_trait]
pub trait ClientFactory: Send + Sync {
    /// The client serving `scale_set`'s entity.
    async fn client(&self, scale_set: &ScaleSet) -> Result<Client, Error>;

    /// The client serving the entity `entity` (the orphan sweep asks every stored entity,
    /// whether or not a scale set of it is stored).
    async fn entity_client(&self, entity: EntityId) -> Result<Client, Error>;
}

type Configure = Arc<dyn Fn(ClientConfig) -> ClientConfig + Send + Sync>;

/// The clients of another factory, each reporting its calls to the controller's [`Metrics`]
/// (the embedder builds the factory before the controller's metrics exist; counting in the
/// client, once per call, is what keeps endpoint names from being typed by hand at each call).
pub(crate) struct Observed {
    factory: Arc<dyn ClientFactory>,
    metrics: Arc<Metrics>,
}

impl Observed {
    pub(crate) fn new(factory: Arc<dyn ClientFactory>, metrics: &Arc<Metrics>) -> Self {
        Self {
            factory,
            metrics: Arc::clone(metrics),
        }
    }
}

#[async_trait]
impl ClientFactory for Observed {
    async fn client(&self, scale_set: &ScaleSet) -> Result<Client, Error> {
        let client = self.factory.client(scale_set).await?;
        Ok(client.with_observer(self.metrics.clone()))
    }

    async fn entity_client(&self, entity: EntityId) -> Result<Client, Error> {
        let client = self.factory.entity_client(entity).await?;
        Ok(client.with_observer(self.metrics.clone()))
    }
}

/// `factory`'s clients, each reporting its calls to `metrics` (for an embedder's own calls,
/// e.g. the API's deletes, so they are counted as the controller's are).
pub fn observed_clients(
    factory: Arc<dyn ClientFactory>,
    metrics: &Arc<Metrics>,
) -> Arc<dyn ClientFactory> {
    Arc::new(Observed::new(factory, metrics))
}

/// Builds clients from the store: the entity's config URL under its credentials' endpoint, and
/// the credentials' PAT or GitHub App. Clients are cached per entity, and built once however
/// many scale sets ask at the same moment (each client runs its own token chain and holds its
/// own connections, so a client per scale set would cost a token chain and connections each).
pub struct StoreClientFactory {
    store: Arc<dyn Store>,
    configure: Configure,
    /// Each entity's client, with the credentials it was built from (what a rotation finds).
    cache: tokio::sync::Mutex<HashMap<EntityId, (CredentialsId, Client)>>,
}

impl std::fmt::Debug for StoreClientFactory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoreClientFactory").finish_non_exhaustive()
    }
}

impl StoreClientFactory {
    /// A factory reading `store`.
    pub fn new(store: Arc<dyn Store>) -> Self {
        Self {
            store,
            configure: Arc::new(|config| config),
            cache: tokio::sync::Mutex::new(HashMap::new()),
        }
    }

    /// Adjusts every client configuration before the client is built (retry policy,
    /// timeouts, user agent).
    #[must_use]
    pub fn with_config(
        mut self,
        configure: impl Fn(ClientConfig) -> ClientConfig + Send + Sync + 'static,
    ) -> Self {
        self.configure = Arc::new(configure);
        self
    }
}

#[async_trait]
impl ClientFactory for StoreClientFactory {
    async fn client(&self, scale_set: &ScaleSet) -> Result<Client, Error> {
        self.entity_client(scale_set.entity_id).await
    }

    async fn entity_client(&self, entity_id: EntityId) -> Result<Client, Error> {
        // Held while a missing client is built: the others asking for it wait, then share it.
        let mut cache = self.cache.lock().await;
        if let Some((_, client)) = cache.get(&entity_id) {
            return Ok(client.clone());
        }
        let entity = self
            .store
            .get_entity(entity_id)
            .await
            .map_err(store("reading the scale set's entity"))?;
        let credentials = self
            .store
            .get_credentials(entity.credentials_id)
            .await
            .map_err(store("reading the entity's credentials"))?;
        let client = build_client(
            &credentials.name,
            &credentials.endpoint,
            &credentials.auth,
            &entity.kind,
            self.configure.as_ref(),
        )?;
        cache.insert(entity_id, (credentials.id, client.clone()));
        Ok(client)
    }
}

impl StoreClientFactory {
    /// Hands a rotated secret of credentials `id` to every client built from them: each one's
    /// next token fetch uses it (clients built later read it from the store). Returns how many
    /// clients took it.
    ///
    /// # Errors
    ///
    /// [`Error::Client`] when the GitHub client refuses the new secret (the old one stays in
    /// use).
    pub async fn rotate(&self, id: CredentialsId, name: &str, auth: &Auth) -> Result<usize, Error> {
        let cache = self.cache.lock().await;
        let mut rotated = 0;
        let mut refused = None;
        for (credentials, client) in cache.values() {
            if *credentials != id {
                continue;
            }
            match client.rotate_credentials(github_credentials(auth)) {
                Ok(()) => rotated += 1,
                Err(e) => {
                    refused.get_or_insert(Error::Client {
                        credentials: name.to_owned(),
                        part: ClientPart::RotatedSecret,
                        source: e.into(),
                    });
                }
            }
        }
        refused.map_or(Ok(rotated), Err)
    }
}

/// The GitHub client's form of stored credentials.
fn github_credentials(auth: &Auth) -> Credentials {
    match auth {
        Auth::Pat { token } => Credentials::pat(token.clone()),
        // The JWT's issuer: the client id if the operator gave one, else the App ID. GitHub
        // accepts either.
        Auth::App {
            app,
            installation_id,
            private_key,
        } => Credentials::app(app.issuer(), *installation_id, private_key.clone()),
    }
}

/// A client for `kind` under an endpoint and its authentication (the store's credentials, or
/// declared ones not stored yet: the fleet planner's lookups).
pub fn build_client(
    name: &str,
    endpoint: &Endpoint,
    auth: &Auth,
    kind: &EntityKind,
    configure: &(dyn Fn(ClientConfig) -> ClientConfig + Send + Sync),
) -> Result<Client, Error> {
    let path = match kind {
        EntityKind::Enterprise { slug } => format!("enterprises/{slug}"),
        other => other.path(),
    };
    let base = endpoint.base_url.trim_end_matches('/');
    let refused = |part: ClientPart| {
        move |source: ClientRefusal| Error::Client {
            credentials: name.to_owned(),
            part,
            source,
        }
    };
    let url = ConfigUrl::parse(&format!("{base}/{path}"))
        .map_err(|e| refused(ClientPart::ConfigUrl)(e.into()))?;
    let mut config = ClientConfig::new(url, github_credentials(auth));
    let api =
        url_parse(&endpoint.api_base_url).map_err(|e| refused(ClientPart::ApiBaseUrl)(e.into()))?;
    config = config.with_api_base(api);
    if let Some(bundle) = &endpoint.ca_bundle {
        config = config.with_ca_bundle_pem(bundle.as_bytes().to_vec());
    } else if endpoint.system_trust {
        config = config.with_trust_roots(scaleset_github::TrustRoots::System);
    }
    Client::new(configure(config)).map_err(|e| refused(ClientPart::Build)(e.into()))
}

fn url_parse(text: &str) -> Result<url::Url, url::ParseError> {
    url::Url::parse(text)
}

#[cfg(test)]
mod tests {
    use scaleset_github::SecretString;
    use scaleset_store::{Auth, Endpoint, EntityKind};

    use super::build_client;

    /// The client built from a stored endpoint talks to exactly its API base URL (the
    /// factory once forced a stored `…/api/v3` over the client's `api.<tenant>.ghe.com`).
    #[tokio::test]
    async fn clients_talk_to_the_stored_api_base_url_for_github_com_ghe_com_and_ghes() {
        let org = EntityKind::Organization {
            name: "acme".to_owned(),
        };
        let auth = Auth::Pat {
            token: SecretString::from("ghp_x"),
        };
        for (base, api) in [
            ("https://github.com", "https://api.github.com"),
            ("https://acme.ghe.com", "https://api.acme.ghe.com"),
            (
                "https://ghes.example.com",
                "https://ghes.example.com/api/v3",
            ),
            ("http://127.0.0.1:8080", "http://127.0.0.1:8080/api/v3"),
        ] {
            let endpoint = Endpoint::parse(base, None, None).unwrap();
            assert_eq!(endpoint.api_base_url, api, "{base}");
            let client = build_client("c", &endpoint, &auth, &org, &|c| c).unwrap();
            assert_eq!(
                client.api_base().as_str().trim_end_matches('/'),
                api,
                "{base}"
            );
        }
    }
}
