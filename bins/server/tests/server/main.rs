//! The real `scaleset-server` binary: `token create` prints a token once, `serve` runs the
//! migrations and answers over loopback (401 without the token, 200 with it), `--with-worker`
//! serves a scale set created through the API (which stays `created` across the worker's ensure
//! and a restart, and is deleted on GitHub), and SIGTERM stops it cleanly. `boot` runs a queued
//! job through a GARM-like external provider whose install script is executed for real.

use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use scaleset_eventually::eventually;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio_util::sync::CancellationToken;

mod boot;
mod hardening;

const BIN: &str = env!("CARGO_BIN_EXE_scaleset-server");

fn config(dir: &Path, extra: &str) -> PathBuf {
    std::fs::write(
        dir.join("key"),
        "AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE=",
    )
    .unwrap();
    let text = format!(
        "controller_id = \"3f2a9c1e-77b0-4d4e-9a55-0123456789ab\"\n\
         [database]\nurl = \"sqlite://{db}\"\n\
         [encryption]\nprimary_key_id = \"k1\"\n[[encryption.keys]]\nid = \"k1\"\nfile = \"{key}\"\n\
         [server]\nlisten = \"127.0.0.1:0\"\n{extra}",
        db = dir.join("scaleset.db").display(),
        key = dir.join("key").display(),
    );
    let path = dir.join("server.toml");
    std::fs::write(&path, text).unwrap();
    path
}

fn token(config: &Path, name: &str) -> std::process::Output {
    Command::new(BIN)
        .args([
            "--config",
            config.to_str().unwrap(),
            "token",
            "create",
            name,
        ])
        .output()
        .expect("run scaleset-server token create")
}

/// A running server, its address and its stderr lines.
struct Server {
    child: Child,
    addr: String,
    lines: mpsc::Receiver<String>,
}

impl Server {
    fn start(config: &Path, with_worker: bool) -> Self {
        let mut command = Command::new(BIN);
        command.args(["--config", config.to_str().unwrap(), "serve"]);
        if with_worker {
            command.arg("--with-worker");
        }
        Self::spawn(command)
    }

    /// Starts `command` (the server, perhaps through a shell that sets a limit and `exec`s it,
    /// so that the child is the server) and waits for its listening line.
    fn spawn(mut command: Command) -> Self {
        let mut child = command
            .env("RUST_LOG", "info")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start scaleset-server");
        // Read stderr on a thread, so the child can never block on a full pipe.
        let stderr = child.stderr.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let deadline = Instant::now() + Duration::from_secs(60);
        let addr = loop {
            let line = lines
                .recv_timeout(deadline.saturating_duration_since(Instant::now()))
                .expect("the server prints its listening line");
            if let Some(rest) = line
                .strip_prefix("scaleset-server listening on http://")
                .or_else(|| line.strip_prefix("scaleset-server listening on https://"))
            {
                break rest.trim().to_owned();
            }
        };
        Self { child, addr, lines }
    }

    /// Sends SIGTERM; returns the exit status and the rest of stderr (for a failure message:
    /// [`Stderr`] cannot be searched, what happened is read from typed state).
    fn stop(mut self) -> (std::process::ExitStatus, Stderr) {
        kill(
            Pid::from_raw(i32::try_from(self.child.id()).unwrap()),
            Signal::SIGTERM,
        )
        .unwrap();
        let status = self.child.wait().unwrap();
        // The reader thread may still be forwarding the last lines when `wait` returns: read
        // until it sees end of file (the sender drops), bounded in case a child process
        // inherited the pipe and holds it open.
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut rest = Vec::new();
        while let Ok(line) = self
            .lines
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
        {
            rest.push(line);
        }
        (status, Stderr(rest.join("\n")))
    }
}

/// A server's stderr, for a failure message: `Display` only, no `contains`.
struct Stderr(String);

