//! HTTP/2: h2c by prior knowledge, HTTPS with ALPN (`h2` and `http/1.1`, or `http/1.1` only),
//! the advertised `SETTINGS_MAX_CONCURRENT_STREAMS`, and the `goaway` fault closing a
//! connection gracefully mid-poll without losing a message. Clients here are hyper's
//! connection-level clients over real loopback sockets.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper::client::conn::{http1, http2};
use hyper_util::rt::{TokioExecutor, TokioIo};
use rustls::pki_types::{CertificateDer, ServerName};
use scaleset_github::ExposeSecret as _;
use scaleset_github::{
    Client, ClientConfig, ConfigUrl, Credentials, GithubScaleSetId, Http2Config, Message,
    MessageId, RetryPolicy, Session, Timeouts,
};
use scaleset_sim::{JobSpec, SimConfig, TlsIdentity};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

use crate::helpers::{
    HeldPolls, PAT, TestSim, config, eventually, fast_retry, set_with_session, with_session,
};

/// A self-signed certificate for `localhost`: (identity for the simulator, DER for the client).
fn identity() -> Result<(TlsIdentity, CertificateDer<'static>)> {
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()])?;
    let der = cert.cert.der().clone();
    Ok((
        TlsIdentity::new(cert.cert.pem(), cert.signing_key.serialize_pem()),
        der,
    ))
}

/// A TLS connection to `sim` offering `alpn`; returns it with the protocol the server chose.
async fn tls_connect(
    sim: &TestSim,
    root: CertificateDer<'static>,
    alpn: &[&[u8]],
) -> Result<(tokio_rustls::client::TlsStream<TcpStream>, Option<Vec<u8>>)> {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(root)?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    let tcp = TcpStream::connect(sim.addr).await?;
    let stream = TlsConnector::from(Arc::new(config))
        .connect(ServerName::try_from("localhost")?, tcp)
        .await?;
    let chosen = stream.get_ref().1.alpn_protocol().map(<[u8]>::to_vec);
    Ok((stream, chosen))
}

/// An HTTP/2 connection over `io`; the connection task runs in the background.
async fn h2<I>(io: I) -> Result<http2::SendRequest<Empty<Bytes>>>
where
    I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (send, conn) = http2::handshake(TokioExecutor::new(), TokioIo::new(io)).await?;
    tokio::spawn(conn);
    Ok(send)
}

/// GET `uri` with `headers`; returns (status, body).
async fn get_h2(
    send: &mut http2::SendRequest<Empty<Bytes>>,
    uri: &str,
    headers: &[(&str, &str)],
) -> Result<(u16, Bytes)> {
    let mut request = http::Request::get(uri);
    for (k, v) in headers {
        request = request.header(*k, *v);
    }
    send.ready().await?;
    let response = send.send_request(request.body(Empty::new())?).await?;
    let status = response.status().as_u16();
    Ok((status, response.into_body().collect().await?.to_bytes()))
}

#[tokio::test]
async fn plain_http_serves_h2c_by_prior_knowledge() -> Result<()> {
    let sim = TestSim::default().await?;
    let mut send = h2(TcpStream::connect(sim.addr).await?).await?;
    let (status, body) = get_h2(&mut send, &sim.url("/_sim/polls"), &[]).await?;
    assert_eq!(status, 200);
    let json: serde_json::Value = serde_json::from_slice(&body)?;
    assert_eq!(json["waiting"], 0);
    // Plain HTTP/1.1 on the same listener still works.
    let set = crate::helpers::raw("GET", &sim.url("/_sim/polls"), &[], None).await?;
    assert_eq!(set.status, 200);
    sim.stop().await
}

#[tokio::test]
async fn https_negotiates_h2_through_alpn_and_links_back_over_https() -> Result<()> {
    let (identity, root) = identity()?;
    let mut config = config();
    config.tls = Some(identity);
    let sim = TestSim::start(config).await?;
    let (stream, chosen) = tls_connect(&sim, root, &[b"h2", b"http/1.1"]).await?;
    assert_eq!(chosen.as_deref(), Some(&b"h2"[..]));
    let mut send = h2(stream).await?;
    let origin = format!("https://localhost:{}", sim.addr.port());
    let auth = format!("Bearer {PAT}");
    let (status, body) = get_h2(
        &mut send,
        &format!("{origin}/api/v3/orgs/acme/actions/runners/downloads"),
        &[("authorization", &auth)],
    )
    .await?;
    assert_eq!(status, 200, "{body:?}");
    let json: serde_json::Value = serde_json::from_slice(&body)?;
    let url = json[0]["download_url"].as_str().context("download_url")?;
    assert!(
        url.starts_with(&format!("{origin}/")),
        "links name the HTTPS origin the client used: {url}"
    );
    sim.stop().await
}

