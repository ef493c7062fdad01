//! The real `scaleset-server` against hostile clients and a full disk: the accept loop backs
//! off at the open-file limit and serves again once descriptors are free; a client that never
//! finishes its headers, or sends nothing, or idles after an answer is disconnected; the
//! connection cap closes one connection too many; the sign-in cookie is `Secure` and answers
//! carry HSTS over TLS and behind a TLS proxy; and a full disk is a `503 unavailable` outage,
//! `/readyz` not ready, recovered from once space is freed.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;

use super::{BIN, Server, call, config, tls_connect, token};

/// The bound on any wait for the server to close a connection: far above the timeouts the tests
/// configure (1 s), and reached only when the server never closes it.
const CLOSE_BOUND: Duration = Duration::from_secs(30);

/// Whether the server closes `stream` (end of file or a reset) within [`CLOSE_BOUND`], and what
/// it sent before.
async fn closed_by_server(stream: &mut TcpStream) -> Option<Vec<u8>> {
    let mut seen = Vec::new();
    let read = tokio::time::timeout(CLOSE_BOUND, async {
        let mut buf = [0u8; 4096];
        loop {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => seen.extend_from_slice(&buf[..n]),
            }
        }
    })
    .await;
    read.is_ok().then_some(seen)
}

/// One keep-alive `GET /healthz` on `stream`: whether it was answered `200 ok`.
async fn keep_alive_health(stream: &mut TcpStream) -> bool {
    if stream
        .write_all(b"GET /healthz HTTP/1.1\r\nhost: localhost\r\n\r\n")
        .await
        .is_err()
    {
        return false;
    }
    let mut answer = Vec::new();
    let mut buf = [0u8; 1024];
    let complete = tokio::time::timeout(CLOSE_BOUND, async {
        loop {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => return false,
                Ok(n) => answer.extend_from_slice(&buf[..n]),
            }
            if answer.ends_with(b"\r\n\r\nok\n") {
                return true;
            }
        }
    })
    .await;
    complete == Ok(true) && answer.starts_with(b"HTTP/1.1 200")
}

/// The CPU time (user and system) `pid` has used, in clock ticks of `/proc` (USER_HZ, 100 a
/// second on Linux).
fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("/proc/PID/stat");
    // The command name (field 2) may hold spaces; the fields after its `)` are plain.
    let after = &stat[stat.rfind(')').expect("a stat line") + 2..];
    let fields: Vec<&str> = after.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after the name.
    fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
}

/// Regression: at `RLIMIT_NOFILE` 256 with 372 idle connections the accept loop retried a
/// failing `accept` at once, used a core and wrote millions of warnings, and `/healthz` timed
/// out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_the_open_file_limit_the_accept_loop_backs_off_and_serves_again_once_descriptors_are_free()
 {
    let dir = tempfile::tempdir().unwrap();
    let config = config(dir.path(), "");
    // The shell lowers the limit and `exec`s the server, so the child is the server.
    let mut command = Command::new("sh");
    command.args([
        "-c",
        "ulimit -n 256 && exec \"$0\" \"$@\"",
        BIN,
        "--config",
        config.to_str().unwrap(),
        "serve",
    ]);
    let server = Server::spawn(command);
    let pid = server.child.id();

    // More idle connections than the server has descriptors: the kernel completes them all
    // (the listen backlog holds the rest), the server accepts until `accept` fails.
    let mut flood = Vec::new();
    for _ in 0..400 {
        // A server that stopped taking connections off the queue lets it fill: the flood is as
        // large as it could get.
        match tokio::time::timeout(Duration::from_secs(5), TcpStream::connect(&server.addr)).await {
            Ok(Ok(stream)) => flood.push(stream),
            _ => break,
        }
    }
    assert!(
        flood.len() > 256,
        "{} connections: not above the limit",
        flood.len()
    );
    let before = cpu_ticks(pid);
    // A fresh request while the descriptors are gone: it waits in the backlog. The time it is
    // given is the measuring window of the CPU the server spends meanwhile (not a wait for
    // anything to happen).
    let addr = server.addr.clone();
    let mut fresh = tokio::spawn(async move { call(&addr, "GET", "/healthz", None, None).await });
    let window = Duration::from_secs(3);
    let early = tokio::time::timeout(window, &mut fresh).await;
    let spent = cpu_ticks(pid) - before;
    // Spinning on `accept` costs a core for the whole window (300 ticks); backing off costs
    // next to nothing. A quarter of the window leaves room for a loaded machine.
    assert!(
        spent < 75,
        "the server used {spent} ticks of CPU in a {window:?} window at the open-file limit \
         ({} idle connections): its accept loop spins",
        flood.len()
    );

    drop(flood);
    let (status, _) = match early {
        Ok(answered) => answered.unwrap(),
        Err(_) => tokio::time::timeout(CLOSE_BOUND, fresh)
            .await
            .expect("the waiting request is answered once the flood is closed")
            .unwrap(),
    };
    assert_eq!(status, 200);
    let (status, _) = call(&server.addr, "GET", "/healthz", None, None).await;
    assert_eq!(status, 200, "a new connection is served");
    let (status, stderr) = server.stop();
    assert!(status.success(), "{status:?}: {stderr}");
}

