//! The HTTP/2 pool: a few multiplexed connections per host carrying every call to hosts that
//! speak HTTP/2, so thousands of held long-polls share a handful of sockets.
//!
//! hyper-util's legacy pool opens no second HTTP/2 connection when the server's
//! `SETTINGS_MAX_CONCURRENT_STREAMS` is reached: extra requests wait behind held long-polls
//! (hyperium/hyper issues 2197 and 3623). This pool, over the `h2` crate directly (hyper's
//! `conn::http2` does not expose the server's limit), counts the streams each connection
//! carries against the limit the server advertised, gives a request the least loaded connection
//! with a free stream, and opens a new connection when every one is full (up to a bound per host
//! when one is configured; beyond it, requests queue inside `h2` for a free stream). Each
//! connection is checked with a ping once open (which also makes sure the server's SETTINGS
//! were applied) and then every keep-alive interval; a connection that misses a ping is dropped.
//!
//! A request the server never processed (refused by `GOAWAY`, or the connection was already
//! closing) is sent again on another connection at once: that is safe for any call. A request
//! lost on a connection that died after sending it fails as a transport error, and the caller's
//! retry rules decide.
//!
//! Host names are resolved once per host (and again only after connecting to every address
//! failed), so opening many connections does not spawn a blocking DNS lookup each.

use std::collections::HashMap;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use h2::client::SendRequest;
use rustls_pki_types::ServerName;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;

use crate::config::Http2Config;

/// How many times a request the server never processed is moved to another connection.
const MAX_UNPROCESSED_RESENDS: u32 = 3;

/// Why the pool could not deliver a response.
#[derive(Debug)]
pub(crate) enum PoolError {
    /// The TLS handshake failed (an untrusted certificate, a refused handshake): not retried.
    Tls(std::io::Error),
    /// Resolving, connecting or the HTTP/2 exchange failed; the caller's retry rules apply.
    Transport(Box<dyn std::error::Error + Send + Sync>),
    /// The response body exceeded the limit.
    TooLarge(usize),
}

impl PoolError {
    fn transport(error: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Self {
        Self::Transport(error.into())
    }
}

/// One host's identity in the pool.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct HostKey {
    https: bool,
    host: String,
    port: u16,
}

/// A host's connections and what is known of it.
struct Host {
    key: HostKey,
    /// Resolved once; cleared when no address could be connected to.
    addrs: Mutex<Option<Arc<[SocketAddr]>>>,
    /// ALPN offered only `http/1.1`: its calls go through the HTTP/1.1 pool.
    http1_only: AtomicBool,
    conns: Mutex<Vec<Arc<Conn>>>,
    /// Held while a connection is opened, so a burst of requests opens one at a time.
    opening: tokio::sync::Mutex<()>,
}

/// One HTTP/2 connection.
struct Conn {
    send: SendRequest<Bytes>,
    /// Streams this pool has open on it.
    in_flight: AtomicUsize,
    /// The server's `SETTINGS_MAX_CONCURRENT_STREAMS`, kept current by the connection task.
    limit: Arc<AtomicUsize>,
    /// Set when the connection ended, went away or missed a keep-alive ping.
    closed: Arc<AtomicBool>,
}

impl Conn {
    fn has_room(&self) -> bool {
        self.in_flight.load(Ordering::SeqCst) < self.limit.load(Ordering::SeqCst)
    }

    fn usable(&self) -> bool {
        !self.closed.load(Ordering::SeqCst)
    }
}

/// A stream counted on a connection for as long as it lives.
struct Stream(Arc<Conn>);

