//! `scaleset-server demo` as a person runs it: the real binary on a temporary data directory
//! with free ports, its banner read from stdout, the API called with the printed token, the
//! status page loaded in headless Chromium (sign-in form, rendered DOM, screenshots saved under
//! `target/tmp/screenshots/`), and Ctrl-C (SIGINT) stopping it cleanly.
//!
//! The browser part needs Debian's `chromium` and `chromium-driver` (`.ci/run` installs them);
//! without them it prints a SKIPPED line, and fails instead under
//! `SCALESET_REQUIRE_BROWSER=1` (set by `.ci/run`).

mod browser;
mod decommission;
mod page_actions;

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use anyhow::{Context as _, Result, bail};
use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use scaleset_eventually::try_eventually;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt as _, BufReader};
use tokio::process::{Child, ChildStdout, Command};

/// The running demo and what its banner said.
struct Running {
    child: Child,
    /// The demo's data directory (its SQLite database is `scaleset.db` in it).
    dir: PathBuf,
    lines: tokio::io::Lines<BufReader<ChildStdout>>,
    page: String,
    api: String,
    token: String,
    github: String,
    banner: String,
}

async fn start(dir: &std::path::Path) -> Result<Running> {
    let mut child = Command::new(env!("CARGO_BIN_EXE_scaleset-server"))
        .args([
            "demo",
            "--listen",
            "127.0.0.1:0",
            "--github-listen",
            "127.0.0.1:0",
        ])
        .arg("--data-dir")
        .arg(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .context("starting scaleset-server demo")?;
    let stdout = child.stdout.take().context("stdout")?;
    let mut lines = BufReader::new(stdout).lines();
    let mut banner = String::new();
    let read = tokio::time::timeout(Duration::from_secs(120), async {
        while let Some(line) = lines.next_line().await? {
            banner.push_str(&line);
            banner.push('\n');
            if line.starts_with("(docs/quickstart.md)") {
                return Ok(());
            }
        }
        bail!("the demo ended before its banner was complete:\n{banner}")
    })
    .await;
    read.context("waiting for the banner")??;
    let field = |name: &str| {
        banner
            .lines()
            .find_map(|l| l.trim().strip_prefix(name))
            .and_then(|rest| rest.split_whitespace().next())
            .map(str::to_owned)
            .with_context(|| format!("no {name:?} line in:\n{banner}"))
    };
    Ok(Running {
        dir: dir.to_path_buf(),
        page: field("status page")?,
        api: field("API ")?,
        token: field("API token")?,
        github: field("simulated GitHub")?,
        child,
        lines,
        banner,
    })
}

async fn get(url: &str, bearer: Option<&str>) -> Result<(u16, http::HeaderMap, String)> {
    let client = Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
    let mut request = http::Request::get(url);
    if let Some(token) = bearer {
        request = request.header("authorization", format!("Bearer {token}"));
    }
    let response = client
        .request(request.body(Full::new(Bytes::new()))?)
        .await?;
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let body = response.into_body().collect().await?.to_bytes();
    Ok((status, headers, String::from_utf8_lossy(&body).into_owned()))
}

fn screenshots() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("screenshots")
}

