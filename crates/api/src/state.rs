//! [`AppState`]: everything a handler reads, in one place, shared by every router mounted on
//! the server (this crate's resources, and the plan/apply, instance-metadata and status-page
//! modules). Build it once with [`AppState::new`] and hand it to [`crate::router`].

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use scaleset_control::{ClientFactory, ControllerIdentity, Metrics, Settings};
use scaleset_fleet::{ConfiguredFleet, DecommissionSource, ScaleSetKey};
use scaleset_store::{Clock, Store, SystemClock};

/// Request limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The largest request body accepted, in bytes (default 256 KiB: a CA bundle fits).
    pub max_body_bytes: usize,
    /// How many events a scale set's show includes (default 20).
    pub events_shown: u32,
    /// How many items a list answers when the request gives no `limit` (default
    /// [`crate::v1::DEFAULT_PAGE_LIMIT`]; at most [`crate::v1::MAX_PAGE_LIMIT`]). Tests make it
    /// small to page short lists.
    pub page_size: u32,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_body_bytes: 256 * 1024,
            events_shown: 20,
            page_size: crate::v1::DEFAULT_PAGE_LIMIT,
        }
    }
}

/// What the handlers share. Fields are public so that other modules' routers can read them.
pub struct AppState {
    /// The store.
    pub store: Arc<dyn Store>,
    /// This controller's identity (id, owner label, session owner).
    pub identity: ControllerIdentity,
    /// Where GitHub clients come from (per entity).
    pub clients: Arc<dyn ClientFactory>,
    /// The control loop's settings (adoption retry bounds, lease time).
    pub settings: Settings,
    /// The control crate's metrics (GitHub calls), shared with an in-process worker.
    pub metrics: Arc<Metrics>,
    /// Every metric of the process, served at `/metrics`.
    pub registry: Arc<Registry>,
    /// The lease holder name the API uses while it deletes (never a worker's name).
    pub api_holder: String,
    /// Request limits.
    pub limits: Limits,
    /// The server's version.
    pub version: &'static str,
    /// The providers scale sets may name (the configuration's `[[provider]]` names): a create
    /// or an update naming another is refused (empty until [`AppState::with_providers`]).
    pub providers: BTreeSet<String>,
    /// The worker's name when this process runs the control loop (`/readyz` then reports the
    /// leases it holds); `None` for an API-only server.
    pub worker: Option<String>,
    /// The clock `/readyz` compares lease expiry with.
    pub clock: Arc<dyn Clock>,
    /// Where decommissions come from: the worker's providers, so `None` for an API-only
    /// server (the decommission routes then answer `409 no_providers`).
    pub decommission: Option<DecommissionSource>,
    /// The fleet the configuration file declares (empty until [`AppState::with_configured`]):
    /// its scale sets' specs are the file's, and the API refuses to change them.
    pub configured: Arc<ConfiguredFleet>,
    /// Whether browsers reach this server over HTTPS (it serves TLS, or sits behind a
    /// TLS-terminating proxy): the sign-in cookie is then `Secure` and every answer carries
    /// `Strict-Transport-Security`.
    pub https: bool,
    pub(crate) http_metrics: HttpMetrics,
    pub(crate) fleet_metrics: FleetMetrics,
    /// The last "ours, undeclared" listing, for the status page and `/metrics`.
    pub(crate) ours_undeclared: Arc<crate::ours_undeclared::OursUndeclaredCache>,
}

impl std::fmt::Debug for AppState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AppState")
            .field("identity", &self.identity)
            .field("api_holder", &self.api_holder)
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