impl Stream {
    fn take(conn: &Arc<Conn>) -> Self {
        conn.in_flight.fetch_add(1, Ordering::SeqCst);
        Self(conn.clone())
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}

/// What a name lookup returns.
type Lookup = Pin<Box<dyn Future<Output = std::io::Result<Vec<SocketAddr>>> + Send>>;

/// How a host name and port become addresses: the system resolver (tokio's `lookup_host`, a
/// blocking lookup on the blocking pool); the pool's tests pass one that counts its calls.
type Resolver = Arc<dyn Fn(String, u16) -> Lookup + Send + Sync>;

/// The system resolver.
fn system_resolver() -> Resolver {
    Arc::new(|host: String, port: u16| -> Lookup {
        Box::pin(async move {
            Ok(tokio::net::lookup_host((host.as_str(), port))
                .await?
                .collect())
        })
    })
}

/// The pool of HTTP/2 connections, shared by every call of a client.
pub(crate) struct H2Pool {
    config: Http2Config,
    tls: tokio_rustls::TlsConnector,
    connect_timeout: Duration,
    resolve: Resolver,
    hosts: Mutex<HashMap<HostKey, Arc<Host>>>,
}

impl std::fmt::Debug for H2Pool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("H2Pool")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

/// Locks a mutex, recovering the data if a panicking thread poisoned it.
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A complete response.
pub(crate) type Answer = (http::response::Parts, Bytes);

impl H2Pool {
    /// A pool using `tls` (its ALPN list is replaced by `h2`, `http/1.1`).
    pub(crate) fn new(
        config: Http2Config,
        tls: &rustls::ClientConfig,
        connect_timeout: Duration,
    ) -> Self {
        let mut tls = tls.clone();
        tls.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        Self {
            config,
            tls: tokio_rustls::TlsConnector::from(Arc::new(tls)),
            connect_timeout,
            resolve: system_resolver(),
            hosts: Mutex::new(HashMap::new()),
        }
    }

    /// The same pool resolving names through `resolve` instead of the system resolver.
    #[cfg(test)]
    fn with_resolver(mut self, resolve: Resolver) -> Self {
        self.resolve = resolve;
        self
    }

    /// Whether calls to `url` may go over HTTP/2: `https://` when HTTP/2 is enabled (ALPN
    /// decides), `http://` only with prior knowledge (h2c).
    pub(crate) fn wants(&self, url: &url::Url) -> bool {
        match url.scheme() {
            "https" => self.config.enabled,
            "http" => self.config.enabled && self.config.prior_knowledge,
            _ => false,
        }
    }

    /// Sends `request` over HTTP/2 and reads the whole body (at most `max_body` bytes).
    /// `Ok(Err(request))`: the host offered only HTTP/1.1 through ALPN; the request is handed
    /// back to be sent there (so the caller keeps no copy of it while a long-poll waits).
    pub(crate) async fn send(
        &self,
        url: &url::Url,
        request: http::Request<()>,
        body: Bytes,
        max_body: usize,
    ) -> Result<Result<Answer, http::Request<()>>, PoolError> {
        let key = HostKey {
            https: url.scheme() == "https",
            // `[::1]` in a URL is `::1` to the resolver and to TLS.
            host: url
                .host_str()
                .unwrap_or_default()
                .trim_start_matches('[')
                .trim_end_matches(']')
                .to_owned(),
            port: url.port_or_known_default().unwrap_or(443),
        };
        let host = {
            let mut hosts = lock(&self.hosts);
            hosts
                .entry(key.clone())
                .or_insert_with(|| {
                    Arc::new(Host {
                        key,
                        addrs: Mutex::new(None),
                        http1_only: AtomicBool::new(false),
                        conns: Mutex::new(Vec::new()),
                        opening: tokio::sync::Mutex::new(()),
                    })
                })
                .clone()
        };
        let (parts, ()) = request.into_parts();
        let mut resends = 0;
        loop {
            // Boxed: opening a connection (TCP, TLS, HTTP/2 handshake) is rare and its future
            // large; a waiting request keeps only its exchange.
            let Some(stream) = Box::pin(self.checkout(&host)).await? else {
                return Ok(Err(http::Request::from_parts(parts, ())));
            };
            let request = http::Request::from_parts(parts.clone(), ());
            match exchange(&stream.0, request, body.clone(), max_body).await {
                Ok(answer) => return Ok(Ok(answer)),
                Err(Failure::Unprocessed(error)) => {
                    stream.0.closed.store(true, Ordering::SeqCst);
                    resends += 1;
                    if resends > MAX_UNPROCESSED_RESENDS {
                        return Err(PoolError::Transport(error));
                    }
                    tracing::debug!(%error, "request not processed; sending it on another connection");
                }
                Err(Failure::Other(error)) => return Err(error),
            }
        }
    }