impl std::fmt::Display for Stderr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One HTTP/1.1 request; returns the status and the JSON body.
async fn call(
    addr: &str,
    method: &str,
    path: &str,
    token: Option<&str>,
    body: Option<Value>,
) -> (u16, Value) {
    let mut stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let body = body.map(|b| b.to_string()).unwrap_or_default();
    let auth = token
        .map(|t| format!("authorization: Bearer {t}\r\n"))
        .unwrap_or_default();
    let request = format!(
        "{method} {path} HTTP/1.1\r\nhost: {addr}\r\n{auth}content-type: application/json\r\n\
         content-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).await.unwrap();
    let status = answer[9..12].parse().expect("a status line");
    let json = answer
        .split_once("\r\n\r\n")
        .and_then(|(_, b)| serde_json::from_str(b).ok())
        .unwrap_or(Value::Null);
    (status, json)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn token_create_then_serve_then_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let config = config(dir.path(), "");
    let created = token(&config, "admin");
    assert!(created.status.success(), "{created:?}");
    let stdout = String::from_utf8(created.stdout).unwrap();
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 1, "the token alone on stdout: {stdout:?}");
    let secret = lines[0].to_owned();
    assert!(secret.starts_with("sst_") && secret.len() > 40, "{secret}");
    let again = token(&config, "admin");
    assert_eq!(again.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&again.stderr).contains("exists already"),
        "{again:?}"
    );
    // `token list` names its columns, the scope among them.
    let reader = Command::new(BIN)
        .args([
            "--config",
            config.to_str().unwrap(),
            "token",
            "create",
            "dashboard",
        ])
        .args(["--scope", "read"])
        .output()
        .expect("run scaleset-server token create --scope read");
    assert!(reader.status.success(), "{reader:?}");
    let listed = Command::new(BIN)
        .args(["--config", config.to_str().unwrap(), "token", "list"])
        .output()
        .expect("run scaleset-server token list");
    let listed = String::from_utf8_lossy(&listed.stdout).into_owned();
    let rows: Vec<Vec<&str>> = listed.lines().map(|l| l.split('\t').collect()).collect();
    assert_eq!(
        rows[0],
        ["NAME", "ID", "CREATED (unix ms)", "SCOPE"],
        "{listed}"
    );
    let scopes: Vec<(&str, &str)> = rows[1..].iter().map(|r| (r[0], r[3])).collect();
    assert!(scopes.contains(&("admin", "admin")), "{listed}");
    assert!(scopes.contains(&("dashboard", "read")), "{listed}");

    let server = Server::start(&config, false);
    let (status, body) = call(&server.addr, "GET", "/api/v1/controller", None, None).await;
    assert_eq!(status, 401);
    assert_eq!(body["code"], "missing_token");
    let (status, body) = call(
        &server.addr,
        "GET",
        "/api/v1/controller",
        Some(&secret),
        None,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["owner_label"],
        "scaleset-owner-3f2a9c1e77b04d4e9a550123456789ab"
    );
    let (status, _) = call(&server.addr, "GET", "/readyz", None, None).await;
    assert_eq!(status, 200);
    // Exit 0 is a clean stop (one abandoned after `worker.shutdown_timeout` exits 3).
    let (status, stderr) = server.stop();
    assert!(status.success(), "{status:?}: {stderr}");
}