/// Regression: connections that sent half a request, or nothing, or idled after an answer
/// were all still open 45 s later.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clients_that_never_finish_their_headers_send_nothing_or_idle_are_disconnected() {
    let dir = tempfile::tempdir().unwrap();
    let config = config(
        dir.path(),
        "header_read_timeout = \"1s\"\nidle_timeout = \"1s\"\n",
    );
    let server = Server::start(&config, false);

    let mut partial = TcpStream::connect(&server.addr).await.unwrap();
    partial
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
        .await
        .unwrap();
    let mut silent = TcpStream::connect(&server.addr).await.unwrap();
    let mut idle = TcpStream::connect(&server.addr).await.unwrap();
    assert!(keep_alive_health(&mut idle).await, "a keep-alive request");

    let (partial, silent, idle) = tokio::join!(
        closed_by_server(&mut partial),
        closed_by_server(&mut silent),
        closed_by_server(&mut idle),
    );
    assert!(
        partial.is_some(),
        "a half-sent request holds its connection"
    );
    assert!(silent.is_some(), "a silent connection is held");
    assert!(
        idle.is_some(),
        "an idle keep-alive connection is held for ever"
    );

    // The server still serves.
    let (status, _) = call(&server.addr, "GET", "/healthz", None, None).await;
    assert_eq!(status, 200);
    let (status, stderr) = server.stop();
    assert!(status.success(), "{status:?}: {stderr}");
}

/// Regression: there was no cap on connections.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_beyond_max_connections_is_closed_and_the_slot_is_given_back() {
    let dir = tempfile::tempdir().unwrap();
    let config = config(dir.path(), "max_connections = 3\n");
    let server = Server::start(&config, false);

    let mut held = Vec::new();
    for _ in 0..3 {
        let mut stream = TcpStream::connect(&server.addr).await.unwrap();
        assert!(keep_alive_health(&mut stream).await, "within the cap");
        held.push(stream);
    }
    let mut extra = TcpStream::connect(&server.addr).await.unwrap();
    // The request may meet a closed socket already.
    let _ = extra
        .write_all(b"GET /healthz HTTP/1.1\r\nhost: localhost\r\n\r\n")
        .await;
    let answer = closed_by_server(&mut extra)
        .await
        .expect("the fourth connection is closed");
    assert!(
        answer.is_empty(),
        "the fourth connection was served: {}",
        String::from_utf8_lossy(&answer)
    );

    // One closed: its slot serves a new connection.
    drop(held.pop());
    let addr = server.addr.clone();
    scaleset_eventually::eventually("a new connection is served once one closed", || {
        let addr = addr.clone();
        async move {
            let mut stream = TcpStream::connect(&addr).await.ok()?;
            keep_alive_health(&mut stream).await.then_some(())
        }
    })
    .await;
    let (status, stderr) = server.stop();
    assert!(status.success(), "{status:?}: {stderr}");
}

/// `POST /login` with `token` over `stream`: the answer's head (status line and headers).
async fn sign_in<S>(stream: &mut S, host: &str, token: &str) -> String
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    let body = format!("token={token}");
    let request = format!(
        "POST /login HTTP/1.1\r\nhost: {host}\r\ncontent-type: application/x-www-form-urlencoded\r\n\
         content-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer).await;
    let answer = String::from_utf8_lossy(&answer).into_owned();
    answer
        .split_once("\r\n\r\n")
        .map_or(answer.clone(), |(head, _)| head.to_owned())
}

