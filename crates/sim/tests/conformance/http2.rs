//! HTTP/2: h2c by prior knowledge, HTTPS with ALPN (`h2` and `http/1.1`, or `http/1.1` only),
//! the advertised `SETTINGS_MAX_CONCURRENT_STREAMS`, and the `goaway` fault closing a
//! connection gracefully mid-poll without losing a message. Clients here are hyper's
//! connection-level clients over real loopback sockets.

use std::sync::Arc;

use anyhow::{Context, Result};
use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper::client::conn::{http1, http2};
use hyper_util::rt::{TokioExecutor, TokioIo};
use rustls::pki_types::{CertificateDer, ServerName};
use scaleset_sim::{JobSpec, TlsIdentity};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

use crate::helpers::{PAT, TestSim, config, eventually, set_with_session};

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
    config.long_poll_hold = std::time::Duration::from_secs(60);
    let sim = TestSim::start(config).await?;
    let client = sim.client("acme")?;
    let (set, session) = set_with_session(&client, "goaway").await?;
    let token = format!("Bearer {}", session.message_queue_access_token.expose());
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
    let closed = eventually("the connection to close", || first.is_closed()).await;
    assert!(closed.is_ok(), "the server closed the HTTP/2 connection");
    assert!(
        get_h2(&mut first, &sim.url("/_sim/polls"), &[])
            .await
            .is_err(),
        "no new request on a connection that went away"
    );

    // A job enqueued meanwhile reaches the listener over a new connection.
    let ids = sim.sim.enqueue_jobs(set.id, &JobSpec::count(1))?;
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
    config.long_poll_hold = std::time::Duration::from_secs(60);
    let sim = TestSim::start(config).await?;
    let client = sim.client("acme")?;
    let (_, session) = set_with_session(&client, "goaway1").await?;
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
                    format!("Bearer {}", session.message_queue_access_token.expose()),
                )
                .body(Empty::<Bytes>::new())?,
        )
        .await?;
    assert_eq!(response.status(), 202);
    // The server closes its side: the client's connection task ends.
    conn.await??;
    sim.stop().await
}