impl AppState {
    /// The state over `store`. `metrics` are the control crate's metrics when a worker runs in
    /// the same process (`Controller::metrics`), else `None` registers new ones in `registry`;
    /// the API's own request counter is registered there too. Register anything else in
    /// `registry` before this call: it is frozen behind an `Arc` here.
    pub fn new(
        store: Arc<dyn Store>,
        clients: Arc<dyn ClientFactory>,
        identity: ControllerIdentity,
        settings: Settings,
        metrics: Option<Arc<Metrics>>,
        mut registry: Registry,
    ) -> Self {
        let metrics = metrics.unwrap_or_else(|| Arc::new(Metrics::new(&mut registry)));
        // The API's own GitHub calls (a scale set's DELETE) are counted as the worker's are.
        let clients = scaleset_control::observed_clients(clients, &metrics);
        let http_metrics = HttpMetrics::new(&mut registry);
        crate::process_metrics::register(&mut registry);
        let fleet_metrics = FleetMetrics::new(&mut registry, metrics.fleet_role());
        let api_holder = format!("{}/api", settings.worker);
        Self {
            store,
            identity,
            clients,
            settings,
            metrics,
            registry: Arc::new(registry),
            api_holder,
            limits: Limits::default(),
            version: env!("CARGO_PKG_VERSION"),
            providers: BTreeSet::new(),
            worker: None,
            clock: Arc::new(SystemClock),
            decommission: None,
            configured: Arc::new(ConfiguredFleet::default()),
            https: false,
            http_metrics,
            fleet_metrics,
            ours_undeclared: Arc::default(),
        }
    }

    /// Replaces the request limits.
    #[must_use]
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Sets the providers scale sets may name.
    #[must_use]
    pub fn with_providers(mut self, names: impl IntoIterator<Item = String>) -> Self {
        self.providers = names.into_iter().collect();
        self
    }

    /// Says that this process runs the control loop as worker `name` (`/readyz` reports its
    /// leases).
    #[must_use]
    pub fn with_worker(mut self, name: impl Into<String>) -> Self {
        self.worker = Some(name.into());
        self
    }

    /// Serves decommissions from `source` (a server that runs the control loop).
    #[must_use]
    pub fn with_decommission(mut self, source: DecommissionSource) -> Self {
        self.decommission = Some(source);
        self
    }

    /// Says which scale sets the configuration file declares (and the file's path).
    #[must_use]
    pub fn with_configured(mut self, configured: ConfiguredFleet) -> Self {
        self.configured = Arc::new(configured);
        self
    }

    /// The keys of the scale sets the configuration file declares.
    pub(crate) fn configured_keys(&self) -> Vec<ScaleSetKey> {
        self.configured.keys()
    }

    /// Says whether browsers reach this server over HTTPS ([`AppState::https`]).
    #[must_use]
    pub fn with_https(mut self, https: bool) -> Self {
        self.https = https;
        self
    }

    /// Replaces the clock (tests).
    #[must_use]
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// Who serves scale set `set` (`enabled` or not) by its stored `lease`, now: in doubt
    /// too when the holder is this process's own worker and it could not renew the lease.
    pub(crate) fn served_by(
        &self,
        set: scaleset_store::ScaleSetId,
        enabled: bool,
        lease: Option<&scaleset_store::LeaseRecord>,
    ) -> Option<crate::v1::ServedBy> {
        let doubted_here = lease.is_some_and(|l| {
            self.worker.as_deref() == Some(l.holder.as_str()) && self.metrics.is_lease_in_doubt(set)
        });
        crate::view::served_by(enabled, lease, doubted_here, self.clock.now())
    }

    /// How long the lease taken by the API lasts.
    pub(crate) fn lease_ttl(&self) -> Duration {
        self.settings.lease_ttl
    }
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    method: String,
    route: String,
    status: u16,
}

/// `scaleset_api_requests_total{method, route, status}`.
#[derive(Debug, Clone)]
pub(crate) struct HttpMetrics {
    requests: Family<RequestLabels, Counter>,
}

impl HttpMetrics {
    fn new(registry: &mut Registry) -> Self {
        let requests = Family::<RequestLabels, Counter>::default();
        registry.register(
            "scaleset_api_requests",
            "API responses by method, matched route and status",
            requests.clone(),
        );
        Self { requests }
    }

