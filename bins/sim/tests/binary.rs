//! Runs the real `scaleset-sim` binary: the ready line, the real client against it, the control
//! API, the TOML seed, `--help`, bad configuration, and SIGTERM and SIGINT shutdown.

use std::process::Stdio;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use scaleset_github::{
    Client, ClientConfig, ConfigUrl, Credentials, JobMessage, MessageId, NewRunnerScaleSet,
    RetryPolicy, RunnerGroupId,
};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdout, Command};

const BIN: &str = env!("CARGO_BIN_EXE_scaleset-sim");

struct Running {
    child: Child,
    stdout: BufReader<ChildStdout>,
    addr: String,
    /// Whether the ready line named `https://`.
    https: bool,
}

/// Starts the binary and waits (bounded) for its ready line; stderr is drained concurrently.
async fn start(args: &[&str]) -> Result<Running> {
    let hold: &[&str] = if args.contains(&"--long-poll-hold") {
        &[]
    } else {
        &["--long-poll-hold", "100ms"]
    };
    let mut child = Command::new(BIN)
        .args(["--listen", "127.0.0.1:0"])
        .args(hold)
        .args(args)
        .env_clear()
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .context("cannot spawn scaleset-sim")?;
    let mut stderr = child.stderr.take().context("no stderr")?;
    tokio::spawn(async move {
        let mut sink = Vec::new();
        let _ = stderr.read_to_end(&mut sink).await;
    });
    let mut stdout = BufReader::new(child.stdout.take().context("no stdout")?);
    let mut line = String::new();
    tokio::time::timeout(Duration::from_secs(60), stdout.read_line(&mut line))
        .await
        .context("no ready line within 60 s")??;
    let Some(addr) = line
        .trim()
        .strip_prefix("scaleset-sim listening on ")
        .and_then(|url| {
            url.strip_prefix("http://")
                .or_else(|| url.strip_prefix("https://"))
        })
    else {
        bail!("unexpected ready line {line:?}");
    };
    Ok(Running {
        https: line.contains("https://"),
        addr: addr.to_owned(),
        child,
        stdout,
    })
}

fn client(addr: &str, scope: &str, pat: &str) -> Result<Client> {
    let url = ConfigUrl::parse(&format!("http://{addr}/{scope}"))?;
    Ok(Client::new(
        ClientConfig::new(url, Credentials::pat(pat)).with_retry(RetryPolicy::new(
            3,
            Duration::from_millis(1),
            Duration::from_millis(5),
        )),
    )?)
}

/// A minimal HTTP/1.1 POST for the control API.
async fn post(addr: &str, path: &str, body: &str) -> Result<String> {
    let mut stream = tokio::net::TcpStream::connect(addr).await?;
    let request = format!(
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer).await?;
    Ok(answer)
}

/// A minimal HTTP/1.1 GET (for the control API); returns the whole answer.
async fn get(addr: &str, path: &str) -> Result<String> {
    let mut stream = tokio::net::TcpStream::connect(addr).await?;
    let request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer).await?;
    Ok(answer)
}