#[test]
fn a_bad_configuration_exits_2_before_anything_opens() {
    let dir = tempfile::tempdir().unwrap();
    let config = config(dir.path(), "tls_cert_file = \"/nonexistent.pem\"\n");
    let out = Command::new(BIN)
        .args(["--config", config.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("server.tls_key_file"),
        "{out:?}"
    );
    assert!(
        !dir.path().join("scaleset.db").exists(),
        "nothing was opened"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_worker_serves_a_scale_set_created_through_the_api() {
    // Short long-poll holds, as the control suite uses: a stop does not wait out a 50 s poll.
    let sim_config = scaleset_sim::SimConfig {
        long_poll_hold: Duration::from_millis(100),
        ..scaleset_sim::SimConfig::default()
    };
    let sim = scaleset_sim::Simulator::new(sim_config).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let sim_base = format!("http://{}", listener.local_addr().unwrap());
    let stop = CancellationToken::new();
    tokio::spawn({
        let (sim, stop) = (sim.clone(), stop.clone());
        async move { sim.serve(listener, stop.cancelled_owned()).await }
    });
    let dir = tempfile::tempdir().unwrap();
    let config = config(
        dir.path(),
        "[worker]\nname = \"w1\"\nwatch_interval = \"100ms\"\nlisten = \"127.0.0.1:0\"\n\
         [[provider]]\nname = \"fake\"\nkind = \"fake\"\n[fake]\nallow = true\n",
    );
    let secret = String::from_utf8(token(&config, "admin").stdout)
        .unwrap()
        .trim()
        .to_owned();
    let server = Server::start(&config, true);
    let t = Some(secret.as_str());
    let (status, _) = call(
        &server.addr,
        "POST",
        "/api/v1/credentials",
        t,
        Some(json!({
            "name": "sim", "auth": {"kind": "pat", "token": "ghp_simulator"},
            "endpoint": {"base_url": sim_base, "api_base_url": format!("{sim_base}/api/v3")},
        })),
    )
    .await;
    assert_eq!(status, 201);
    let (status, entity) = call(
        &server.addr,
        "POST",
        "/api/v1/entities",
        t,
        Some(json!({"kind": "organization", "name": "acme", "credentials": "sim"})),
    )
    .await;
    assert_eq!(status, 201);
    let (status, set) = call(
        &server.addr,
        "POST",
        "/api/v1/scale-sets",
        t,
        Some(json!({
            "entity_id": entity["id"], "name": "linux", "provider": "fake", "max_runners": 2,
        })),
    )
    .await;
    assert_eq!(status, 201, "{set}");
    // Stored and answered at once; the in-process worker ensures it.
    assert_eq!(set["state"], "pending", "{set}");
    let path = format!("/api/v1/scale-sets/{}", set["id"].as_str().unwrap());
    let set = eventually("the in-process worker ensures the set", || async {
        let (_, shown) = call(&server.addr, "GET", &path, t, None).await;
        (shown["state"] != "pending").then_some(shown)
    })
    .await;
    assert_eq!(set["state"], "ready", "{set}");
    let github_id = set["github_id"].as_i64().unwrap();
    // The in-process worker takes the scale set over and opens its message session.
    let session = eventually("the worker opens a session", || async {
        sim.state()
            .scale_set(github_id)
            .and_then(|s| s.session.clone())
    })
    .await;
    assert_eq!(
        session.owner_name,
        "scaleset-3f2a9c1e-77b0-4d4e-9a55-0123456789ab"
    );
    // A second worker on the same SQLite file is refused by the shared lock.
    let second = Command::new(BIN)
        .args(["--config", config.to_str().unwrap(), "--with-worker"])
        .output()
        .unwrap();
    assert_eq!(second.status.code(), Some(1), "{second:?}");
    assert!(
        String::from_utf8_lossy(&second.stderr).contains("already serves"),
        "{second:?}"
    );

    let (status, stderr) = server.stop();
    assert!(status.success(), "{status:?}: {stderr}");
    // A clean stop deletes the session (the worker's shutdown).
    assert!(
        sim.state().scale_set(github_id).unwrap().session.is_none(),
        "{stderr}"
    );
    stop.cancel();
}

/// Issue 30 item 3: `--with-worker` ignored the declared fleet and `[fake]` (only
/// `scaleset-worker` applied them). Both now start through `scaleset_app::App::build`: the
/// declared scale set is stored on start and served, its machine kept as a file in
/// `[fake] state_dir` and booted over the simulator at `[fake] simulator_url`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_worker_applies_the_declared_fleet_and_honours_fake() {
    let sim_config = scaleset_sim::SimConfig {
        long_poll_hold: Duration::from_millis(100),
        ..scaleset_sim::SimConfig::default()
    };
    let sim = scaleset_sim::Simulator::new(sim_config).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let sim_base = format!("http://{}", listener.local_addr().unwrap());
    let stop = CancellationToken::new();
    tokio::spawn({
        let (sim, stop) = (sim.clone(), stop.clone());
        async move { sim.serve(listener, stop.cancelled_owned()).await }
    });
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("fake");
    std::fs::write(dir.path().join("token"), "ghp_simulator").unwrap();
    let config = config(
        dir.path(),
        &format!(
            "[worker]\nname = \"w1\"\nwatch_interval = \"100ms\"\n\
             [[provider]]\nname = \"fake\"\nkind = \"fake\"\n\
             [fake]\nallow = true\nstate_dir = \"{state}\"\nsimulator_url = \"{sim_base}\"\n\
             [[credentials]]\nname = \"sim\"\nbase_url = \"{sim_base}\"\ntoken_file = \"{token}\"\n\
             [[scale_set]]\nname = \"linux\"\ncredentials = \"sim\"\norganization = \"acme\"\n\
             labels = [\"linux\"]\nprovider = \"fake\"\nimage = \"ubuntu\"\nflavor = \"small\"\n\
             min_idle = 1\nmax_runners = 2\n",
            state = state.display(),
            token = dir.path().join("token").display(),
        ),
    );
    let secret = String::from_utf8(token(&config, "admin").stdout)
        .unwrap()
        .trim()
        .to_owned();
    let server = Server::start(&config, true);
    let t = Some(secret.as_str());
    // Stored on start, before any request: the declared fleet was applied.
    let (status, list) = call(&server.addr, "GET", "/api/v1/scale-sets", t, None).await;
    assert_eq!(status, 200, "{list}");
    let names: Vec<&str> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s["spec"]["name"].as_str())
        .collect();
    assert_eq!(names, ["linux"], "{list}");
    // Served: created on GitHub, one idle runner booted by a machine in state_dir.
    eventually(
        "linux is served: an idle runner of it is booted",
        || async {
            let state = sim.state();
            let booted = state.scale_sets_named("linux").next().is_some_and(|set| {
                state
                    .agents
                    .iter()
                    .any(|a| a.scale_set_id == set.id && a.status == "idle")
            });
            booted.then_some(())
        },
    )
    .await;
    assert!(
        std::fs::read_dir(&state).unwrap().count() >= 1,
        "the machine is a file in [fake] state_dir"
    );
    let (status, stderr) = server.stop();
    assert!(status.success(), "{status:?}: {stderr}");
    stop.cancel();
}

/// Issue 29 item 7: with the credentials' GitHub on a port that accepts and never answers, a
/// create held its request for as long as the ensure's retries lasted, and the record stayed
/// `pending`, disabled, with no event, for ever. The real server now answers at once with the
/// record as asked (enabled, a `created` event, a reason saying the worker ensures it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_create_answers_at_once_while_github_never_answers() {
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let hanging = format!("http://{}", silent.local_addr().unwrap());
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((stream, _)) = silent.accept().await {
            held.push(stream);
        }
    });
    let dir = tempfile::tempdir().unwrap();
    // The provider is named in the configuration: the API refuses an unknown one (item 11).
    let config = config(
        dir.path(),
        "[[provider]]\nname = \"fake\"\nkind = \"fake\"\n[fake]\nallow = true\n",
    );
    let secret = String::from_utf8(token(&config, "admin").stdout)
        .unwrap()
        .trim()
        .to_owned();
    let server = Server::start(&config, false);
    let t = Some(secret.as_str());
    let (status, _) = call(
        &server.addr,
        "POST",
        "/api/v1/credentials",
        t,
        Some(json!({
            "name": "hang", "auth": {"kind": "pat", "token": "ghp_hang"},
            "endpoint": {"base_url": hanging, "api_base_url": format!("{hanging}/api/v3")},
        })),
    )
    .await;
    assert_eq!(status, 201);
    let (status, entity) = call(
        &server.addr,
        "POST",
        "/api/v1/entities",
        t,
        Some(json!({"kind": "organization", "name": "acme", "credentials": "hang"})),
    )
    .await;
    assert_eq!(status, 201);
    let (status, set) = tokio::time::timeout(
        Duration::from_secs(10),
        call(
            &server.addr,
            "POST",
            "/api/v1/scale-sets",
            t,
            Some(json!({
                "entity_id": entity["id"], "name": "hang3", "provider": "fake", "max_runners": 2,
            })),
        ),
    )
    .await
    .expect("the create answers without waiting for GitHub");
    assert_eq!(status, 201, "{set}");
    assert_eq!(set["state"], "pending", "{set}");
    assert_eq!(set["spec"]["enabled"], true, "{set}");
    assert!(
        set["state_reason"].as_str().unwrap().contains("worker"),
        "{set}"
    );
    assert_eq!(set["events"][0]["kind"], "created", "{set}");
    let (status, stderr) = server.stop();
    assert!(status.success(), "{status:?}: {stderr}");
}

