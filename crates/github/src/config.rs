//! Client configuration: the config URL and its [`Scope`], hosted-vs-GHES REST base derivation
//! (protocol §2), [`Credentials`], the custom CA bundle, timeouts and retry settings.

use std::collections::HashMap;
use std::fmt;
use std::num::NonZeroUsize;
use std::sync::Arc;
use std::time::Duration;

use url::Url;

use crate::error::{Error, Result};
use crate::observer::CallObserver;
use crate::retry::{
    RandomSource, RetryPolicy, SharedSleeper, Sleeper, TokioSleeper, thread_random,
};
use secrecy::SecretString;

/// The environment variable that makes every host count as GHES.
pub const FORCE_GHES_VAR: &str = "GITHUB_ACTIONS_FORCE_GHES";

/// What a config URL points at.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Scope {
    /// `https://HOST/{owner}/{repo}`.
    Repository {
        /// The owner (user or organization).
        owner: String,
        /// The repository name.
        repo: String,
    },
    /// `https://HOST/{org}`.
    Organization {
        /// The organization login.
        org: String,
    },
    /// `https://HOST/enterprises/{enterprise}`.
    Enterprise {
        /// The enterprise slug.
        enterprise: String,
    },
}

/// A parsed, validated config URL (`https://github.com/org`, `https://ghes.example/owner/repo`,
/// `https://github.com/enterprises/slug`, `http://127.0.0.1:PORT/org` …).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigUrl {
    raw: String,
    url: Url,
    scope: Scope,
    hosted: bool,
}

impl ConfigUrl {
    /// Parses a config URL: trims leading and trailing `/`, then reads the scope from the path.
    pub fn parse(input: &str) -> Result<Self> {
        let invalid = |reason: &str| Error::InvalidConfigUrl {
            url: input.to_owned(),
            reason: reason.to_owned(),
        };
        let raw = input.trim().trim_matches('/').to_owned();
        let url = Url::parse(&raw).map_err(|e| invalid(&format!("not a url: {e}")))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(invalid("the scheme must be http or https"));
        }
        let host = url
            .host_str()
            .ok_or_else(|| invalid("the url has no host"))?
            .to_ascii_lowercase();
        let segments: Vec<String> = url
            .path_segments()
            .map(|segments| {
                segments
                    .filter(|s| !s.is_empty())
                    .map(percent_decode)
                    .collect()
            })
            .unwrap_or_default();
        let scope = match segments.as_slice() {
            [org] => Scope::Organization { org: org.clone() },
            [first, enterprise] if first.eq_ignore_ascii_case("enterprises") => Scope::Enterprise {
                enterprise: enterprise.clone(),
            },
            [owner, repo] => Scope::Repository {
                owner: owner.clone(),
                repo: repo.clone(),
            },
            _ => {
                return Err(invalid(
                    "the url should point to an enterprise, org, or repository \
                     (https://HOST/enterprises/SLUG, https://HOST/ORG or https://HOST/OWNER/REPO)",
                ));
            }
        };
        let hosted = scaleset_domain::is_github_hosted(&host);
        Ok(Self {
            raw,
            url,
            scope,
            hosted,
        })
    }

    /// The URL exactly as configured, with leading and trailing slashes trimmed. This is what
    /// `runner-registration` receives.
    pub fn as_str(&self) -> &str {
        &self.raw
    }

    /// The parsed URL.
    pub fn url(&self) -> &Url {
        &self.url
    }

    /// The repository, organization or enterprise the URL points at.
    pub fn scope(&self) -> &Scope {
        &self.scope
    }

    /// True for github.com, www.github.com, github.localhost and `*.ghe.com`.
    pub fn is_hosted(&self) -> bool {
        self.hosted
    }

    /// The REST API base: `scheme://api.HOST` when hosted (and not forced to GHES),
    /// `scheme://HOST[:port]/api/v3` otherwise.
    pub fn api_base(&self, force_ghes: bool) -> Url {
        // The web base: the config URL without its entity path, query or fragment.
        let mut base = self.url.clone();
        base.set_query(None);
        base.set_fragment(None);
        base.set_path("");
        let api = if force_ghes {
            scaleset_domain::enterprise_api_base_url(&base)
        } else {
            scaleset_domain::api_base_url(&base)
        };
        // Derived from a valid URL by the one rule: it parses; keep the web base if not.
        Url::parse(&api).unwrap_or(base)
    }
}

impl fmt::Display for ConfigUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.raw)
    }
}