/// A screenshot that `docs/` shows: written under `target/tmp/screenshots/`, and copied into
/// `docs/` when `SCALESET_UPDATE_DOCS=1` (as the OpenAPI document is regenerated), so the
/// picture is the real page the caption describes; otherwise the docs' copy must exist.
async fn doc_screenshot(browser: &browser::Browser, name: &str) -> Result<()> {
    let taken = screenshots().join(name);
    browser.screenshot(&taken).await?;
    let docs = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../docs")
        .join(name);
    if std::env::var_os("SCALESET_UPDATE_DOCS").is_some_and(|v| v == "1") {
        std::fs::copy(&taken, &docs)
            .with_context(|| format!("copying {} to {}", taken.display(), docs.display()))?;
    } else {
        anyhow::ensure!(
            docs.exists(),
            "{} is missing: run this test with SCALESET_UPDATE_DOCS=1 to write it",
            docs.display()
        );
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_demo_serves_its_fleet_and_status_page_and_stops_on_ctrl_c() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let mut demo = start(dir.path()).await?;
    assert!(demo.banner.contains("first run"), "{}", demo.banner);
    assert!(demo.token.starts_with("sst_"), "{}", demo.banner);
    assert!(
        demo.banner.contains(&format!(
            "export SCALESET_URL={} SCALESET_TOKEN={}\n",
            demo.page.trim_end_matches('/'),
            demo.token
        )),
        "the banner passes the URL and the token through the environment: {}",
        demo.banner
    );
    assert!(
        !demo.banner.contains("--token"),
        "no token on a command line, where the process list shows it: {}",
        demo.banner
    );

    // The API, with the printed token: the fleet comes up.
    let api = format!("{}/scale-sets", demo.api);
    let sets: Value = try_eventually("the API shows three ready scale sets", || {
        let (api, token) = (api.clone(), demo.token.clone());
        async move {
            let (status, _, body) = get(&api, Some(&token)).await?;
            anyhow::ensure!(status == 200, "{status}: {body}");
            let value: Value = serde_json::from_str(&body)?;
            let items = value["items"].as_array().cloned().unwrap_or_default();
            let ready = items.len() == 3 && items.iter().all(|i| i["state"] == "ready");
            Ok(ready.then_some(value))
        }
    })
    .await?;
    let release = sets["items"]
        .as_array()
        .and_then(|items| items.iter().find(|i| i["spec"]["name"] == "release"))
        .context("release")?;
    assert_eq!(release["provenance"], "adopted", "{release}");
    // Issue 31 item 5: the fleet authenticates as the demo's GitHub App (its key in the data
    // directory), the simulated GitHub checking its JWTs; the simulator's PAT is never sent.
    let key = std::fs::read_to_string(dir.path().join("github-app.pem"))?;
    assert!(
        key.starts_with("-----BEGIN PRIVATE KEY-----"),
        "the App key file"
    );
    let github = demo.github.trim_end_matches('/');
    let (status, _, body) = get(&format!("{github}/_sim/requests"), None).await?;
    anyhow::ensure!(status == 200, "{status}: {body}");
    let requests: Value = serde_json::from_str(&body)?;
    let minted = requests["counts"]["installation_token"]
        .as_u64()
        .unwrap_or(0);
    assert!(minted >= 1, "no installation token was fetched: {requests}");
    let refused = requests["log"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .filter(|r| r["endpoint"] == "installation_token" && r["status"] != 201)
        .count();
    assert_eq!(refused, 0, "an App JWT was refused: {requests}");
    let (_, _, body) = get(&format!("{github}/_sim/pats"), None).await?;
    let pats: Value = serde_json::from_str(&body)?;
    let pat_uses: u64 = pats
        .as_array()
        .context("the PATs")?
        .iter()
        .filter_map(|p| p["uses"].as_u64())
        .sum();
    assert_eq!(pat_uses, 0, "a PAT was sent: {pats}");
    // The fake machines boot as GARM's images do: JIT files from the metadata endpoints with
    // their instance token, then `idle` with the agent id and their system info reported.
    let instances = format!("{}/instances", demo.api);
    let booted: Value = try_eventually(
        "a runner reports that it booted through the metadata",
        || {
            let (instances, api, token) = (instances.clone(), demo.api.clone(), demo.token.clone());
            async move {
                let (status, _, body) = get(&instances, Some(&token)).await?;
                anyhow::ensure!(status == 200, "{status}: {body}");
                let value: Value = serde_json::from_str(&body)?;
                for item in value["items"].as_array().cloned().unwrap_or_default() {
                    let name = item["name"].as_str().context("instance name")?;
                    let (_, _, body) =
                        get(&format!("{api}/instances/{name}"), Some(&token)).await?;
                    let shown: Value = serde_json::from_str(&body)?;
                    if shown["bootstrap"]["status"] == "idle" {
                        return Ok(Some(shown));
                    }
                }
                Ok(None)
            }
        },
    )
    .await?;
    assert_eq!(booted["bootstrap"]["os_name"], "scaleset-demo", "{booted}");
    assert!(booted["bootstrap"]["agent_id"].is_i64(), "{booted}");
    assert_eq!(
        booted["github_runner_id"], booted["bootstrap"]["agent_id"],
        "the agent id the machine reports is the runner GitHub registered: {booted}"
    );
    // Without a token: the API refuses, the page sends to the sign-in form.
    assert_eq!(get(&api, None).await?.0, 401);
    let (status, headers, _) = get(&demo.page, None).await?;
    assert_eq!(status, 303);
    assert_eq!(
        headers.get("location").map(|v| v.as_bytes()),
        Some(&b"/login"[..])
    );

    match browser::installed() {
        Some((driver, chromium)) => in_the_browser(&demo, driver, chromium).await?,
        None if std::env::var_os("SCALESET_REQUIRE_BROWSER").is_some() => {
            bail!("SCALESET_REQUIRE_BROWSER is set but chromium or chromedriver is missing")
        }
        None => println!(
            "SKIPPED the browser half: install Debian's chromium and chromium-driver to run it"
        ),
    }

    // Ctrl-C: a clean stop, and the data directory resumes.
    let pid = nix::unistd::Pid::from_raw(
        i32::try_from(demo.child.id().context("pid")?).context("pid range")?,
    );
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT)?;
    let status = tokio::time::timeout(Duration::from_secs(120), demo.child.wait())
        .await
        .context("the demo did not stop on SIGINT")??;
    let mut rest = String::new();
    while let Some(line) = demo.lines.next_line().await? {
        rest.push_str(&line);
    }
    assert!(status.success(), "exit {status:?}");
    assert!(rest.contains("demo stopped"), "{rest}");
    assert!(!dir.path().join("demo.lock").exists() || status.success());
    let mut again = start(dir.path()).await?;
    assert!(again.banner.contains("resumed"), "{}", again.banner);
    again.child.kill().await?;
    Ok(())
}

/// Issue 29 item 17a: `scaleset-server demo | head -3` (or `| tee`, then Ctrl-C): the reader
/// of stdout is gone when the demo prints its farewell. That is no panic (exit 101): Ctrl-C
/// still stops the demo cleanly.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_after_the_reader_of_stdout_went_away_is_a_clean_stop() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let Running {
        mut child, lines, ..
    } = start(dir.path()).await?;
    // As `head` does once it has its lines: the pipe's reading end is closed.
    drop(lines);
    let pid =
        nix::unistd::Pid::from_raw(i32::try_from(child.id().context("pid")?).context("pid range")?);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT)?;
    let status = tokio::time::timeout(Duration::from_secs(120), child.wait())
        .await
        .context("the demo did not stop on SIGINT")??;
    assert_ne!(status.code(), Some(101), "a panic: {status:?}");
    assert!(status.success(), "exit {status:?}");
    Ok(())
}