/// How many `ready` events scale set `id` shows: one per ensure that found it ours.
async fn ready_events(addr: &str, token: &str, id: &str) -> usize {
    let (status, set) = call(
        addr,
        "GET",
        &format!("/api/v1/scale-sets/{id}"),
        Some(token),
        None,
    )
    .await;
    assert_eq!(status, 200, "{set}");
    set["events"].as_array().map_or(0, |events| {
        events.iter().filter(|e| e["kind"] == "ready").count()
    })
}

/// Issue 29 item 3, in the process where it showed: a scale set created through the API stays
/// `created` after the worker's ensure and after a restart, and its delete (without force)
/// deletes it on GitHub.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_created_scale_set_stays_created_across_ensure_and_restart_and_is_deleted_on_github() {
    let sim_config = scaleset_sim::SimConfig {
        long_poll_hold: Duration::from_millis(100),
        ..scaleset_sim::SimConfig::default()
    };
    let sim = scaleset_sim::Simulator::new(sim_config).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let sim_base = format!("http://{}", listener.local_addr().unwrap());
    let stop = CancellationToken::new();
    tokio::spawn({
        let (sim, stop) = (sim.clone(), stop.clone());
        async move { sim.serve(listener, stop.cancelled_owned()).await }
    });
    let dir = tempfile::tempdir().unwrap();
    let config = config(
        dir.path(),
        "[worker]\nname = \"w1\"\nwatch_interval = \"100ms\"\nlisten = \"127.0.0.1:0\"\n\
         [[provider]]\nname = \"fake\"\nkind = \"fake\"\n[fake]\nallow = true\n",
    );
    let secret = String::from_utf8(token(&config, "admin").stdout)
        .unwrap()
        .trim()
        .to_owned();
    let server = Server::start(&config, true);
    let t = Some(secret.as_str());
    let (status, _) = call(
        &server.addr,
        "POST",
        "/api/v1/credentials",
        t,
        Some(json!({
            "name": "sim", "auth": {"kind": "pat", "token": "ghp_simulator"},
            "endpoint": {"base_url": sim_base, "api_base_url": format!("{sim_base}/api/v3")},
        })),
    )
    .await;
    assert_eq!(status, 201);
    let (_, entity) = call(
        &server.addr,
        "POST",
        "/api/v1/entities",
        t,
        Some(json!({"kind": "organization", "name": "acme", "credentials": "sim"})),
    )
    .await;
    let (status, set) = call(
        &server.addr,
        "POST",
        "/api/v1/scale-sets",
        t,
        Some(json!({
            "entity_id": entity["id"], "name": "linux", "provider": "fake", "max_runners": 2,
        })),
    )
    .await;
    assert_eq!(status, 201, "{set}");
    let id = set["id"].as_str().unwrap().to_owned();
    let path = format!("/api/v1/scale-sets/{id}");

    // The create answers at once (issue 29 item 7); the worker's ensure creates it on GitHub.
    let addr = server.addr.clone();
    scaleset_eventually::eventually("the worker ensured the scale set", || {
        let (addr, secret, id) = (&addr, &secret, &id);
        async move { (ready_events(addr, secret, id).await >= 1).then_some(()) }
    })
    .await;
    let (_, shown) = call(&server.addr, "GET", &path, t, None).await;
    assert_eq!(
        shown["provenance"], "created",
        "after the worker's ensure: {shown}"
    );
    let github_id = shown["github_id"].as_i64().unwrap();

    // A plain restart: ensured again, still created.
    let (status, stderr) = server.stop();
    assert!(status.success(), "{status:?}: {stderr}");
    let server = Server::start(&config, true);
    let addr = server.addr.clone();
    scaleset_eventually::eventually("the restarted worker ensured the scale set", || {
        let (addr, secret, id) = (&addr, &secret, &id);
        async move { (ready_events(addr, secret, id).await >= 2).then_some(()) }
    })
    .await;
    let (_, shown) = call(&server.addr, "GET", &path, t, None).await;
    assert_eq!(shown["provenance"], "created", "after a restart: {shown}");

    // Disabled, the worker lets it go; the delete then deletes it on GitHub without force.
    let (status, disabled) = call(
        &server.addr,
        "PATCH",
        &path,
        t,
        Some(json!({"generation": shown["generation"], "enabled": false})),
    )
    .await;
    assert_eq!(status, 200, "{disabled}");
    let deleted = scaleset_eventually::eventually("the worker let the scale set go", || {
        let (addr, secret, path) = (&addr, &secret, &path);
        async move {
            let (status, answer) = call(addr, "DELETE", path, Some(secret), None).await;
            (answer["code"] != "lease_held" && answer["code"] != "not_drained")
                .then_some((status, answer))
        }
    })
    .await;
    assert_eq!(deleted.0, 200, "{deleted:?}");
    assert_eq!(deleted.1["action"], "deleted_on_github", "{deleted:?}");
    assert!(
        sim.state().scale_set(github_id).is_none(),
        "GitHub no longer has scale set {github_id}"
    );
    let (status, stderr) = server.stop();
    assert!(status.success(), "{status:?}: {stderr}");
    stop.cancel();
}

