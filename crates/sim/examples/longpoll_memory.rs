//! Measures the simulator's memory per idle long-poll.
//!
//! ```sh
//! ulimit -n 12000   # 10,000 polls need 10,000 sockets in each of the two processes
//! cargo run --release -p scaleset-sim --example longpoll_memory -- 10000
//! ```
//!
//! The program re-executes itself as a child that serves the simulator (hold 1 h) and nothing
//! else. The parent creates 100 scale sets with sessions through the real `scaleset-github`
//! client, reads the child's RSS (`VmRSS` in `/proc/<pid>/status`), opens N raw HTTP/1.1
//! message GETs spread over the sessions, waits until the child reports N held polls
//! (`GET /_sim/polls`), reads the RSS again, and prints the difference divided by N.

#![allow(
    clippy::disallowed_methods,
    reason = "a benchmark waits out its measurement windows by the clock"
)]

use std::io::{BufRead as _, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use scaleset_github::ExposeSecret as _;
use scaleset_github::{Client, ClientConfig, ConfigUrl, Credentials};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;

#[path = "support/rss.rs"]
mod rss;
#[path = "support/sessions.rs"]
mod sessions;

use rss::rss_kib;

const SCALE_SETS: usize = 100;

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("--serve") {
        return serve();
    }
    let polls: usize = match args.get(1) {
        Some(n) => n.parse().context("the argument is the number of polls")?,
        None => 10_000,
    };
    let limit = open_files_limit()?;
    if limit < polls as u64 + 256 {
        bail!(
            "the open-files limit is {limit}, below {polls} polls + 256: run `ulimit -n {}` first",
            polls + 1024
        );
    }
    tokio::runtime::Runtime::new()?.block_on(measure(polls))
}

/// The child: a simulator and nothing else.
fn serve() -> Result<()> {
    let config = scaleset_sim::SimConfig {
        long_poll_hold: Duration::from_secs(3600),
        request_log_capacity: 0,
        ..scaleset_sim::SimConfig::default()
    };
    let sim = scaleset_sim::Simulator::new(config)?;
    tokio::runtime::Runtime::new()?.block_on(async move {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        println!("{}", listener.local_addr()?);
        sim.serve(listener, std::future::pending()).await?;
        Ok(())
    })
}

async fn measure(polls: usize) -> Result<()> {
    let exe = std::env::current_exe()?;
    let mut child = Command::new(exe)
        .arg("--serve")
        .stdout(Stdio::piped())
        .spawn()
        .context("cannot start the simulator child")?;
    let pid = child.id();
    let mut line = String::new();
    BufReader::new(child.stdout.take().context("no stdout")?).read_line(&mut line)?;
    let addr = line.trim().to_owned();

    let url = ConfigUrl::parse(&format!("http://{addr}/acme"))?;
    let client = Client::new(ClientConfig::new(url, Credentials::pat("ghp_simulator")))?;
    let sessions = sessions::sessions(&client, SCALE_SETS).await?;
    // Warm up: one poll round trip per session's connection path, then settle.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let before = rss_kib(pid)?;

    let mut sockets = Vec::with_capacity(polls);
    for n in 0..polls {
        let session = &sessions[n % sessions.len()];
        let path = url::Url::parse(&session.message_queue_url)?
            .path()
            .to_owned();
        let mut stream = TcpStream::connect(&addr).await?;
        let request = format!(
            "GET {path} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {}\r\nAccept: application/json; api-version=6.0-preview\r\nX-ScaleSetMaxCapacity: 10\r\n\r\n",
            session.message_queue_access_token.expose_secret()
        );
        stream.write_all(request.as_bytes()).await?;
        sockets.push(stream);
    }
    let mut waiting = 0;
    for _ in 0..600 {
        waiting = held_polls(&addr).await?;
        if waiting >= polls {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    if waiting < polls {
        bail!("only {waiting} of {polls} polls are held");
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let after = rss_kib(pid)?;
    let per_poll = (after.saturating_sub(before)) as f64 * 1024.0 / polls as f64;
    println!("held polls:       {polls}");
    println!("child RSS before: {before} KiB");
    println!("child RSS after:  {after} KiB");
    println!(
        "per idle poll:    {per_poll:.0} bytes ({:.1} KiB)",
        per_poll / 1024.0
    );
    drop(sockets);
    child.kill()?;
    child.wait()?;
    Ok(())
}

async fn held_polls(addr: &str) -> Result<usize> {
    let mut stream = TcpStream::connect(addr).await?;
    let request = format!("GET /_sim/polls HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer).await?;
    let body = answer.split("\r\n\r\n").nth(1).unwrap_or_default();
    let json: serde_json::Value = serde_json::from_str(body)?;
    json["waiting"]
        .as_u64()
        .map(|n| n as usize)
        .context("no waiting count")
}

fn open_files_limit() -> Result<u64> {
    let limits = std::fs::read_to_string("/proc/self/limits")?;
    limits
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .and_then(|l| l.split_whitespace().nth(3))
        .and_then(|soft| soft.parse().ok())
        .context("cannot read the open-files limit from /proc/self/limits")
}