async fn in_the_browser(demo: &Running, driver: &str, chromium: &str) -> Result<()> {
    let browser = browser::Browser::start(driver, chromium).await?;
    browser.goto(&demo.page).await?;
    assert!(browser.url().await?.ends_with("/login"), "sent to sign in");
    browser.type_into("#token", "sst_not-a-token").await?;
    browser.click("button[type=submit]").await?;
    // The form posts; until the answer replaces the page, the old page has no error to read.
    let error = try_eventually(
        "the sign-in page shows why the token was refused",
        || async {
            let error = browser
            .eval("var e = document.querySelector('#login-error'); return e ? e.textContent : null")
            .await?;
            anyhow::Ok(
                error
                    .as_str()
                    .is_some_and(|e| !e.trim().is_empty())
                    .then_some(error),
            )
        },
    )
    .await?;
    assert!(
        error.as_str().is_some_and(|e| e.contains("not valid")),
        "{error}"
    );

    browser.type_into("#token", &demo.token).await?;
    browser.click("button[type=submit]").await?;
    // The rendered DOM, as the browser built it.
    let rows = try_eventually("the page shows three ready rows with runners", || async {
        let rows = browser
            .eval(
                "return Array.from(document.querySelectorAll('#scale-sets tr.scale-set')).map(function (r) { \
                   return { name: r.dataset.name, state: r.dataset.state, \
                            provenance: r.querySelector('[data-provenance]').dataset.provenance, \
                            evidence: r.querySelector('.evidence').textContent, \
                            idle: Number(r.querySelector('td.idle').textContent), \
                            busy: Number(r.querySelector('td.busy').textContent), \
                            last: r.querySelector('td.last').textContent, \
                            events: r.querySelectorAll('ul.events li').length }; })",
            )
            .await?;
        let list = rows.as_array().cloned().unwrap_or_default();
        let ready = list.len() == 3
            && list.iter().all(|r| r["state"] == "ready")
            && list.iter().map(|r| r["idle"].as_u64().unwrap_or(0) + r["busy"].as_u64().unwrap_or(0)).sum::<u64>() > 0
            && list.iter().any(|r| r["last"].as_str().is_some_and(|t| t.contains("ago")));
        anyhow::Ok(ready.then_some(list))
    })
    .await?;
    let names: Vec<&str> = rows.iter().filter_map(|r| r["name"].as_str()).collect();
    assert_eq!(names, ["linux-arm64", "linux-x64", "release"]);
    let release = &rows[2];
    assert_eq!(release["provenance"], "adopted");
    assert!(
        release["evidence"]
            .as_str()
            .is_some_and(|e| e.contains("owner label")),
        "{release}"
    );
    assert!(
        rows.iter().all(|r| r["events"].as_u64() > Some(0)),
        "{rows:?}"
    );
    let title = browser.eval("return document.title").await?;
    assert_eq!(title, "Scale sets · scaleset");
    doc_screenshot(&browser, "status-page.png").await?;

    // The detail view of linux-x64 (it keeps an idle runner): its instances.
    browser
        .click("tr.scale-set[data-name='linux-x64'] a")
        .await?;
    let instances = try_eventually("the detail view lists instances", || async {
        let n = browser
            .eval("return document.querySelectorAll('#instances tr.instance').length")
            .await?;
        anyhow::Ok(n.as_u64().filter(|n| *n > 0))
    })
    .await?;
    assert!(instances >= 1);
    let heading = browser
        .eval("return document.querySelector('#name').textContent")
        .await?;
    assert_eq!(heading, "linux-x64");
    // The instances in an operator's words: idle or busy (never a bare `running`), created in
    // UTC to the second, how long in this status, and no pool-key column.
    let table = browser
        .eval(
            "return { statuses: Array.from(document.querySelectorAll('#instances td.status')).map(function (t) { return t.textContent; }), \
                      created: Array.from(document.querySelectorAll('#instances td.created')).map(function (t) { return t.textContent; }), \
                      since: Array.from(document.querySelectorAll('#instances td.since')).map(function (t) { return t.textContent; }), \
                      heads: Array.from(document.querySelectorAll('#instances th')).map(function (t) { return t.textContent; }) }",
        )
        .await?;
    let texts = |key: &str| -> Vec<String> {
        table[key]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    };
    assert!(
        texts("statuses")
            .iter()
            .all(|s| ["idle", "busy", "starting", "deleting"]
                .iter()
                .any(|w| s.starts_with(w))),
        "{table}"
    );
    assert!(
        texts("created")
            .iter()
            .all(|c| c.ends_with(" UTC") && c.len() == "2026-12-06 17:37:34 UTC".len()),
        "{table}"
    );
    assert!(
        texts("since")
            .iter()
            .all(|s| s.starts_with("for ") || s == "just now"),
        "{table}"
    );
    assert!(!texts("heads").iter().any(|h| h == "pool key"), "{table}");
    // A fresh demo has minutes of samples, not an hour: the axis is those minutes, and the
    // page says since when it collects.
    let axis = browser
        .eval(
            "var s = document.querySelector('#collecting-since'); \
             return { since: s ? s.textContent : null, \
                      start: document.querySelector('#chart-waiting text.axis-start').textContent }",
        )
        .await?;
    assert!(
        axis["since"]
            .as_str()
            .is_some_and(|s| s.starts_with("collecting since ") && s.contains(" UTC")),
        "{axis}"
    );
    assert_eq!(
        axis["start"], "5 min ago",
        "a fresh demo's axis is the shortest: {axis}"
    );
    browser
        .screenshot(&screenshots().join("scale-set.png"))
        .await?;

    // Filtering keeps the page readable with many scale sets.
    browser.goto(&format!("{}?q=arm", demo.page)).await?;
    let filtered = browser
        .eval("return document.querySelectorAll('#scale-sets tr.scale-set').length")
        .await?;
    assert_eq!(filtered, 1);

    attention_and_charts(demo, &browser).await?;
    page_actions::operate_from_the_page(demo, &browser).await?;
    browser.stop().await
}