/// A TLS connection to `addr` trusting `root`, offering `alpn`: the stream and the protocol the
/// server chose.
async fn tls_connect(
    addr: &str,
    root: rustls_pki_types::CertificateDer<'static>,
    alpn: &[&[u8]],
) -> (
    tokio_rustls::client::TlsStream<tokio::net::TcpStream>,
    Option<Vec<u8>>,
) {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(root).unwrap();
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let stream = tokio_rustls::TlsConnector::from(std::sync::Arc::new(config))
        .connect(
            rustls_pki_types::ServerName::try_from("localhost").unwrap(),
            tcp,
        )
        .await
        .expect("a TLS handshake with the server's certificate");
    let chosen = stream.get_ref().1.alpn_protocol().map(<[u8]>::to_vec);
    (stream, chosen)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_from_the_configured_files_with_h2_and_http1_by_alpn() {
    let dir = tempfile::tempdir().unwrap();
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
    std::fs::write(dir.path().join("cert.pem"), cert.cert.pem()).unwrap();
    std::fs::write(dir.path().join("key.pem"), cert.signing_key.serialize_pem()).unwrap();
    let config = config(
        dir.path(),
        &format!(
            "tls_cert_file = \"{}\"\ntls_key_file = \"{}\"\n",
            dir.path().join("cert.pem").display(),
            dir.path().join("key.pem").display()
        ),
    );
    let server = Server::start(&config, false);
    let root = cert.cert.der().clone();

    // HTTP/1.1 over TLS: the probe answers.
    let (mut stream, chosen) = tls_connect(&server.addr, root.clone(), &[b"http/1.1"]).await;
    assert_eq!(chosen.as_deref(), Some(&b"http/1.1"[..]));
    stream
        .write_all(b"GET /healthz HTTP/1.1\r\nhost: localhost\r\nconnection: close\r\n\r\n")
        .await
        .unwrap();
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer).await;
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.trim_end().ends_with("ok"), "{answer}");

    // A client offering h2 gets it.
    let (_, chosen) = tls_connect(&server.addr, root, &[b"h2", b"http/1.1"]).await;
    assert_eq!(chosen.as_deref(), Some(&b"h2"[..]));

    // Plain HTTP to the TLS port gets no HTTP answer.
    let mut plain = tokio::net::TcpStream::connect(&server.addr).await.unwrap();
    plain
        .write_all(b"GET /healthz HTTP/1.1\r\nhost: localhost\r\n\r\n")
        .await
        .unwrap();
    let mut answer = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(5), plain.read_to_end(&mut answer)).await;
    assert!(
        !String::from_utf8_lossy(&answer).contains("200"),
        "plain HTTP must not be served on the TLS port"
    );
    let (status, stderr) = server.stop();
    assert!(status.success(), "{status:?}: {stderr}");
}