    /// A stream on the least loaded connection with room, opening a connection when every one
    /// is full; `None` when the host speaks only HTTP/1.1.
    async fn checkout(&self, host: &Arc<Host>) -> Result<Option<Stream>, PoolError> {
        if host.http1_only.load(Ordering::SeqCst) {
            return Ok(None);
        }
        if let Some(stream) = least_loaded(host, true) {
            return Ok(Some(stream));
        }
        let _opening = host.opening.lock().await;
        // Another request may have opened a connection while this one waited.
        if let Some(stream) = least_loaded(host, true) {
            return Ok(Some(stream));
        }
        if host.http1_only.load(Ordering::SeqCst) {
            return Ok(None);
        }
        if self
            .config
            .max_connections_per_host
            .is_some_and(|max| lock(&host.conns).len() >= max.get())
            && let Some(stream) = least_loaded(host, false)
        {
            // At the bound: the request waits inside h2 for a free stream.
            return Ok(Some(stream));
        }
        let Some(conn) = self.connect(host).await? else {
            host.http1_only.store(true, Ordering::SeqCst);
            return Ok(None);
        };
        let stream = Stream::take(&conn);
        lock(&host.conns).push(conn);
        Ok(Some(stream))
    }

    /// Opens one connection to `host`; `None` when ALPN chose HTTP/1.1.
    async fn connect(&self, host: &Host) -> Result<Option<Arc<Conn>>, PoolError> {
        let tcp = self.tcp(host).await?;
        if !host.key.https {
            return self.start(tcp).await.map(Some);
        }
        let name = ServerName::try_from(host.key.host.clone()).map_err(PoolError::transport)?;
        let tls = tokio::time::timeout(self.connect_timeout, self.tls.connect(name, tcp))
            .await
            .map_err(|_| PoolError::transport("TLS handshake timed out"))?
            .map_err(|e| {
                if e.get_ref()
                    .is_some_and(|inner| inner.downcast_ref::<rustls::Error>().is_some())
                {
                    PoolError::Tls(e)
                } else {
                    PoolError::transport(e)
                }
            })?;
        if tls.get_ref().1.alpn_protocol() != Some(b"h2") {
            tracing::debug!(host = %host.key.host, "ALPN chose HTTP/1.1; using the HTTP/1.1 pool");
            return Ok(None);
        }
        self.start(tls).await.map(Some)
    }

    /// A TCP connection to one of the host's addresses, resolving the name only the first time.
    async fn tcp(&self, host: &Host) -> Result<TcpStream, PoolError> {
        let cached = lock(&host.addrs).clone();
        let addrs = match cached {
            Some(addrs) => addrs,
            None => {
                let resolved: Arc<[SocketAddr]> =
                    (self.resolve)(host.key.host.clone(), host.key.port)
                        .await
                        .map_err(PoolError::transport)?
                        .into();
                *lock(&host.addrs) = Some(resolved.clone());
                resolved
            }
        };
        let mut last = None;
        for addr in addrs.iter() {
            match tokio::time::timeout(self.connect_timeout, TcpStream::connect(addr)).await {
                Ok(Ok(tcp)) => {
                    let _ = tcp.set_nodelay(true);
                    return Ok(tcp);
                }
                Ok(Err(error)) => last = Some(PoolError::transport(error)),
                Err(_) => last = Some(PoolError::transport(format!("connect to {addr} timed out"))),
            }
        }
        // The addresses may have moved: resolve again next time.
        *lock(&host.addrs) = None;
        Err(last.unwrap_or_else(|| PoolError::transport("the host name resolved to no address")))
    }