/// Issue 32 item 5: a blocked session and a failing provider need attention on the page, with
/// the reason and the command to run, and the detail page draws the last hour. The facts are
/// written into the demo's database as the worker records them (the listener's held-session
/// state, the scaler's provider failure, an hour of samples the worker would have taken).
async fn attention_and_charts(demo: &Running, browser: &browser::Browser) -> Result<()> {
    use diesel::{Connection as _, RunQueryDsl as _};
    let path = demo.dir.join("scaleset.db");
    let mut db = diesel::sqlite::SqliteConnection::establish(&path.display().to_string())?;
    let now = i64::try_from(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)?
            .as_millis(),
    )?;
    let mut sql = vec![
        "PRAGMA busy_timeout = 10000".to_owned(),
        "UPDATE scale_sets SET state = 'foreign_session', state_reason = 'another listener          (\"ci-old-controller\") holds the message session; stop it, or choose another          scale-set name. Nothing was deleted' WHERE name = 'linux-arm64'"
            .to_owned(),
        format!(
            "INSERT INTO scale_set_health (scale_set_id, provider_error, provider_error_at)              SELECT id, 'CreateInstance: the provider failed (exit code 1); stderr ends with:              quota exceeded (10 of 10 instances)', {now} FROM scale_sets WHERE name = 'release'              ON CONFLICT (scale_set_id) DO UPDATE SET provider_error = excluded.provider_error,              provider_error_at = excluded.provider_error_at"
        ),
    ];
    for minute in 1..60_i64 {
        // A burst of jobs half an hour ago, served by runners that came and went.
        let wave = (30 - (minute - 30).abs()).max(0);
        let (waiting, busy, starting) = (
            (wave / 4).max(0),
            (wave / 3).min(6),
            i64::from(wave % 5 == 1),
        );
        let latency = if busy > 0 {
            format!("{}", 8_000 + wave * 700)
        } else {
            "NULL".to_owned()
        };
        sql.push(format!(
            "INSERT OR REPLACE INTO scale_set_samples SELECT id, {at}, {waiting}, 1, {busy},              {starting}, {latency} FROM scale_sets WHERE name = 'linux-x64'",
            at = now - (60 - minute) * 60_000,
        ));
    }
    for statement in sql {
        diesel::sql_query(&statement).execute(&mut db)?;
    }

    browser.goto(&demo.page).await?;
    let flagged = try_eventually("two scale sets need attention", || async {
        let rows = browser
            .eval(
                "return Array.from(document.querySelectorAll('#scale-sets tr.scale-set[data-attention=yes]')).map(function (r) { \
                   var why = r.querySelector('.reason'); \
                   return { name: r.dataset.name, why: why.textContent, code: why.dataset.code }; })",
            )
            .await?;
        let list = rows.as_array().cloned().unwrap_or_default();
        anyhow::Ok((list.len() == 2).then_some(list))
    })
    .await?;
    // The table says why in one line, from the reason's code; the full text is the detail
    // page's.
    assert_eq!(flagged[0]["name"], "linux-arm64", "{flagged:?}");
    assert_eq!(flagged[0]["code"], "session_held", "{flagged:?}");
    assert_eq!(flagged[1]["name"], "release");
    assert_eq!(flagged[1]["code"], "provider_failing", "{flagged:?}");
    assert!(
        !flagged[1]["why"]
            .as_str()
            .is_some_and(|w| w.contains("quota exceeded")),
        "{flagged:?}"
    );
    let cards = browser
        .eval("return [document.querySelector('#attention').textContent, document.querySelector('#total').textContent]")
        .await?;
    assert_eq!(
        cards,
        serde_json::json!(["2", "3"]),
        "the cards agree with the rows"
    );
    // The stylesheet arrived under the CSP (served from /static, no inline style).
    let layout = browser
        .eval("return getComputedStyle(document.querySelector('header')).display")
        .await?;
    assert_eq!(layout, "flex");
    let sparks = browser
        .eval("return document.querySelectorAll('#scale-sets svg.spark').length")
        .await?;
    assert!(
        sparks.as_u64() >= Some(1),
        "a sparkline where an hour of samples is: {sparks}"
    );
    let cells = browser
        .eval("return document.querySelectorAll('#scale-sets td.spark svg.spark, #scale-sets td.spark .spark-empty').length")
        .await?;
    assert_eq!(cells, 3, "a sparkline, or a hint, per row");
    doc_screenshot(browser, "status-page-attention.png").await?;

    browser
        .click("tr.scale-set[data-name='linux-x64'] a")
        .await?;
    let lines = try_eventually("the detail page draws the last hour", || async {
        let lines = browser
            .eval(
                "return Array.from(document.querySelectorAll('figure.chart polyline')).map(function (p) { \
                   return p.getAttribute('points').split(' ').length; })",
            )
            .await?;
        let list = lines.as_array().cloned().unwrap_or_default();
        anyhow::Ok((list.len() == 5).then_some(list))
    })
    .await?;
    assert!(
        lines.iter().all(|n| n.as_u64() > Some(30)),
        "each line has the hour's points: {lines:?}"
    );
    for id in ["chart-waiting", "chart-runners", "chart-latency"] {
        let found = browser
            .eval(&format!(
                "return document.querySelector('#{id} svg') !== null"
            ))
            .await?;
        assert_eq!(found, true, "{id}");
    }
    let latency = browser
        .eval("return document.querySelector('#chart-latency polyline').getAttribute('points').split(' ').length")
        .await?;
    assert!(
        latency.as_u64() > Some(20),
        "the latency chart has the hour's jobs: {latency}"
    );
    // The detail page as docs/ shows it: tall enough for the charts and the instances.
    browser.resize(1500, 1500).await?;
    doc_screenshot(browser, "status-page-scale-set.png").await?;
    browser.resize(1500, 900).await?;
    browser
        .screenshot(&screenshots().join("scale-set-charts.png"))
        .await?;

    browser.goto(&demo.page).await?;
    browser.click("tr.scale-set[data-name='release'] a").await?;
    let failing = try_eventually("the detail page says the provider fails", || async {
        let text = browser
            .eval("var e = document.querySelector('#provider-error'); return e ? e.textContent : null")
            .await?;
        anyhow::Ok(text.as_str().map(str::to_owned))
    })
    .await?;
    assert!(failing.contains("quota exceeded"), "{failing}");
    browser
        .screenshot(&screenshots().join("scale-set-provider-failing.png"))
        .await?;
    fifty_failing(demo, browser).await
}