fn percent_decode(segment: &str) -> String {
    percent_encoding::percent_decode_str(segment)
        .decode_utf8_lossy()
        .into_owned()
}

/// A GitHub App installation used to mint installation tokens.
#[derive(Clone)]
pub struct GitHubApp {
    /// The App's client ID (or App ID); the JWT's `iss`.
    pub client_id: String,
    /// The installation id on the organization or repository.
    pub installation_id: i64,
    /// The App's PEM private key (PKCS#1 `RSA PRIVATE KEY` or PKCS#8 `PRIVATE KEY`).
    pub private_key: SecretString,
}

impl fmt::Debug for GitHubApp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GitHubApp")
            .field("client_id", &self.client_id)
            .field("installation_id", &self.installation_id)
            .field("private_key", &self.private_key)
            .finish()
    }
}

/// How the client authenticates to the GitHub REST API.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Credentials {
    /// A personal access token (required for enterprise scope).
    Pat(SecretString),
    /// A GitHub App installation (repository and organization scope only).
    App(GitHubApp),
}

impl Credentials {
    /// PAT credentials.
    pub fn pat(token: impl Into<SecretString>) -> Self {
        Self::Pat(token.into())
    }

    /// GitHub App credentials.
    pub fn app(
        client_id: impl Into<String>,
        installation_id: i64,
        private_key_pem: impl Into<SecretString>,
    ) -> Self {
        Self::App(GitHubApp {
            client_id: client_id.into(),
            installation_id,
            private_key: private_key_pem.into(),
        })
    }
}

/// Reads environment variables; tests pass a map instead of touching the process environment.
pub trait Environment {
    /// The value of `name`, if set.
    fn var(&self, name: &str) -> Option<String>;
}

/// The real process environment.
#[derive(Debug, Clone, Copy, Default)]
pub struct ProcessEnvironment;

impl Environment for ProcessEnvironment {
    fn var(&self, name: &str) -> Option<String> {
        std::env::var_os(name).map(|v| v.to_string_lossy().into_owned())
    }
}

impl Environment for HashMap<String, String> {
    fn var(&self, name: &str) -> Option<String> {
        self.get(name).cloned()
    }
}

/// Which certificate authorities the client trusts for `https://` URLs.
#[derive(Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum TrustRoots {
    /// The public web PKI roots built into the binary (`webpki-roots`): github.com and
    /// GHE.com, independent of the machine.
    #[default]
    BuiltIn,
    /// The operating system's trust store (read once, when the client is built): for a GHES
    /// whose CA the machine's administrators already installed.
    System,
    /// Only the CA certificates in this PEM bundle (a GHES with a private CA).
    CaBundle(Vec<u8>),
}

impl fmt::Debug for TrustRoots {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::BuiltIn => f.write_str("BuiltIn"),
            Self::System => f.write_str("System"),
            Self::CaBundle(pem) => write!(f, "CaBundle({} bytes)", pem.len()),
        }
    }
}

/// The HTTP proxies requests go through, and the hosts that bypass them.
///
/// A request to a host matched by `no_proxy` goes direct; otherwise an `https://` request goes
/// through `https` and an `http://` request through `http`, when set. Both are tunnelled with
/// `CONNECT` (TLS stays end to end). A proxy is an `http://[user:password@]host:port` URL
/// (`http://` is assumed when the scheme is missing); `user:password` is sent as
/// `Proxy-Authorization: Basic`. `no_proxy` is a comma-separated list of host names (each also
/// matching its subdomains, a leading `.` allowed), IP addresses, CIDR ranges, or `*` for all.
#[derive(Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ProxyConfig {
    /// The proxy for `http://` URLs.
    pub http: Option<String>,
    /// The proxy for `https://` URLs.
    pub https: Option<String>,
    /// Hosts that bypass the proxies.
    pub no_proxy: String,
}

impl ProxyConfig {
    /// No proxy: every request goes direct.
    pub fn none() -> Self {
        Self::default()
    }

    /// Reads `HTTPS_PROXY`, `HTTP_PROXY` and `NO_PROXY` (each also lower-case; the upper-case
    /// name wins, as in Go's `httpproxy.FromEnvironment`). Empty values count as unset. Like
    /// Go, `HTTP_PROXY` is ignored when `REQUEST_METHOD` is set (a CGI request could set it).
    pub fn from_env(env: &dyn Environment) -> Self {
        let first = |names: &[&str]| {
            names
                .iter()
                .find_map(|name| env.var(name).filter(|v| !v.trim().is_empty()))
        };
        let cgi = env.var("REQUEST_METHOD").is_some();
        Self {
            http: if cgi {
                None
            } else {
                first(&["HTTP_PROXY", "http_proxy"])
            },
            https: first(&["HTTPS_PROXY", "https_proxy"]),
            no_proxy: first(&["NO_PROXY", "no_proxy"]).unwrap_or_default(),
        }
    }