#[tokio::test]
async fn https_without_h2_offers_only_http1_through_alpn() -> Result<()> {
    let (identity, root) = identity()?;
    let mut config = config();
    config.tls = Some(identity.without_h2());
    let sim = TestSim::start(config).await?;
    let (stream, chosen) = tls_connect(&sim, root, &[b"h2", b"http/1.1"]).await?;
    assert_eq!(chosen.as_deref(), Some(&b"http/1.1"[..]));
    let (mut send, conn) = http1::handshake(TokioIo::new(stream)).await?;
    tokio::spawn(conn);
    let response = send
        .send_request(
            http::Request::get("/_sim/polls")
                .header("host", "localhost")
                .body(Empty::<Bytes>::new())?,
        )
        .await?;
    assert_eq!(response.status(), 200);
    assert_eq!(response.version(), http::Version::HTTP_11);
    sim.stop().await
}

#[tokio::test]
async fn an_invalid_certificate_or_key_is_a_config_error() -> Result<()> {
    let (identity, _) = identity()?;
    let mut config = config();
    config.tls = Some(TlsIdentity::new(
        identity.cert_chain_pem.clone(),
        "not a key",
    ));
    let error = scaleset_sim::Simulator::new(config).expect_err("bad key refused");
    assert!(error.to_string().contains("private key"), "{error}");
    let mut config = crate::helpers::config();
    config.tls = Some(TlsIdentity::new("", identity.key_pem));
    let error = scaleset_sim::Simulator::new(config).expect_err("no certificate refused");
    assert!(error.to_string().contains("certificate"), "{error}");
    Ok(())
}

/// Reads the server's first frame after the client preface: it must be its SETTINGS.
async fn server_settings(sim: &TestSim) -> Result<Vec<(u16, u32)>> {
    let mut tcp = TcpStream::connect(sim.addr).await?;
    tcp.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n").await?;
    // An empty SETTINGS frame: length 0, type 4, no flags, stream 0.
    tcp.write_all(&[0, 0, 0, 4, 0, 0, 0, 0, 0]).await?;
    let mut header = [0u8; 9];
    tcp.read_exact(&mut header).await?;
    anyhow::ensure!(
        header[3] == 4,
        "first frame is type {}, not SETTINGS",
        header[3]
    );
    let len = usize::from(header[0]) << 16 | usize::from(header[1]) << 8 | usize::from(header[2]);
    let mut payload = vec![0u8; len];
    tcp.read_exact(&mut payload).await?;
    Ok(payload
        .chunks_exact(6)
        .map(|c| {
            (
                u16::from_be_bytes([c[0], c[1]]),
                u32::from_be_bytes([c[2], c[3], c[4], c[5]]),
            )
        })
        .collect())
}

/// `SETTINGS_MAX_CONCURRENT_STREAMS`.
const MAX_CONCURRENT_STREAMS: u16 = 0x3;

#[tokio::test]
async fn the_configured_stream_limit_is_advertised() -> Result<()> {
    let mut config = config();
    config.http2_max_concurrent_streams = 10;
    let sim = TestSim::start(config).await?;
    let settings = server_settings(&sim).await?;
    assert!(
        settings.contains(&(MAX_CONCURRENT_STREAMS, 10)),
        "settings {settings:?}"
    );
    sim.stop().await?;

    let sim = TestSim::default().await?;
    let settings = server_settings(&sim).await?;
    assert!(
        settings.contains(&(MAX_CONCURRENT_STREAMS, 200)),
        "default limit: {settings:?}"
    );
    sim.stop().await
}

#[tokio::test]
async fn a_zero_stream_limit_is_a_config_error() {
    let mut config = config();
    config.http2_max_concurrent_streams = 0;
    let error = scaleset_sim::Simulator::new(config).expect_err("refused");
    assert!(
        error.to_string().contains("http2_max_concurrent_streams"),
        "{error}"
    );
}