/// Rows of the overview at most this tall on average, in CSS pixels, with 50 failing scale
/// sets: a one-line reason per row. (A 400-character provider error printed in the row made
/// each about 300 px.)
const ROW_HEIGHT_BOUND: f64 = 110.0;

/// 47 more scale sets whose provider fails with a 400-character error, as the scaler records
/// it (the state's reason quoting the provider's message): the overview groups them at the
/// top, each row says why in one line and stays within [`ROW_HEIGHT_BOUND`], and the detail
/// page prints the provider's message once.
async fn fifty_failing(demo: &Running, browser: &browser::Browser) -> Result<()> {
    use diesel::{Connection as _, RunQueryDsl as _};
    let path = demo.dir.join("scaleset.db");
    let mut db = diesel::sqlite::SqliteConnection::establish(&path.display().to_string())?;
    let message = format!(
        "CreateInstance: the provider failed (exit code 1); stderr ends with: {}",
        "Error: Failed instance creation: Failed creating instance record: Failed \
         initializing instance: Requested image's type \"virtual-machine\" doesn't match \
         instance type \"container\" "
            .repeat(2)
    );
    let reason = format!(
        "provider \"fake\" failed 4 time(s) in a row: {message}; no instance is created or \
         deleted before the next try in 21s"
    );
    let quoted = |text: &str| text.replace('\'', "''");
    let mut sql = vec!["PRAGMA busy_timeout = 10000".to_owned()];
    for i in 0..47 {
        // A copy of `release`, disabled so no worker serves it: only its recorded state shows.
        sql.push("DROP TABLE IF EXISTS temp.copy".to_owned());
        sql.push(
            "CREATE TEMP TABLE copy AS SELECT * FROM scale_sets WHERE name = 'release'".to_owned(),
        );
        sql.push(format!(
            "UPDATE temp.copy SET id = '00000000-0000-4000-8000-{i:012}', name = 'failing-{i:02}', \
             github_id = NULL, provenance = NULL, enabled = 0, state = 'error', \
             state_reason = '{}'",
            quoted(&reason)
        ));
        sql.push("INSERT INTO scale_sets SELECT * FROM temp.copy".to_owned());
        sql.push(format!(
            "INSERT INTO scale_set_health (scale_set_id, provider_error, provider_error_at) \
             VALUES ('00000000-0000-4000-8000-{i:012}', '{}', 0)",
            quoted(&message)
        ));
    }
    for statement in sql {
        diesel::sql_query(&statement).execute(&mut db)?;
    }

    browser.goto(&demo.page).await?;
    let shown = try_eventually("the overview shows 50 rows, 49 needing attention", || async {
        let shown = browser
            .eval(
                "return { rows: document.querySelectorAll('#scale-sets tr.scale-set').length, \
                          flagged: document.querySelectorAll('#scale-sets tr.scale-set[data-attention=yes]').length, \
                          groups: Array.from(document.querySelectorAll('#groups .group')).map(function (g) { \
                            return { count: Number(g.dataset.count), text: g.querySelector('b').textContent }; }), \
                          height: document.documentElement.scrollHeight, \
                          table: document.querySelector('#scale-sets').getBoundingClientRect().height, \
                          longest: Math.max.apply(null, Array.from(document.querySelectorAll('#scale-sets tr.scale-set')).map(function (r) { \
                            return r.getBoundingClientRect().height; })) }",
            )
            .await?;
        anyhow::Ok((shown["rows"] == 50 && shown["flagged"].as_u64() >= Some(48)).then_some(shown))
    })
    .await?;
    println!("50 failing scale sets: {shown}");
    let groups = shown["groups"].as_array().cloned().unwrap_or_default();
    assert_eq!(
        groups
            .first()
            .map(|g| (g["count"].as_u64(), g["text"].as_str())),
        Some((Some(48), Some("48 scale sets: provider fake failing"))),
        "the 47 copies and release fail for one reason, grouped at the top: {shown}"
    );
    let table = shown["table"].as_f64().unwrap_or(f64::MAX);
    assert!(
        table <= 51.0 * ROW_HEIGHT_BOUND,
        "50 rows (and the head) within {ROW_HEIGHT_BOUND} px each on average: {shown}"
    );
    assert!(
        shown["longest"].as_f64() <= Some(2.0 * ROW_HEIGHT_BOUND),
        "no row is more than twice the bound: {shown}"
    );
    // The copies have no samples: their sparkline cell says so instead of a grey line.
    let hints = browser
        .eval("return document.querySelectorAll('#scale-sets td.spark .spark-empty').length")
        .await?;
    assert!(hints.as_u64() >= Some(47), "{hints}");
    let page_text = browser.eval("return document.body.innerText").await?;
    assert!(
        !page_text.as_str().unwrap_or("").contains("virtual-machine"),
        "the provider's message is the detail page's, not the table's"
    );
    doc_screenshot(browser, "status-page-50-failing.png").await?;

    browser
        .goto(&format!(
            "{}scale-sets/00000000-0000-4000-8000-000000000003",
            demo.page
        ))
        .await?;
    let text = try_eventually("the detail page of a failing set", || async {
        let text = browser.eval("return document.body.innerText").await?;
        anyhow::Ok(
            text.as_str()
                .filter(|t| t.contains("failing-03"))
                .map(str::to_owned),
        )
    })
    .await?;
    assert_eq!(
        text.matches("Requested image's type").count(),
        2,
        "the provider's message (which says it twice) is printed once: {text}"
    );
    Ok(())
}