/// A pipe whose reading end is already closed, as `scaleset-server … | head -0` leaves stdout:
/// every write to it fails with EPIPE.
fn closed_pipe() -> Stdio {
    let (reader, writer) = std::io::pipe().expect("pipe");
    drop(reader);
    Stdio::from(writer)
}

/// Issue 29 item 17a: printing to a closed stdout (or stderr) is not a panic (exit 101): the
/// output is lost, the command still does its work and exits with its own code.
#[test]
fn a_closed_stdout_or_stderr_is_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let config = config(dir.path(), "");
    let check = Command::new(BIN)
        .args(["--config", config.to_str().unwrap(), "--check"])
        .stdout(closed_pipe())
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&check.stderr);
    assert_eq!(check.status.code(), Some(0), "{check:?}");
    assert!(!stderr.contains("panicked"), "{stderr}");

    // An error message to a closed stderr, and a token printed to a closed stdout.
    let missing = Command::new(BIN)
        .stdout(Stdio::piped())
        .stderr(closed_pipe())
        .output()
        .unwrap();
    assert_eq!(missing.status.code(), Some(2), "{missing:?}");
    let created = Command::new(BIN)
        .args([
            "--config",
            config.to_str().unwrap(),
            "token",
            "create",
            "lost",
        ])
        .stdout(closed_pipe())
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    assert_ne!(created.status.code(), Some(101), "{created:?}");
    assert!(
        !String::from_utf8_lossy(&created.stderr).contains("panicked"),
        "{created:?}"
    );
}