/// The value of header `name` in an answer's head, if present.
fn header<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    head.lines().skip(1).find_map(|line| {
        let (key, value) = line.split_once(':')?;
        key.trim()
            .eq_ignore_ascii_case(name)
            .then_some(value.trim())
    })
}

/// Whether a `Set-Cookie` value carries the attribute `name`.
fn has_attribute(cookie: &str, name: &str) -> bool {
    cookie
        .split(';')
        .skip(1)
        .any(|attribute| attribute.trim().eq_ignore_ascii_case(name))
}

fn minted(config: &Path) -> String {
    let created = token(config, "browser");
    assert!(created.status.success(), "{created:?}");
    String::from_utf8(created.stdout).unwrap().trim().to_owned()
}

/// Regression: over TLS the sign-in cookie (which holds the API token) had no `Secure`, and no
/// answer carried `Strict-Transport-Security`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_tls_or_behind_a_tls_proxy_the_sign_in_cookie_is_secure_and_answers_carry_hsts() {
    let dir = tempfile::tempdir().unwrap();
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
    std::fs::write(dir.path().join("cert.pem"), cert.cert.pem()).unwrap();
    std::fs::write(dir.path().join("key.pem"), cert.signing_key.serialize_pem()).unwrap();
    let with_tls = config(
        dir.path(),
        &format!(
            "tls_cert_file = \"{}\"\ntls_key_file = \"{}\"\n",
            dir.path().join("cert.pem").display(),
            dir.path().join("key.pem").display()
        ),
    );
    let secret = minted(&with_tls);
    let server = Server::start(&with_tls, false);
    let (mut stream, _) = tls_connect(&server.addr, cert.cert.der().clone(), &[b"http/1.1"]).await;
    let head = sign_in(&mut stream, "localhost", &secret).await;
    assert!(head.starts_with("HTTP/1.1 303"), "{head}");
    let cookie = header(&head, "set-cookie").expect("a cookie");
    assert!(has_attribute(cookie, "Secure"), "{cookie}");
    assert!(has_attribute(cookie, "HttpOnly"), "{cookie}");
    assert_eq!(
        header(&head, "strict-transport-security"),
        Some("max-age=31536000"),
        "{head}"
    );
    let (status, stderr) = server.stop();
    assert!(status.success(), "{status:?}: {stderr}");

    // Plain HTTP behind a TLS-terminating proxy: the same, once configured.
    let dir = tempfile::tempdir().unwrap();
    let proxied = config(dir.path(), "behind_tls_proxy = true\n");
    let secret = minted(&proxied);
    let server = Server::start(&proxied, false);
    let mut stream = TcpStream::connect(&server.addr).await.unwrap();
    let head = sign_in(&mut stream, &server.addr, &secret).await;
    assert!(head.starts_with("HTTP/1.1 303"), "{head}");
    let cookie = header(&head, "set-cookie").expect("a cookie");
    assert!(has_attribute(cookie, "Secure"), "{cookie}");
    assert!(
        header(&head, "strict-transport-security").is_some(),
        "{head}"
    );
    let (status, stderr) = server.stop();
    assert!(status.success(), "{status:?}: {stderr}");

    // Plain HTTP without a proxy: a `Secure` cookie would never come back.
    let dir = tempfile::tempdir().unwrap();
    let plain = config(dir.path(), "");
    let secret = minted(&plain);
    let server = Server::start(&plain, false);
    let mut stream = TcpStream::connect(&server.addr).await.unwrap();
    let head = sign_in(&mut stream, &server.addr, &secret).await;
    let cookie = header(&head, "set-cookie").expect("a cookie");
    assert!(!has_attribute(cookie, "Secure"), "{cookie}");
    assert!(
        header(&head, "strict-transport-security").is_none(),
        "{head}"
    );
    let (status, stderr) = server.stop();
    assert!(status.success(), "{status:?}: {stderr}");
}

/// A tmpfs mounted on a directory for one test, unmounted when dropped.
struct Tmpfs(PathBuf);