    /// Sets the proxy for `https://` URLs.
    pub fn with_https(mut self, proxy: impl Into<String>) -> Self {
        self.https = Some(proxy.into());
        self
    }

    /// Sets the proxy for `http://` URLs.
    pub fn with_http(mut self, proxy: impl Into<String>) -> Self {
        self.http = Some(proxy.into());
        self
    }

    /// Sets the hosts that bypass the proxies.
    pub fn with_no_proxy(mut self, no_proxy: impl Into<String>) -> Self {
        self.no_proxy = no_proxy.into();
        self
    }

    /// True when no proxy is set.
    pub fn is_none(&self) -> bool {
        self.http.is_none() && self.https.is_none()
    }
}

/// A proxy URL for logs and `Debug`: the password (and user) are replaced.
pub(crate) fn redacted_proxy(proxy: &str) -> String {
    match proxy.rsplit_once('@') {
        Some((before, host)) => {
            let scheme = before.split_once("://").map(|(s, _)| s);
            match scheme {
                Some(scheme) => format!("{scheme}://***@{host}"),
                None => format!("***@{host}"),
            }
        }
        None => proxy.to_owned(),
    }
}

/// For logs: `https=<proxy> http=<proxy> no_proxy=<hosts>`, credentials redacted, `direct`
/// for a scheme without a proxy and `-` for no bypass list (plain values, no Rust syntax).
impl fmt::Display for ProxyConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let proxy = |p: &Option<String>| {
            p.as_deref()
                .map_or_else(|| "direct".to_owned(), redacted_proxy)
        };
        let no_proxy = if self.no_proxy.is_empty() {
            "-"
        } else {
            self.no_proxy.as_str()
        };
        write!(
            f,
            "https={} http={} no_proxy={no_proxy}",
            proxy(&self.https),
            proxy(&self.http)
        )
    }
}

impl fmt::Debug for ProxyConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProxyConfig")
            .field("http", &self.http.as_deref().map(redacted_proxy))
            .field("https", &self.https.as_deref().map(redacted_proxy))
            .field("no_proxy", &self.no_proxy)
            .finish()
    }
}

/// Per-request timeouts.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Timeouts {
    /// Timeout of one attempt of an ordinary request (default 100 s).
    pub request: Duration,
    /// Timeout of one long-poll attempt; must exceed the server's hold of about 50 s
    /// (default 5 min, as the official clients use).
    pub long_poll: Duration,
    /// TCP connect timeout (default 30 s).
    pub connect: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Self {
            request: Duration::from_secs(100),
            long_poll: Duration::from_secs(300),
            connect: Duration::from_secs(30),
        }
    }
}

impl Timeouts {
    /// Timeouts with the given request and long-poll values and the default connect timeout.
    pub fn new(request: Duration, long_poll: Duration) -> Self {
        Self {
            request,
            long_poll,
            ..Self::default()
        }
    }
}

/// How the client uses HTTP/2.
///
/// By default `https://` hosts are asked for `h2` through ALPN (falling back to HTTP/1.1 when
/// they offer only `http/1.1`) and calls to a host that speaks it are multiplexed over a few
/// connections: a new one is opened when every connection carries as many streams as the server
/// allows (`SETTINGS_MAX_CONCURRENT_STREAMS`), as many as the calls need unless
/// `max_connections_per_host` bounds them. `http://` hosts
/// stay on HTTP/1.1 unless `prior_knowledge` is set (h2c). Calls through a proxy use HTTP/1.1.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Http2Config {
    /// Whether HTTP/2 is used at all (default `true`).
    pub enabled: bool,
    /// Speak HTTP/2 to `http://` hosts without negotiation (h2c by prior knowledge; default
    /// `false`). The server must support it.
    pub prior_knowledge: bool,
    /// The most HTTP/2 connections opened to one host; beyond it, requests wait for a free
    /// stream. `None` (the default): as many as the calls in flight need, which is about
    /// one per `SETTINGS_MAX_CONCURRENT_STREAMS` held long-polls. A fixed default (it was 128)
    /// left every long-poll beyond 128 × the server's stream limit unheard, with nothing to say
    /// so, once a worker served more scale sets of one host than that (12,800 at 100 streams).
    pub max_connections_per_host: Option<NonZeroUsize>,
    /// How often an HTTP/2 connection is pinged (default 30 s).
    pub keepalive_interval: Duration,
    /// How long a ping may go unanswered before the connection is dropped (default 20 s).
    pub keepalive_timeout: Duration,
}