    /// The HTTP/2 handshake on `io`, the connection task, a first ping (after which the
    /// server's SETTINGS, sent first, are applied) and the keep-alive task.
    #[allow(
        clippy::disallowed_methods,
        reason = "the keep-alive pings every interval"
    )]
    async fn start<T>(&self, io: T) -> Result<Arc<Conn>, PoolError>
    where
        T: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        let (send, mut connection) = h2::client::Builder::new()
            // Until the server's SETTINGS arrive, assume one stream.
            .initial_max_send_streams(1)
            .handshake::<_, Bytes>(io)
            .await
            .map_err(PoolError::transport)?;
        let mut ping_pong = connection
            .ping_pong()
            .ok_or_else(|| PoolError::transport("HTTP/2 ping unavailable"))?;
        let limit = Arc::new(AtomicUsize::new(1));
        let closed = Arc::new(AtomicBool::new(false));
        let driver = tokio::spawn({
            let (limit, closed) = (limit.clone(), closed.clone());
            async move {
                let result = std::future::poll_fn(|cx| {
                    let polled = Pin::new(&mut connection).poll(cx);
                    limit.store(connection.max_concurrent_send_streams(), Ordering::SeqCst);
                    polled
                })
                .await;
                closed.store(true, Ordering::SeqCst);
                if let Err(error) = result {
                    tracing::debug!(%error, "HTTP/2 connection ended");
                }
            }
        });
        let first = tokio::time::timeout(
            self.config.keepalive_timeout,
            ping_pong.ping(h2::Ping::opaque()),
        )
        .await;
        if !matches!(first, Ok(Ok(_))) {
            driver.abort();
            return Err(PoolError::transport(
                "the new HTTP/2 connection answered no ping",
            ));
        }
        let (interval, timeout) = (
            self.config.keepalive_interval,
            self.config.keepalive_timeout,
        );
        tokio::spawn({
            let closed = closed.clone();
            let abort = driver.abort_handle();
            async move {
                loop {
                    tokio::time::sleep(interval).await;
                    if closed.load(Ordering::SeqCst) {
                        return;
                    }
                    let pong = tokio::time::timeout(timeout, ping_pong.ping(h2::Ping::opaque()));
                    if !matches!(pong.await, Ok(Ok(_))) {
                        tracing::debug!("HTTP/2 connection missed a keep-alive ping; dropping it");
                        closed.store(true, Ordering::SeqCst);
                        abort.abort();
                        return;
                    }
                }
            }
        });
        Ok(Arc::new(Conn {
            send,
            in_flight: AtomicUsize::new(0),
            limit,
            closed,
        }))
    }
}

/// The least loaded usable connection (with a free stream when `with_room`), its stream taken.
fn least_loaded(host: &Host, with_room: bool) -> Option<Stream> {
    let mut conns = lock(&host.conns);
    conns.retain(|c| c.usable());
    conns
        .iter()
        .filter(|c| !with_room || c.has_room())
        .min_by_key(|c| c.in_flight.load(Ordering::SeqCst))
        .map(Stream::take)
}

/// How one exchange failed.
enum Failure {
    /// The server never processed the request: safe to send again anywhere.
    Unprocessed(Box<dyn std::error::Error + Send + Sync>),
    /// Anything else.
    Other(PoolError),
}

/// Whether an h2 error says the stream was refused unprocessed (`GOAWAY` below its id, or
/// `REFUSED_STREAM`).
fn unprocessed(error: &h2::Error) -> bool {
    (error.is_go_away() && error.is_remote()) || error.reason() == Some(h2::Reason::REFUSED_STREAM)
}