/// Polls `GET /_sim/polls` until `waiting` polls are held.
async fn await_held_polls(addr: &str, waiting: u64) -> Result<()> {
    let want = format!(r#""waiting":{waiting}"#);
    scaleset_eventually::try_eventually(&format!("{waiting} polls are held"), || async {
        Ok(get(addr, "/_sim/polls")
            .await?
            .contains(&want)
            .then_some(()))
    })
    .await
}

async fn terminate(running: Running) -> Result<()> {
    stop_with(running, "TERM").await
}

/// Sends `SIG{signal}`, waits (bounded) for a clean exit, and checks nothing more was printed.
async fn stop_with(mut running: Running, signal: &str) -> Result<()> {
    let pid = running.child.id().context("no pid")?;
    let status = Command::new("kill")
        .args([&format!("-{signal}"), &pid.to_string()])
        .status()
        .await?;
    assert!(status.success(), "kill -{signal} failed");
    let exit = tokio::time::timeout(Duration::from_secs(30), running.child.wait())
        .await
        .with_context(|| format!("no exit within 30 s of SIG{signal}"))??;
    assert!(exit.success(), "exit status {exit:?}");
    let mut rest = String::new();
    running.stdout.read_to_string(&mut rest).await?;
    assert_eq!(rest, "", "exactly one line on stdout");
    Ok(())
}

#[tokio::test]
async fn serves_the_real_client_and_stops_on_sigterm() -> Result<()> {
    let running = start(&[]).await?;
    let client = client(&running.addr, "acme", "ghp_simulator")?;
    let set = client
        .create_scale_set(&NewRunnerScaleSet::new("bin-set", RunnerGroupId(1)))
        .await?;
    let mut session = client.create_session(set.id, "bin-test").await?;
    let answer = post(
        &running.addr,
        "/_sim/jobs",
        &format!(r#"{{"scaleSetId": {}, "count": 1}}"#, set.id),
    )
    .await?;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    let message = client
        .get_message(&mut session, MessageId(0), 5)
        .await?
        .context("a message")?;
    assert!(matches!(&message.jobs[..], [JobMessage::Assigned { .. }]));
    terminate(running).await
}

#[tokio::test]
async fn stops_on_sigint_with_a_held_poll() -> Result<()> {
    let running = start(&["--long-poll-hold", "1h"]).await?;
    let client = client(&running.addr, "acme", "ghp_simulator")?;
    let set = client
        .create_scale_set(&NewRunnerScaleSet::new("sigint-set", RunnerGroupId(1)))
        .await?;
    let mut session = client.create_session(set.id, "bin-test").await?;
    let poll = tokio::spawn(async move { client.get_message(&mut session, MessageId(0), 5).await });
    await_held_polls(&running.addr, 1).await?;
    stop_with(running, "INT").await?;
    let answer = tokio::time::timeout(Duration::from_secs(30), poll)
        .await
        .context("the held poll was not answered within 30 s of SIGINT")??;
    assert!(answer?.is_none(), "a held poll gets its 202 on shutdown");
    Ok(())
}

#[tokio::test]
async fn seeds_from_a_toml_file_and_flags() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("sim.toml");
    std::fs::write(
        &path,
        r#"
default_seed = false
organizations = ["zeta"]
[[pats]]
token = "ghp_zeta"
[[runner_groups]]
scope = "zeta"
name = "big machines"
[behaviour]
assignment = "acquire"
"#,
    )?;
    let config_path = path.to_string_lossy().into_owned();
    let running = start(&["--config", &config_path, "--org", "omega"]).await?;
    let zeta = client(&running.addr, "zeta", "ghp_zeta")?;
    let group = zeta.get_runner_group_by_name("big machines").await?;
    assert_eq!(group.map(|g| g.id), Some(RunnerGroupId(2)));
    let omega = client(&running.addr, "omega", "ghp_zeta")?;
    omega.service_url().await?;
    let acme = client(&running.addr, "acme", "ghp_simulator")?;
    assert!(acme.service_url().await.is_err(), "no default seed");
    terminate(running).await
}

#[tokio::test]
async fn help_documents_every_option() -> Result<()> {
    let output = Command::new(BIN).arg("--help").output().await?;
    assert!(output.status.success());
    let help = String::from_utf8(output.stdout)?;
    for flag in [
        "--listen",
        "--config",
        "--no-default-seed",
        "--org",
        "--repo",
        "--enterprise",
        "--pat",
        "--runner-group",
        "--actions-base-path",
        "--queue-path",
        "--long-poll-hold",
        "--admin-token-ttl",
        "--queue-token-ttl",
        "--assignment",
        "--reassign-after",
        "--dormancy",
        "--session-expiry",
        "--runner-job-duration",
        "--job-started-delay",
        "--conflict-names-owner",
        "--tls-cert",
        "--tls-key",
        "--tls-no-h2",
        "--http2-max-concurrent-streams",
        "--log-json",
    ] {
        assert!(help.contains(flag), "--help does not mention {flag}");
    }
    Ok(())
}

#[tokio::test]
async fn bad_configuration_exits_2_before_listening() -> Result<()> {
    let output = Command::new(BIN)
        .args(["--listen", "127.0.0.1:0", "--long-poll-hold", "soon"])
        .output()
        .await?;
    assert_eq!(output.status.code(), Some(2));
    assert!(output.stdout.is_empty(), "no ready line");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("long_poll_hold"), "{stderr}");
    Ok(())
}

#[tokio::test]
async fn serves_https_from_pem_files_and_says_so() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()])?;
    let (cert_path, key_path) = (dir.path().join("cert.pem"), dir.path().join("key.pem"));
    std::fs::write(&cert_path, cert.cert.pem())?;
    std::fs::write(&key_path, cert.signing_key.serialize_pem())?;
    let (cert_path, key_path) = (
        cert_path.to_string_lossy().into_owned(),
        key_path.to_string_lossy().into_owned(),
    );
    let running = start(&["--tls-cert", &cert_path, "--tls-key", &key_path]).await?;
    assert!(running.https, "the ready line names https://");
    // A plain-HTTP request to an HTTPS listener gets no HTTP answer.
    let answer = get(&running.addr, "/_sim/polls").await.unwrap_or_default();
    assert!(!answer.starts_with("HTTP/"), "{answer:?}");
    terminate(running).await?;

    let output = Command::new(BIN)
        .args([
            "--listen",
            "127.0.0.1:0",
            "--tls-cert",
            &cert_path,
            "--tls-key",
            "/nonexistent.pem",
        ])
        .output()
        .await?;
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("TLS key"), "{stderr}");
    Ok(())
}