impl Default for Http2Config {
    fn default() -> Self {
        Self {
            enabled: true,
            prior_knowledge: false,
            max_connections_per_host: None,
            keepalive_interval: Duration::from_secs(30),
            keepalive_timeout: Duration::from_secs(20),
        }
    }
}

impl Http2Config {
    /// HTTP/1.1 only.
    pub fn disabled() -> Self {
        Self {
            enabled: false,
            ..Self::default()
        }
    }

    /// Also speaks h2c (HTTP/2 by prior knowledge) to `http://` hosts.
    pub fn with_prior_knowledge(mut self) -> Self {
        self.prior_knowledge = true;
        self
    }

    /// Bounds the HTTP/2 connections per host (at least 1). Calls beyond the bound's streams
    /// wait for one to free up: a long-poll waiting there hears nothing.
    pub fn with_max_connections_per_host(mut self, max: usize) -> Self {
        self.max_connections_per_host = Some(NonZeroUsize::new(max).unwrap_or(NonZeroUsize::MIN));
        self
    }

    /// The keep-alive ping interval and how long a ping may go unanswered.
    pub fn with_keepalive(mut self, interval: Duration, timeout: Duration) -> Self {
        self.keepalive_interval = interval;
        self.keepalive_timeout = timeout;
        self
    }
}

/// Everything a [`Client`](crate::Client) needs. Build with [`ClientConfig::new`] and the
/// `with_*` methods.
#[derive(Clone)]
pub struct ClientConfig {
    pub(crate) config_url: ConfigUrl,
    pub(crate) credentials: Credentials,
    pub(crate) api_base: Option<Url>,
    pub(crate) force_ghes: bool,
    pub(crate) trust_roots: TrustRoots,
    pub(crate) proxy: ProxyConfig,
    pub(crate) http2: Http2Config,
    pub(crate) user_agent: String,
    pub(crate) retry: RetryPolicy,
    pub(crate) session_retry: Option<RetryPolicy>,
    pub(crate) timeouts: Timeouts,
    pub(crate) admin_token_margin: Duration,
    pub(crate) admin_token_fallback_ttl: Duration,
    pub(crate) sleeper: SharedSleeper,
    pub(crate) observer: Option<Arc<dyn CallObserver>>,
    pub(crate) random: RandomSource,
}

impl fmt::Debug for ClientConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientConfig")
            .field("config_url", &self.config_url.as_str())
            .field("credentials", &self.credentials)
            .field("api_base", &self.api_base.as_ref().map(Url::as_str))
            .field("force_ghes", &self.force_ghes)
            .field("trust_roots", &self.trust_roots)
            .field("proxy", &self.proxy)
            .field("http2", &self.http2)
            .field("user_agent", &self.user_agent)
            .field("retry", &self.retry)
            .field("timeouts", &self.timeouts)
            .field("observed", &self.observer.is_some())
            .finish_non_exhaustive()
    }
}

impl ClientConfig {
    /// A configuration with defaults: derived REST base, public web PKI roots, no proxy,
    /// 5 attempts with 1-30 s backoff, 100 s request and 5 min long-poll timeouts, 60 s
    /// admin-token margin.
    pub fn new(config_url: ConfigUrl, credentials: Credentials) -> Self {
        Self {
            config_url,
            credentials,
            api_base: None,
            force_ghes: false,
            trust_roots: TrustRoots::default(),
            proxy: ProxyConfig::default(),
            http2: Http2Config::default(),
            user_agent: format!("scaleset-github/{}", env!("CARGO_PKG_VERSION")),
            retry: RetryPolicy::default(),
            session_retry: None,
            timeouts: Timeouts::default(),
            admin_token_margin: Duration::from_secs(60),
            admin_token_fallback_ttl: Duration::from_secs(300),
            sleeper: Arc::new(TokioSleeper),
            observer: None,
            random: thread_random(),
        }
    }