    pub(crate) fn count(&self, method: &str, route: &str, status: u16) {
        self.requests
            .get_or_create(&RequestLabels {
                method: method.to_owned(),
                route: route.to_owned(),
                status,
            })
            .inc();
    }
}

impl AppState {
    /// Starts an "ours, undeclared" listing in the background when one is due
    /// ([`crate::ours_undeclared`]); returns at once.
    pub(crate) fn refresh_ours_undeclared(self: &Arc<Self>) {
        use crate::ours_undeclared::{Known, WITHIN};
        use scaleset_store::Timestamp;
        if !self.ours_undeclared.claim(tokio::time::Instant::now()) {
            return;
        }
        let state = Arc::clone(self);
        tokio::spawn(async move {
            let listed = scaleset_fleet::ours_undeclared(
                state.store.as_ref(),
                state.clients.as_ref(),
                &state.identity,
                &state.configured,
                WITHIN,
            )
            .await;
            let at = Timestamp::from_system_time(std::time::SystemTime::now());
            let known = match listed {
                Ok((found, unlisted)) => Known::Listed {
                    at,
                    found: found
                        .iter()
                        .map(|s| format!("{} ({})", s.name, s.entity))
                        .collect(),
                    unlisted: unlisted
                        .iter()
                        .map(|u| format!("{}: {}", u.entity, u.reason))
                        .collect(),
                },
                Err(e) => Known::Failed {
                    at,
                    reason: crate::error::chain(&e),
                },
            };
            if let Known::Listed {
                found, unlisted, ..
            } = &known
            {
                state
                    .fleet_metrics
                    .ours_undeclared
                    .set(i64::try_from(found.len()).unwrap_or(i64::MAX));
                state
                    .fleet_metrics
                    .ours_undeclared_unlisted
                    .set(i64::try_from(unlisted.len()).unwrap_or(i64::MAX));
            }
            state.ours_undeclared.finish(known);
        });
    }
}

/// `scaleset_scale_sets_not_declared`: set from the store at each scrape of `/metrics`, by the
/// process that exports the fleet-wide series only (the leading worker: a sum over every
/// scraped process counts each set once).
#[derive(Debug, Clone)]
pub(crate) struct FleetMetrics {
    pub(crate) not_declared: Gauge,
    pub(crate) ours_undeclared: Gauge,
    pub(crate) ours_undeclared_unlisted: Gauge,
}

impl FleetMetrics {
    fn new(registry: &mut Registry, role: scaleset_control::FleetRole) -> Self {
        let not_declared = Gauge::default();
        registry.register(
            "scaleset_scale_sets_not_declared",
            "Stored scale sets the configuration file does not declare: only in the database, \
             lost on a database loss (scalesetctl fleet export writes them as a fleet file; \
             exported by the leading worker only)",
            scaleset_control::FleetOnly::new(not_declared.clone(), role.clone()),
        );
        let ours_undeclared = Gauge::default();
        registry.register(
            "scaleset_scale_sets_ours_undeclared",
            "Scale sets on GitHub carrying our owner label that neither the store holds nor the \
             configuration file declares, at the last listing (every 10 minutes while the page \
             is viewed or /metrics scraped; exported by the leading worker only): declare each, \
             or decommission it",
            scaleset_control::FleetOnly::new(ours_undeclared.clone(), role.clone()),
        );
        let ours_undeclared_unlisted = Gauge::default();
        registry.register(
            "scaleset_ours_undeclared_unlisted_entities",
            "Entities the last ours-undeclared listing could not list (GitHub did not answer): \
             scaleset_scale_sets_ours_undeclared may miss their scale sets (exported by the \
             leading worker only)",
            scaleset_control::FleetOnly::new(ours_undeclared_unlisted.clone(), role),
        );
        Self {
            not_declared,
            ours_undeclared,
            ours_undeclared_unlisted,
        }
    }
}
