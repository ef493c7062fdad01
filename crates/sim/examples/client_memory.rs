//! Measures the client's memory per idle listener (one held long-poll) over HTTP/1.1, HTTPS with
//! HTTP/1.1 and HTTPS with HTTP/2.
//!
//! ```sh
//! ulimit -n 12000
//! cargo run --release -p scaleset-sim --example client_memory -- 1000 https2
//! ```
//!
//! Arguments: the number of listeners (default 1000) and the transport: `http1` (plain HTTP),
//! `https1` (TLS, the server's ALPN offers only `http/1.1`) or `https2` (TLS, ALPN `h2`; the
//! server allows 100 concurrent streams per connection, so the client opens one connection per
//! 100 listeners).
//!
//! The program re-executes itself as a child that serves the simulator (hold 1 h) and reports
//! its held polls on stdout. The parent, the process measured, builds one shared
//! `scaleset-github` `Client`, creates 100 scale sets with sessions, warms the connection path
//! with one poll round trip, reads its own RSS (`VmRSS`), starts N `get_message` tasks spread
//! over the sessions (each with its own copy of the session, as a listener holds), waits until
//! the child holds all N, reads its RSS again and prints the difference divided by N.

#![allow(
    clippy::disallowed_methods,
    reason = "a benchmark waits out its measurement windows by the clock"
)]

use std::io::{BufRead as _, BufReader};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use scaleset_github::{Client, ClientConfig, ConfigUrl, Credentials, MessageId};

#[path = "support/rss.rs"]
mod rss;
#[path = "support/sessions.rs"]
mod sessions;
#[path = "support/tls_child.rs"]
mod tls_child;

use rss::rss_kib;
use tls_child::SelfSigned;

const SCALE_SETS: usize = 100;
/// The stream limit the HTTPS/2 server advertises.
const STREAM_LIMIT: u32 = 100;

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("--serve") {
        return serve(&args[2..]);
    }
    let listeners: usize = match args.get(1) {
        Some(n) => n
            .parse()
            .context("the first argument is the number of listeners")?,
        None => 1000,
    };
    let transport = args.get(2).map_or("https2", String::as_str).to_owned();
    if !matches!(transport.as_str(), "http1" | "https1" | "https2") {
        bail!("the transport is http1, https1 or https2, not {transport:?}");
    }
    tokio::runtime::Runtime::new()?.block_on(measure(listeners, &transport))
}

/// The child: a simulator (plain, or TLS with the given PEM files) that prints its address and
/// then its held-poll count every 100 ms.
fn serve(args: &[String]) -> Result<()> {
    let config = scaleset_sim::SimConfig {
        long_poll_hold: Duration::from_secs(3600),
        request_log_capacity: 0,
        http2_max_concurrent_streams: STREAM_LIMIT,
        tls: tls_child::identity(args)?,
        ..scaleset_sim::SimConfig::default()
    };
    let sim = scaleset_sim::Simulator::new(config)?;
    tokio::runtime::Runtime::new()?.block_on(async move {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        println!("{}", listener.local_addr()?);
        let reporter = sim.clone();
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_millis(100)).await;
                println!("{}", reporter.waiting_polls());
            }
        });
        sim.serve(listener, std::future::pending()).await?;
        Ok(())
    })
}

async fn measure(listeners: usize, transport: &str) -> Result<()> {
    let dir = std::env::temp_dir().join(format!("scaleset-client-memory-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let cert = SelfSigned::write(&dir)?;

    let mut command = Command::new(std::env::current_exe()?);
    command.arg("--serve");
    if transport != "http1" {
        command.args(cert.serve_args(transport != "https1"));
    }
    let mut child = command
        .stdout(Stdio::piped())
        .spawn()
        .context("cannot start the simulator child")?;
    let mut lines = BufReader::new(child.stdout.take().context("no stdout")?).lines();
    let addr: std::net::SocketAddr = lines
        .next()
        .context("no address from the child")??
        .parse()?;
    let held = Arc::new(AtomicUsize::new(0));
    std::thread::spawn({
        let held = held.clone();
        move || {
            for line in lines.map_while(Result::ok) {
                if let Ok(n) = line.trim().parse() {
                    held.store(n, Ordering::SeqCst);
                }
            }
        }
    });

    let base = if transport == "http1" {
        format!("http://{addr}")
    } else {
        format!("https://localhost:{}", addr.port())
    };
    let config = ClientConfig::new(
        ConfigUrl::parse(&format!("{base}/acme"))?,
        Credentials::pat("ghp_simulator"),
    )
    .with_ca_bundle_pem(cert.cert_pem.into_bytes());
    let client = Client::new(config)?;
    let sessions = sessions::sessions(&client, SCALE_SETS).await?;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let before = rss_kib(std::process::id())?;

    let mut polls = Vec::with_capacity(listeners);
    for n in 0..listeners {
        let (client, mut session) = (client.clone(), sessions[n % SCALE_SETS].clone());
        polls.push(tokio::spawn(async move {
            client.get_message(&mut session, MessageId(0), 10).await
        }));
    }
    for _ in 0..1200 {
        if held.load(Ordering::SeqCst) >= listeners {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let waiting = held.load(Ordering::SeqCst);
    if waiting < listeners {
        bail!("only {waiting} of {listeners} polls are held");
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let after = rss_kib(std::process::id())?;
    let per = after.saturating_sub(before) as f64 * 1024.0 / listeners as f64;
    println!("transport:         {transport}");
    println!("idle listeners:    {listeners}");
    println!("client RSS before: {before} KiB");
    println!("client RSS after:  {after} KiB");
    println!(
        "per idle listener: {per:.0} bytes ({:.1} KiB)",
        per / 1024.0
    );
    for poll in &polls {
        poll.abort();
    }
    child.kill()?;
    child.wait()?;
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}