    /// Uses this REST API base instead of deriving it from the config URL
    /// (e.g. `http://127.0.0.1:PORT/api/v3`).
    pub fn with_api_base(mut self, api_base: Url) -> Self {
        self.api_base = Some(api_base);
        self
    }

    /// Treats the host as GHES (`HOST/api/v3`) even when it looks hosted.
    pub fn with_force_ghes(mut self, force: bool) -> Self {
        self.force_ghes = force;
        self
    }

    /// Sets "force GHES" when [`FORCE_GHES_VAR`] is set (to any value) in `env`.
    pub fn with_force_ghes_from_env(mut self, env: &dyn Environment) -> Self {
        if env.var(FORCE_GHES_VAR).is_some() {
            self.force_ghes = true;
        }
        self
    }

    /// Trusts the CA certificates in this PEM bundle instead of the public web PKI roots
    /// (the same as `with_trust_roots(TrustRoots::CaBundle(pem))`).
    pub fn with_ca_bundle_pem(mut self, pem: impl Into<Vec<u8>>) -> Self {
        self.trust_roots = TrustRoots::CaBundle(pem.into());
        self
    }

    /// Chooses which certificate authorities are trusted (default: the built-in web PKI roots).
    pub fn with_trust_roots(mut self, roots: TrustRoots) -> Self {
        self.trust_roots = roots;
        self
    }

    /// How HTTP/2 is used (default: negotiated through ALPN on `https://`, see
    /// [`Http2Config`]).
    pub fn with_http2(mut self, http2: Http2Config) -> Self {
        self.http2 = http2;
        self
    }

    /// Sends requests through these proxies (default: none, every request goes direct).
    pub fn with_proxy(mut self, proxy: ProxyConfig) -> Self {
        self.proxy = proxy;
        self
    }

    /// Sends requests through the proxies named by `HTTPS_PROXY`, `HTTP_PROXY` and `NO_PROXY`
    /// in `env`, as the official (Go) client does by default; see [`ProxyConfig::from_env`].
    /// Pass [`ProcessEnvironment`] for the real environment.
    pub fn with_proxy_from_env(self, env: &dyn Environment) -> Self {
        self.with_proxy(ProxyConfig::from_env(env))
    }

    /// Sets the `User-Agent` header.
    pub fn with_user_agent(mut self, user_agent: impl Into<String>) -> Self {
        self.user_agent = user_agent.into();
        self
    }

    /// Sets the retry policy of every call.
    pub fn with_retry(mut self, retry: RetryPolicy) -> Self {
        self.retry = retry;
        self
    }

    /// Sets a separate retry policy for the message-queue calls (GET/DELETE message,
    /// acquirejobs); by default they use the main policy.
    pub fn with_session_retry(mut self, retry: RetryPolicy) -> Self {
        self.session_retry = Some(retry);
        self
    }

    /// Sets the per-request timeouts.
    pub fn with_timeouts(mut self, timeouts: Timeouts) -> Self {
        self.timeouts = timeouts;
        self
    }

    /// Refresh the admin token when it expires within this margin (default 60 s).
    pub fn with_admin_token_margin(mut self, margin: Duration) -> Self {
        self.admin_token_margin = margin;
        self
    }

    /// How long an admin token without a readable `exp` claim is used (default 5 min).
    pub fn with_admin_token_fallback_ttl(mut self, ttl: Duration) -> Self {
        self.admin_token_fallback_ttl = ttl;
        self
    }

    /// Replaces how retry waits are performed (tests record the waits instead of sleeping).
    pub fn with_sleeper(mut self, sleeper: Arc<dyn Sleeper>) -> Self {
        self.sleeper = sleeper;
        self
    }

    /// Tells `observer` about every finished call (metrics: count calls by endpoint and outcome).
    pub fn with_observer(mut self, observer: Arc<dyn CallObserver>) -> Self {
        self.observer = Some(observer);
        self
    }

    /// Replaces the random draws that jitter the retry backoff (default `fastrand::f64`; tests
    /// pass a fixed draw, e.g. `1.0` for the full backoff, to read the schedule exactly).
    pub fn with_random_source(mut self, random: RandomSource) -> Self {
        self.random = random;
        self
    }

    /// The config URL.
    pub fn config_url(&self) -> &ConfigUrl {
        &self.config_url
    }

    /// The REST API base in effect: the override, or the one derived from the config URL.
    pub fn api_base(&self) -> Url {
        self.api_base
            .clone()
            .unwrap_or_else(|| self.config_url.api_base(self.force_ghes))
    }
}

#[cfg(test)]
mod tests;