/// `scaleset-server --check` looks at every file and directory the configuration names, as the
/// process will use them, naming each key: a provider executable that is not there, a provider
/// `config_file` that cannot be read, an SQLite database in a directory that does not exist;
/// and a GARM-style `[provider.external]` table points to docs/providers.md.
#[test]
fn check_refuses_files_and_directories_the_server_could_not_use_naming_each_key() {
    let dir = tempfile::tempdir().unwrap();
    let (executable, provider_config) = (dir.path().join("provider"), dir.path().join("p.toml"));
    let external = format!(
        "[worker]\ninstance_api_url = \"https://scaleset.example.com\"\n\
         [[provider]]\nname = \"lxd\"\nkind = \"external\"\nexecutable = \"{}\"\nconfig_file = \"{}\"\n",
        executable.display(),
        provider_config.display()
    );
    let path = config(dir.path(), &external);
    let missing_db_dir = dir.path().join("no-such-dir").join("scaleset.db");
    let text = std::fs::read_to_string(&path).unwrap().replace(
        &dir.path().join("scaleset.db").display().to_string(),
        &missing_db_dir.display().to_string(),
    );
    std::fs::write(&path, &text).unwrap();
    let check = || {
        Command::new(BIN)
            .args(["--config", path.to_str().unwrap(), "--check"])
            .output()
            .unwrap()
    };
    let refused = check();
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(2), "{refused:?}");
    for key in [
        "database.url:",
        "provider \"lxd\".executable:",
        "provider \"lxd\".config_file:",
    ] {
        assert!(stderr.contains(key), "{key} not named in: {stderr}");
    }

    std::fs::create_dir(missing_db_dir.parent().unwrap()).unwrap();
    std::fs::write(&executable, "#!/bin/sh\n").unwrap();
    std::fs::set_permissions(
        &executable,
        <std::fs::Permissions as std::os::unix::fs::PermissionsExt>::from_mode(0o755),
    )
    .unwrap();
    std::fs::write(&provider_config, "").unwrap();
    let accepted = check();
    assert_eq!(accepted.status.code(), Some(0), "{accepted:?}");
    assert_eq!(
        String::from_utf8_lossy(&accepted.stdout),
        "configuration ok\n"
    );

    // A GARM provider table pasted as it is: the answer points to the migration notes.
    std::fs::write(
        &path,
        format!(
            "{text}\n[[provider]]\nname = \"garm\"\n[provider.external]\n\
             provider_executable = \"/opt/garm/garm-provider-lxd\"\n"
        ),
    )
    .unwrap();
    let garm = check();
    let stderr = String::from_utf8_lossy(&garm.stderr);
    assert_eq!(garm.status.code(), Some(2), "{garm:?}");
    assert!(stderr.contains("unknown field `external`"), "{stderr}");
    assert!(
        stderr.contains("docs/providers.md, \"Moving from GARM\""),
        "{stderr}"
    );
}