#[tokio::test]
async fn goaway_closes_the_connection_mid_poll_and_no_message_is_lost() -> Result<()> {
    let mut config = config();
    config.long_poll_hold = Duration::from_secs(60);
    let (sim, _client, set, session) = with_session(config, "goaway").await?;
    let token = format!(
        "Bearer {}",
        session.message_queue_access_token.expose_secret()
    );
    let headers = [
        ("authorization", token.as_str()),
        ("x-scalesetmaxcapacity", "5"),
    ];
    sim.sim.update_faults(|f| f.goaway = 1);

    let mut first = h2(TcpStream::connect(sim.addr).await?).await?;
    let poll = {
        let mut send = first.clone();
        let url = session.message_queue_url.clone();
        let headers = headers.map(|(k, v)| (k, v.to_owned()));
        tokio::spawn(async move {
            let headers: Vec<(&str, &str)> =
                headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
            get_h2(&mut send, &url, &headers).await
        })
    };
    // The held poll fires the fault: it answers 202 at once and the connection goes away.
    let (status, _) = poll.await??;
    assert_eq!(
        status, 202,
        "the poll held when GOAWAY came is answered empty"
    );
    assert_eq!(sim.sim.faults().goaway, 0, "the fault fired once");
    // Fails the test unless the server closes the HTTP/2 connection.
    eventually("the connection to close", || first.is_closed()).await;
    assert!(
        get_h2(&mut first, &sim.url("/_sim/polls"), &[])
            .await
            .is_err(),
        "no new request on a connection that went away"
    );

    // A job enqueued meanwhile reaches the listener over a new connection.
    let ids = sim.sim.enqueue_jobs(set.id.0, &JobSpec::count(1))?;
    let mut second = h2(TcpStream::connect(sim.addr).await?).await?;
    let (status, body) = get_h2(&mut second, &session.message_queue_url, &headers).await?;
    assert_eq!(status, 200);
    let message: serde_json::Value = serde_json::from_slice(&body)?;
    assert!(
        message["body"].as_str().is_some(),
        "a message for the enqueued job {ids:?}: {message}"
    );
    sim.stop().await
}

#[tokio::test]
async fn goaway_over_http1_closes_the_connection_after_the_answer() -> Result<()> {
    let mut config = config();
    config.long_poll_hold = Duration::from_secs(60);
    let (sim, _client, _, session) = with_session(config, "goaway1").await?;
    sim.sim.update_faults(|f| f.goaway = 1);
    let (mut send, conn) =
        http1::handshake(TokioIo::new(TcpStream::connect(sim.addr).await?)).await?;
    let conn = tokio::spawn(conn);
    let response = send
        .send_request(
            http::Request::get(&session.message_queue_url)
                .header("host", sim.addr.to_string())
                .header(
                    "authorization",
                    format!(
                        "Bearer {}",
                        session.message_queue_access_token.expose_secret()
                    ),
                )
                .body(Empty::<Bytes>::new())?,
        )
        .await?;
    assert_eq!(response.status(), 202);
    // The server closes its side: the client's connection task ends.
    conn.await??;
    sim.stop().await
}

// The real client over HTTP/2.

/// A client for `acme` at `base` (`https://localhost:PORT` or `http://ADDR`) trusting `ca_pem`.
fn h2_client(
    base: &str,
    ca_pem: Option<&str>,
    http2: Http2Config,
    retry: RetryPolicy,
) -> Result<Client> {
    let mut config = ClientConfig::new(
        ConfigUrl::parse(&format!("{base}/acme"))?,
        Credentials::pat(PAT),
    )
    .with_http2(http2)
    .with_retry(retry)
    .with_timeouts(Timeouts::new(
        Duration::from_secs(20),
        Duration::from_secs(120),
    ));
    if let Some(pem) = ca_pem {
        config = config.with_ca_bundle_pem(pem.as_bytes().to_vec());
    }
    Ok(Client::new(config)?)
}

/// Two-minute holds and 10 streams per HTTP/2 connection: many held polls need many
/// connections.
fn ten_streams() -> SimConfig {
    let mut config = config();
    config.long_poll_hold = Duration::from_secs(120);
    config.http2_max_concurrent_streams = 10;
    config
}