/// One request and its whole response on `conn`.
async fn exchange(
    conn: &Conn,
    request: http::Request<()>,
    body: Bytes,
    max_body: usize,
) -> Result<Answer, Failure> {
    // Before a stream is opened nothing reached the server.
    let mut send = conn
        .send
        .clone()
        .ready()
        .await
        .map_err(|e| Failure::Unprocessed(e.into()))?;
    let (response, mut stream) = send
        .send_request(request, body.is_empty())
        .map_err(|e| Failure::Unprocessed(e.into()))?;
    let sent = async {
        if !body.is_empty() {
            stream.send_data(body, true)?;
        }
        response.await
    };
    let response = sent.await.map_err(|e| {
        if unprocessed(&e) {
            Failure::Unprocessed(e.into())
        } else {
            Failure::Other(PoolError::transport(e))
        }
    })?;
    let (parts, mut recv) = response.into_parts();
    let mut collected = BytesMut::new();
    while let Some(chunk) = recv.data().await {
        let chunk = chunk.map_err(|e| Failure::Other(PoolError::transport(e)))?;
        let _ = recv.flow_control().release_capacity(chunk.len());
        if collected.len() + chunk.len() > max_body {
            return Err(Failure::Other(PoolError::TooLarge(max_body)));
        }
        collected.extend_from_slice(&chunk);
    }
    Ok((parts, collected.freeze()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A client TLS configuration trusting nothing (the tests speak h2c).
    fn client_tls() -> rustls::ClientConfig {
        let tls = rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .map(|b| {
            b.with_root_certificates(rustls::RootCertStore::empty())
                .with_no_client_auth()
        });
        let Ok(tls) = tls else {
            panic!("ring offers the default protocol versions");
        };
        tls
    }

    #[test]
    fn only_refused_streams_count_as_unprocessed() {
        assert!(unprocessed(&h2::Error::from(h2::Reason::REFUSED_STREAM)));
        assert!(!unprocessed(&h2::Error::from(h2::Reason::CANCEL)));
        assert!(!unprocessed(&h2::Error::from(h2::Reason::INTERNAL_ERROR)));
    }

    #[test]
    fn http_targets_use_h2_only_with_prior_knowledge() {
        let tls = client_tls();
        let https = url::Url::parse("https://example.invalid/x").ok();
        let http = url::Url::parse("http://example.invalid/x").ok();
        let (Some(https), Some(http)) = (https, http) else {
            panic!("literal URLs parse");
        };
        let timeout = Duration::from_secs(1);
        let default = H2Pool::new(Http2Config::default(), &tls, timeout);
        assert!(default.wants(&https));
        assert!(!default.wants(&http));
        let h2c = H2Pool::new(Http2Config::default().with_prior_knowledge(), &tls, timeout);
        assert!(h2c.wants(&http));
        let off = H2Pool::new(Http2Config::disabled(), &tls, timeout);
        assert!(!off.wants(&https));
        assert!(!off.wants(&http));
    }

    /// A listener on a free loopback port, and its address.
    async fn loopback() -> (tokio::net::TcpListener, SocketAddr) {
        let listener = match tokio::net::TcpListener::bind("127.0.0.1:0").await {
            Ok(listener) => listener,
            Err(error) => panic!("cannot bind loopback: {error}"),
        };
        let addr = match listener.local_addr() {
            Ok(addr) => addr,
            Err(error) => panic!("no local address: {error}"),
        };
        (listener, addr)
    }

    /// An h2c server on loopback answering every request 200; `freeze` makes every connection
    /// open at that moment stop reading (no answer to pings) without closing its socket.
    async fn h2c_server() -> (SocketAddr, Arc<tokio::sync::Notify>, Arc<AtomicUsize>) {
        let (listener, addr) = loopback().await;
        let freeze = Arc::new(tokio::sync::Notify::new());
        let accepted = Arc::new(AtomicUsize::new(0));
        let (f, a) = (freeze.clone(), accepted.clone());
        tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                a.fetch_add(1, Ordering::SeqCst);
                let freeze = f.clone();
                tokio::spawn(async move {
                    let Ok(mut conn) = h2::server::handshake(socket).await else {
                        return;
                    };
                    loop {
                        tokio::select! {
                            next = conn.accept() => match next {
                                Some(Ok((_, mut respond))) => {
                                    let _ = respond.send_response(http::Response::new(()), true);
                                }
                                _ => return,
                            },
                            () = freeze.notified() => {
                                // Keep the socket open, read nothing more.
                                std::future::pending::<()>().await;
                            }
                        }
                    }
                });
            }
        });
        (addr, freeze, accepted)
    }

    #[tokio::test]
    async fn a_connection_that_misses_a_keepalive_ping_is_replaced() {
        let (addr, freeze, accepted) = h2c_server().await;
        let tls = client_tls();
        let config = Http2Config::default()
            .with_prior_knowledge()
            .with_keepalive(Duration::from_millis(20), Duration::from_millis(50));
        let pool = H2Pool::new(config, &tls, Duration::from_secs(5));
        let Ok(url) = url::Url::parse(&format!("http://{addr}/x")) else {
            panic!("a loopback URL parses");
        };
        let request = || {
            http::Request::get(url.as_str())
                .body(())
                .unwrap_or_else(|e| panic!("a GET builds: {e}"))
        };
        let first = pool.send(&url, request(), Bytes::new(), 1024).await;
        assert!(matches!(first, Ok(Ok((ref parts, _))) if parts.status == 200));
        assert_eq!(accepted.load(Ordering::SeqCst), 1);

        freeze.notify_waiters();
        scaleset_eventually::eventually_holds(
            "the frozen connection is dropped after a missed ping",
            || {
                lock(&pool.hosts)
                    .values()
                    .all(|host| lock(&host.conns).iter().all(|c| !c.usable()))
            },
        )
        .await;
        let second = pool.send(&url, request(), Bytes::new(), 1024).await;
        assert!(matches!(second, Ok(Ok((ref parts, _))) if parts.status == 200));
        assert_eq!(accepted.load(Ordering::SeqCst), 2, "a new connection");
    }

    /// An h2c server whose first connection holds its first request (a long-poll), refuses
    /// the second with `REFUSED_STREAM`, sends `GOAWAY` and then answers the held one 202;
    /// later connections answer 200. Counts connections and refused streams, and says whether
    /// it holds the poll.
    async fn goaway_server() -> (
        SocketAddr,
        Arc<AtomicUsize>,
        Arc<AtomicUsize>,
        Arc<AtomicBool>,
    ) {
        let (listener, addr) = loopback().await;
        let accepted = Arc::new(AtomicUsize::new(0));
        let refused = Arc::new(AtomicUsize::new(0));
        let holding = Arc::new(AtomicBool::new(false));
        let (a, r, h) = (accepted.clone(), refused.clone(), holding.clone());
        tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                let first = a.fetch_add(1, Ordering::SeqCst) == 0;
                let refused = r.clone();
                let holding = h.clone();
                tokio::spawn(async move {
                    let Ok(mut conn) = h2::server::handshake(socket).await else {
                        return;
                    };
                    let mut held = None;
                    while let Some(Ok((_, mut respond))) = conn.accept().await {
                        if !first {
                            let _ = respond.send_response(http::Response::new(()), true);
                        } else if held.is_none() {
                            held = Some(respond);
                            holding.store(true, Ordering::SeqCst);
                        } else {
                            respond.send_reset(h2::Reason::REFUSED_STREAM);
                            refused.fetch_add(1, Ordering::SeqCst);
                            conn.graceful_shutdown();
                            if let Some(mut poll) = held.take() {
                                let mut empty = http::Response::new(());
                                *empty.status_mut() = http::StatusCode::ACCEPTED;
                                let _ = poll.send_response(empty, true);
                            }
                        }
                    }
                });
            }
        });
        (addr, accepted, refused, holding)
    }

    /// A stream the server refused when it went away (GOAWAY mid-poll) is resent on a new
    /// connection by the pool itself: both requests are answered, the held poll where it
    /// was, the refused one on the second connection. Fails if the resend is disabled
    /// (`MAX_UNPROCESSED_RESENDS` 0 gives the refusal to the caller).
    #[tokio::test]
    async fn a_stream_refused_at_goaway_is_resent_on_another_connection() {
        let (addr, accepted, refused, holding) = goaway_server().await;
        let tls = client_tls();
        let pool = Arc::new(H2Pool::new(
            Http2Config::default().with_prior_knowledge(),
            &tls,
            Duration::from_secs(5),
        ));
        let Ok(url) = url::Url::parse(&format!("http://{addr}/x")) else {
            panic!("a loopback URL parses");
        };
        let request = || {
            http::Request::get(url.as_str())
                .body(())
                .unwrap_or_else(|e| panic!("a GET builds: {e}"))
        };
        let poll = tokio::spawn({
            let (pool, url, request) = (pool.clone(), url.clone(), request());
            async move { pool.send(&url, request, Bytes::new(), 1024).await }
        });
        // The poll's stream is held by the server before the second request goes out.
        scaleset_eventually::eventually_holds("the server holds the poll", || {
            holding.load(Ordering::SeqCst)
        })
        .await;
        let second = pool.send(&url, request(), Bytes::new(), 1024).await;
        assert!(
            matches!(second, Ok(Ok((ref parts, _))) if parts.status == 200),
            "the refused request was resent and answered: {second:?}"
        );
        let first = poll.await.unwrap_or_else(|e| panic!("the poll task: {e}"));
        assert!(
            matches!(first, Ok(Ok((ref parts, _))) if parts.status == 202),
            "the held poll is answered on its own connection: {first:?}"
        );
        assert_eq!(refused.load(Ordering::SeqCst), 1, "one stream was refused");
        assert_eq!(
            accepted.load(Ordering::SeqCst),
            2,
            "resent on a new connection"
        );
    }

    /// An h2c server allowing one stream per connection that holds every request until
    /// `release` turns true, then answers 200; counts connections.
    async fn one_stream_server() -> (
        SocketAddr,
        Arc<AtomicUsize>,
        tokio::sync::watch::Sender<bool>,
    ) {
        let (listener, addr) = loopback().await;
        let accepted = Arc::new(AtomicUsize::new(0));
        let (release, released) = tokio::sync::watch::channel(false);
        let a = accepted.clone();
        tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                a.fetch_add(1, Ordering::SeqCst);
                let released = released.clone();
                tokio::spawn(async move {
                    let handshake = h2::server::Builder::new()
                        .max_concurrent_streams(1)
                        .handshake::<_, Bytes>(socket);
                    let Ok(mut conn) = handshake.await else {
                        return;
                    };
                    while let Some(Ok((_, mut respond))) = conn.accept().await {
                        // Answered while `accept` keeps driving the connection.
                        let mut released = released.clone();
                        tokio::spawn(async move {
                            if released.wait_for(|go| *go).await.is_ok() {
                                let _ = respond.send_response(http::Response::new(()), true);
                            }
                        });
                    }
                });
            }
        });
        (addr, accepted, release)
    }

    /// Opening many connections to one host resolves its name once (issue 13: ten thousand
    /// listeners must not cost a blocking lookup per connect). The server allows one stream
    /// per connection and holds every request, so `CONNECTIONS` concurrent requests make the
    /// pool open `CONNECTIONS` connections. Fails if the pool stops caching the host's
    /// addresses (one lookup per connection).
    #[tokio::test]
    async fn many_connections_to_one_host_resolve_its_name_once() {
        const CONNECTIONS: usize = 8;
        let (addr, accepted, release) = one_stream_server().await;
        let lookups = Arc::new(AtomicUsize::new(0));
        let resolver: Resolver = {
            let lookups = lookups.clone();
            Arc::new(move |host: String, port: u16| -> Lookup {
                lookups.fetch_add(1, Ordering::SeqCst);
                let answer = if host == "pool.test" && port == addr.port() {
                    Ok(vec![addr])
                } else {
                    Err(std::io::Error::other(format!("unknown host {host}:{port}")))
                };
                Box::pin(async move { answer })
            })
        };
        let pool = Arc::new(
            H2Pool::new(
                Http2Config::default().with_prior_knowledge(),
                &client_tls(),
                Duration::from_secs(5),
            )
            .with_resolver(resolver),
        );
        let Ok(url) = url::Url::parse(&format!("http://pool.test:{}/x", addr.port())) else {
            panic!("a test URL parses");
        };
        let requests: Vec<_> = (0..CONNECTIONS)
            .map(|_| {
                let (pool, url) = (pool.clone(), url.clone());
                tokio::spawn(async move {
                    let request = http::Request::get(url.as_str())
                        .body(())
                        .unwrap_or_else(|e| panic!("a GET builds: {e}"));
                    pool.send(&url, request, Bytes::new(), 1024).await
                })
            })
            .collect();
        scaleset_eventually::eventually_holds("every held request has its own connection", || {
            accepted.load(Ordering::SeqCst) == CONNECTIONS
        })
        .await;
        let _ = release.send(true);
        for request in requests {
            let answer = request
                .await
                .unwrap_or_else(|e| panic!("a request task: {e}"));
            assert!(
                matches!(answer, Ok(Ok((ref parts, _))) if parts.status == 200),
                "every request is answered: {answer:?}"
            );
        }
        assert_eq!(accepted.load(Ordering::SeqCst), CONNECTIONS);
        assert_eq!(
            lookups.load(Ordering::SeqCst),
            1,
            "{CONNECTIONS} connections to one host resolved its name once"
        );
    }
}