#[test]
fn completions_and_the_man_page_name_the_server_commands_and_a_usage_error_exits_1() {
    let bash = Command::new(BIN)
        .args(["completions", "bash"])
        .output()
        .unwrap();
    assert_eq!(bash.status.code(), Some(0), "{bash:?}");
    let script = String::from_utf8_lossy(&bash.stdout);
    assert!(script.contains("complete -F _scaleset__server"), "{script}");
    for command in ["serve", "token", "demo", "man"] {
        assert!(script.contains(command), "{command}:\n{script}");
    }
    let man = Command::new(BIN).arg("man").output().unwrap();
    assert_eq!(man.status.code(), Some(0), "{man:?}");
    let page = String::from_utf8_lossy(&man.stdout);
    assert!(
        page.lines().any(|l| l.starts_with(".TH scaleset-server 1")),
        "{page}"
    );
    assert!(page.contains("token") && page.contains("demo"), "{page}");
    // 2 means "refused" in the table of exit codes (docs/cli.md); a typo is an error.
    let typo = Command::new(BIN).arg("--bogus").output().unwrap();
    assert_eq!(typo.status.code(), Some(1), "{typo:?}");
}

#[test]
fn demo_help_lists_only_what_the_demo_takes_and_refuses_a_configuration() {
    let help = Command::new(BIN).args(["demo", "--help"]).output().unwrap();
    assert_eq!(help.status.code(), Some(0), "{help:?}");
    let text = String::from_utf8_lossy(&help.stdout);
    assert!(
        !text.contains("--config <FILE>") && !text.contains("--with-worker"),
        "the demo makes its own configuration and always runs the worker:\n{text}"
    );
    assert!(
        text.contains("(default: warn)"),
        "the demo logs at warn:\n{text}"
    );
    // Its man page says the same.
    let dir = tempfile::tempdir().unwrap();
    let man = Command::new(BIN)
        .args(["man", "--dir", dir.path().to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(man.status.code(), Some(0), "{man:?}");
    let page = std::fs::read_to_string(dir.path().join("scaleset-server-demo.1")).unwrap();
    assert!(
        !page.contains("\\-\\-with\\-worker") && !page.contains("\\fB\\-\\-config\\fR"),
        "{page}"
    );
    assert!(page.contains("(default: warn)"), "{page}");
    let serve = std::fs::read_to_string(dir.path().join("scaleset-server-serve.1")).unwrap();
    assert!(
        serve.contains("\\-\\-with\\-worker"),
        "serve keeps it: {serve}"
    );
    let refused = Command::new(BIN)
        .args(["demo", "--config", "/nonexistent.toml"])
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(1), "{refused:?}");
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("the demo takes no --config"),
        "{refused:?}"
    );
}