/// A simulator serving HTTPS for `localhost`; returns it with the CA PEM and the base URL.
async fn https_sim(mut config: SimConfig, offer_h2: bool) -> Result<(TestSim, String, String)> {
    let (identity, _) = identity()?;
    let ca = identity.cert_chain_pem.clone();
    config.tls = Some(if offer_h2 {
        identity
    } else {
        identity.without_h2()
    });
    let sim = TestSim::start(config).await?;
    let base = format!("https://localhost:{}", sim.addr.port());
    Ok((sim, ca, base))
}

#[tokio::test]
async fn a_thousand_long_polls_over_h2_with_a_stream_limit_of_10_are_all_answered() -> Result<()> {
    let (sim, ca, base) = https_sim(ten_streams(), true).await?;
    let client = h2_client(&base, Some(&ca), Http2Config::default(), fast_retry())?;
    // Held at once, not queued behind the first connection's 10 streams.
    let polls = HeldPolls::start(&sim, &client, "h2-load", 1000).await?;
    let open = sim.sim.open_connections();
    assert!(
        (100..=110).contains(&open),
        "1000 streams at 10 per connection need about 100 connections, not {open}"
    );
    assert!(
        sim.sim.http2_requests() >= 1000,
        "the polls went over HTTP/2"
    );
    polls.each_answered_with_its_job(&sim).await?;
    sim.stop().await
}

#[tokio::test]
async fn goaway_mid_poll_loses_no_message_and_needs_no_retry() -> Result<()> {
    let (sim, ca, base) = https_sim(ten_streams(), true).await?;
    // One attempt per call: a request lost to GOAWAY must be resent by the pool itself.
    let client = h2_client(
        &base,
        Some(&ca),
        Http2Config::default(),
        RetryPolicy::new(1, Duration::from_millis(1), Duration::from_millis(1)),
    )?;
    let mut sets = Vec::new();
    for i in 0..20 {
        sets.push(set_with_session(&client, &format!("goaway-{i}")).await?);
    }
    // The first poll held closes its connection with GOAWAY while the others are on their
    // way: polls held there answer empty, polls sent after the GOAWAY are refused unprocessed
    // and must be resent on another connection.
    sim.sim.update_faults(|f| f.goaway = 1);
    let mut listeners = tokio::task::JoinSet::new();
    for (set, session) in &sets {
        let (client, mut session, id) = (client.clone(), session.clone(), set.id);
        listeners.spawn(async move {
            loop {
                match client.get_message(&mut session, MessageId(0), 10).await {
                    Ok(Some(message)) => return Ok::<_, scaleset_github::Error>((id, message)),
                    // A poll cut by GOAWAY answers empty: poll again.
                    Ok(None) => {}
                    Err(error) => return Err(error),
                }
            }
        });
    }
    let handle = sim.sim.clone();
    eventually("the GOAWAY fault to fire", || handle.faults().goaway == 0).await;
    eventually("20 held polls after the GOAWAY", || {
        handle.waiting_polls() == 20
    })
    .await;
    for (set, _) in &sets {
        sim.sim.enqueue_jobs(set.id.0, &JobSpec::count(1))?;
    }
    let mut delivered = Vec::new();
    while let Some(joined) = listeners.join_next().await {
        let (id, message) = joined??;
        assert_eq!(message.jobs.len(), 1, "scale set {id}");
        delivered.push(id);
    }
    delivered.sort_unstable();
    let mut expected: Vec<GithubScaleSetId> = sets.iter().map(|(s, _)| s.id).collect();
    expected.sort_unstable();
    assert_eq!(delivered, expected, "every scale set got its job");
    sim.stop().await
}

#[tokio::test]
async fn alpn_offering_only_http1_falls_back_to_http1() -> Result<()> {
    let (sim, ca, base) = https_sim(config(), false).await?;
    let client = h2_client(&base, Some(&ca), Http2Config::default(), fast_retry())?;
    let (set, mut session) = set_with_session(&client, "fallback").await?;
    sim.sim.enqueue_jobs(set.id.0, &JobSpec::count(1))?;
    let message = client.get_message(&mut session, MessageId(0), 10).await?;
    assert!(message.is_some(), "the job arrives over HTTP/1.1");
    assert_eq!(sim.sim.http2_requests(), 0, "no request went over HTTP/2");
    sim.stop().await
}