impl Tmpfs {
    /// Mounts a tmpfs of `size` on `dir`. Required (a failure names why) when
    /// `SCALESET_REQUIRE_MOUNT` is set to anything but `0`, or, unset, when this process runs as
    /// root (as CI does: the test must not pass unseen there); otherwise `None`, with a note on
    /// stderr. `SCALESET_REQUIRE_MOUNT=0` skips it knowingly (root without `CAP_SYS_ADMIN`).
    fn mount(dir: &Path, size: &str) -> Option<Self> {
        let required = match std::env::var("SCALESET_REQUIRE_MOUNT") {
            Ok(value) => value != "0",
            Err(_) => nix::unistd::geteuid().is_root(),
        };
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir)
            .output();
        match out {
            Ok(out) if out.status.success() => Some(Self(dir.to_owned())),
            failed => {
                assert!(
                    !required,
                    "mounting a tmpfs on {} failed ({failed:?}): filling a filesystem needs root \
                     with CAP_SYS_ADMIN; set SCALESET_REQUIRE_MOUNT=0 to skip this test knowingly",
                    dir.display()
                );
                eprintln!(
                    "skipped: mounting a tmpfs needs root with CAP_SYS_ADMIN \
                     (SCALESET_REQUIRE_MOUNT=1 fails instead)"
                );
                None
            }
        }
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

/// Writes zeros to `path` until the filesystem is full.
fn fill(path: &Path) {
    use std::io::Write as _;
    let mut file = std::fs::File::create(path).unwrap();
    let chunk = vec![0u8; 16 * 1024];
    while file.write_all(&chunk).is_ok() {}
    // The last partial chunk.
    while file.write_all(&[0u8; 512]).is_ok() {}
    let _ = file.sync_all();
}

fn credentials(name: &str) -> Value {
    json!({
        "name": name, "auth": {"kind": "pat", "token": "ghp_example"},
        "endpoint": {"base_url": "https://github.com"},
    })
}

/// Regression: with SQLite's filesystem full the API answered `500 internal` and `/readyz`
/// said ready.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_is_a_503_outage_with_readyz_not_ready_until_space_is_freed() {
    let dir = tempfile::tempdir().unwrap();
    let Some(_tmpfs) = Tmpfs::mount(dir.path(), "16m") else {
        return;
    };
    let config = config(dir.path(), "");
    let secret = minted(&config);
    let server = Server::start(&config, false);
    let t = Some(secret.as_str());
    let database = dir.path().join("scaleset.db").display().to_string();

    let filler = dir.path().join("filler");
    fill(&filler);
    // The write-ahead log may have room for a few rows still: create until one is refused.
    let mut created = Vec::new();
    let mut refused = None;
    for n in 0..500 {
        let name = format!("c{n}");
        let (status, body) = call(
            &server.addr,
            "POST",
            "/api/v1/credentials",
            t,
            Some(credentials(&name)),
        )
        .await;
        match status {
            201 => created.push(name),
            _ => {
                refused = Some((name, status, body));
                break;
            }
        }
    }
    let (name, status, body) = refused.expect("a create is refused on a full disk");
    assert_eq!(status, 503, "{body}");
    assert_eq!(body["code"], "unavailable", "{body}");
    let message = body["message"].as_str().unwrap_or_default();
    assert!(
        message.contains(&database),
        "the reason names the database: {message}"
    );

    let (status, ready) = call(&server.addr, "GET", "/readyz", None, None).await;
    assert_eq!(status, 503, "{ready}");
    assert_eq!(ready["ready"], false, "{ready}");
    let (status, _) = call(&server.addr, "GET", "/healthz", None, None).await;
    assert_eq!(status, 200, "the process itself is fine");

    std::fs::remove_file(&filler).unwrap();
    let addr = server.addr.clone();
    scaleset_eventually::eventually("/readyz is ready once space is freed", || {
        let addr = addr.clone();
        async move {
            let (status, _) = call(&addr, "GET", "/readyz", None, None).await;
            (status == 200).then_some(())
        }
    })
    .await;
    let (status, body) = call(
        &server.addr,
        "POST",
        "/api/v1/credentials",
        t,
        Some(credentials(&name)),
    )
    .await;
    assert_eq!(
        status, 201,
        "the refused create succeeds once space is freed: {body}"
    );
    let (status, list) = call(&server.addr, "GET", "/api/v1/credentials", t, None).await;
    assert_eq!(status, 200, "{list}");
    let mut names: Vec<String> = list["items"]
        .as_array()
        .or_else(|| list.as_array())
        .expect("a list")
        .iter()
        .map(|c| c["name"].as_str().unwrap().to_owned())
        .collect();
    names.sort();
    let mut expected = created;
    expected.push(name);
    expected.sort();
    assert_eq!(
        names, expected,
        "each create recorded once, the refused one once"
    );
    let (status, stderr) = server.stop();
    assert!(status.success(), "{status:?}: {stderr}");
}