#[tokio::test]
async fn https_uses_h2_when_offered_and_plain_http_only_with_prior_knowledge() -> Result<()> {
    let (sim, ca, base) = https_sim(config(), true).await?;
    let client = h2_client(&base, Some(&ca), Http2Config::default(), fast_retry())?;
    set_with_session(&client, "negotiated").await?;
    let over_h2 = sim.sim.http2_requests();
    assert!(
        over_h2 >= 4,
        "token chain, create and session over h2: {over_h2}"
    );
    sim.stop().await?;

    let sim = TestSim::default().await?;
    let base = format!("http://{}", sim.addr);
    let plain = h2_client(&base, None, Http2Config::default(), fast_retry())?;
    set_with_session(&plain, "plain").await?;
    assert_eq!(
        sim.sim.http2_requests(),
        0,
        "plain http stays on HTTP/1.1 by default"
    );
    let h2c = h2_client(
        &base,
        None,
        Http2Config::default().with_prior_knowledge(),
        fast_retry(),
    )?;
    set_with_session(&h2c, "h2c").await?;
    assert!(
        sim.sim.http2_requests() >= 4,
        "h2c by prior knowledge when configured"
    );
    sim.stop().await
}

#[tokio::test]
async fn connections_per_host_are_bounded_and_extra_polls_wait_for_a_stream() -> Result<()> {
    let (sim, ca, base) = https_sim(ten_streams(), true).await?;
    let http2 = Http2Config::default().with_max_connections_per_host(2);
    let client = h2_client(&base, Some(&ca), http2, fast_retry())?;
    let (set, session) = set_with_session(&client, "bounded").await?;
    let mut polls = spawn_polls(&client, &session, 30);
    let handle = sim.sim.clone();
    eventually("20 held polls", || handle.waiting_polls() == 20).await;
    sim.sim.enqueue_jobs(set.id.0, &JobSpec::count(1))?;
    let answered = answered_with_the_job(&mut polls).await?;
    assert_eq!(
        answered, 30,
        "the 10 polls beyond the bound waited for a stream"
    );
    assert_eq!(
        sim.sim.open_connections(),
        2,
        "never more than 2 connections"
    );
    sim.stop().await
}

#[tokio::test]
async fn by_default_a_host_gets_as_many_connections_as_its_held_polls_need() -> Result<()> {
    // One stream per connection, so 130 held polls need 130 connections: more than the 128
    // the pool once stopped at, which left every poll beyond them unheard.
    let mut one_stream = ten_streams();
    one_stream.http2_max_concurrent_streams = 1;
    let (sim, ca, base) = https_sim(one_stream, true).await?;
    let client = h2_client(&base, Some(&ca), Http2Config::default(), fast_retry())?;
    let (set, session) = set_with_session(&client, "unbounded").await?;
    let mut polls = spawn_polls(&client, &session, 130);
    let handle = sim.sim.clone();
    eventually("130 held polls", || handle.waiting_polls() == 130).await;
    assert!(
        sim.sim.open_connections() >= 130,
        "one connection per held poll at one stream each: {}",
        sim.sim.open_connections()
    );
    sim.sim.enqueue_jobs(set.id.0, &JobSpec::count(1))?;
    let answered = answered_with_the_job(&mut polls).await?;
    assert_eq!(answered, 130);
    sim.stop().await
}

/// `count` long-polls of `session` at once, each waiting up to 10 s for a message.
fn spawn_polls(
    client: &Client,
    session: &Session,
    count: usize,
) -> tokio::task::JoinSet<scaleset_github::Result<Option<Message>>> {
    let mut polls = tokio::task::JoinSet::new();
    for _ in 0..count {
        let (client, mut session) = (client.clone(), session.clone());
        polls.spawn(async move { client.get_message(&mut session, MessageId(0), 10).await });
    }
    polls
}

/// How many of `polls` answered, each with the unacknowledged job (any other answer fails).
async fn answered_with_the_job(
    polls: &mut tokio::task::JoinSet<scaleset_github::Result<Option<Message>>>,
) -> Result<usize> {
    let mut answered = 0;
    while let Some(joined) = polls.join_next().await {
        assert!(joined??.is_some(), "every poll gets the unacknowledged job");
        answered += 1;
    }
    Ok(answered)
}
