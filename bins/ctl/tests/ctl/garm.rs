//! `scalesetctl import garm` against a fake GARM: a loopback HTTP server answering each path
//! with the `response` a real GARM gave there (`shared/reference/garm/api`, read by path), and
//! refusing any request without its bearer token, as GARM does.

use std::collections::BTreeMap;
use std::path::PathBuf;

use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, post};
use axum::{Json, Router};

use crate::helpers::ctl_with_env;

/// The JWT the fake GARM hands out and accepts.
const JWT: &str = "eyJhbGciOiJIUzI1NiJ9.garm-test.signature";

fn capture_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/reference/garm/api")
}

/// GARM's read paths → the captured file answering them.
fn answers() -> BTreeMap<&'static str, &'static str> {
    BTreeMap::from([
        ("/api/v1/controller-info", "controller-info.json"),
        ("/api/v1/github/credentials", "github-credentials.json"),
        ("/api/v1/organizations", "organizations.json"),
        ("/api/v1/repositories", "repositories.json"),
        ("/api/v1/enterprises", "enterprises.json"),
        ("/api/v1/scalesets", "scalesets.json"),
        ("/api/v1/pools", "pools.json"),
        ("/api/v1/providers", "providers.json"),
        ("/api/v1/instances", "instances.json"),
    ])
}

async fn serve(uri: Uri, headers: HeaderMap) -> Response {
    if headers.get("authorization").and_then(|v| v.to_str().ok()) != Some(&format!("Bearer {JWT}"))
    {
        return (
            StatusCode::UNAUTHORIZED,
            "{\"error\":\"Authentication failed\"}",
        )
            .into_response();
    }
    let Some(file) = answers().get(uri.path()).copied() else {
        return (StatusCode::NOT_FOUND, "{\"error\":\"Not Found\"}").into_response();
    };
    let text = std::fs::read_to_string(capture_dir().join(file)).expect("the capture");
    let whole: serde_json::Value = serde_json::from_str(&text).expect("captured JSON");
    Json(whole["response"].clone()).into_response()
}

async fn login(Json(body): Json<serde_json::Value>) -> Response {
    if body["username"] == "admin" && body["password"] == "s3cret" {
        Json(serde_json::json!({"token": JWT})).into_response()
    } else {
        (
            StatusCode::UNAUTHORIZED,
            "{\"error\":\"Authentication failed\"}",
        )
            .into_response()
    }
}

/// The fake GARM on `127.0.0.1:0`; stops when the returned runtime is dropped.
fn fake_garm() -> (String, tokio::runtime::Runtime) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let app = Router::new()
        .route("/api/v1/auth/login", post(login))
        .fallback(any(serve));
    runtime.spawn(async move { axum::serve(listener, app).await });
    (url, runtime)
}

#[test]
fn import_garm_writes_the_fleet_file_and_says_what_to_supply() {
    let (url, _garm) = fake_garm();
    let dir = tempfile::tempdir().unwrap();
    let token = dir.path().join("garm.jwt");
    std::fs::write(&token, format!("{JWT}\n")).unwrap();
    let fleet = dir.path().join("fleet.toml");
    let run = ctl_with_env(
        &[
            "import",
            "garm",
            "--url",
            &url,
            "--token-file",
            token.to_str().unwrap(),
            "--output-file",
            fleet.to_str().unwrap(),
        ],
        // scaleset-server's settings are not GARM's: they must not be used.
        &[
            ("SCALESET_URL", "http://127.0.0.1:1"),
            ("SCALESET_TOKEN", "sst_x"),
        ],
    );
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        run.stdout.contains(
            "imported 2 scale set(s) from GARM controller 89a4130b-9de1-47c5-8ca8-e2640daa0e13"
        ),
        "{run:?}"
    );
    assert!(
        run.stdout.contains("GARM's API never returns secrets"),
        "{run:?}"
    );
    assert!(run.stdout.contains("Stop GARM before applying"), "{run:?}");
    assert!(
        run.stdout.contains(
            "scalesetctl credential create simpat --pat-file /etc/scaleset/garm-simpat.token"
        ),
        "{run:?}"
    );
    assert!(run.stdout.contains("provider \"rec\""), "{run:?}");
    let text = std::fs::read_to_string(&fleet).unwrap();
    assert!(text.contains("github_id = 3"), "{text}");
    assert!(text.contains("github_id = 4"), "{text}");
    assert!(!text.contains(JWT), "the token never reaches the file");
    assert!(!run.stdout.contains(JWT) && !run.stderr.contains(JWT));
    // The file is a fleet the server's own parser takes (as plan/apply send it), the
    // takeover note included.
    let parsed = scaleset_config::parse_fleet(
        "fleet.toml",
        &text,
        None,
        &["simpat".to_owned()].into(),
        Some(&["rec".to_owned()].into()),
    )
    .unwrap_or_else(|e| panic!("{e}\n{text}"));
    let names: Vec<&str> = parsed
        .scale_sets
        .iter()
        .map(|s| s.spec.name.as_str())
        .collect();
    assert_eq!(names, ["linux-small", "gpu-big"]);
    assert_eq!(parsed.scale_sets[1].spec.runner_group.name, "gpu runners");
}

#[test]
fn import_garm_logs_in_with_a_password_and_prints_json() {
    let (url, _garm) = fake_garm();
    let dir = tempfile::tempdir().unwrap();
    let password = dir.path().join("password");
    std::fs::write(&password, "s3cret\n").unwrap();
    let run = ctl_with_env(
        &[
            "-o",
            "json",
            "import",
            "garm",
            "--url",
            &url,
            "--username",
            "admin",
            "--password-file",
            password.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(run.code, 0, "{run:?}");
    let report: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(
        report["garm_controller_id"],
        "89a4130b-9de1-47c5-8ca8-e2640daa0e13"
    );
    assert_eq!(report["scale_sets"][1]["name"], "gpu-big");
    assert_eq!(report["scale_sets"][1]["github_id"], 4);
    assert!(
        report["fleet"]
            .as_str()
            .unwrap()
            .contains("[scale_set.takeover]")
    );
    assert!(!run.stdout.contains("s3cret") && !run.stderr.contains("s3cret"));
}

#[test]
fn import_garm_with_a_wrong_token_names_garm_and_what_to_do() {
    let (url, _garm) = fake_garm();
    let dir = tempfile::tempdir().unwrap();
    let token = dir.path().join("garm.jwt");
    std::fs::write(&token, "stale").unwrap();
    let run = ctl_with_env(
        &[
            "import",
            "garm",
            "--url",
            &url,
            "--token-file",
            token.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stderr
            .contains("reading GARM's /api/v1/controller-info"),
        "{run:?}"
    );
    assert!(run.stderr.contains("401"), "{run:?}");
    assert!(!run.stderr.contains("stale"), "{run:?}");

    let none = ctl_with_env(&["import", "garm", "--url", &url], &[]);
    assert_eq!(none.code, 1, "{none:?}");
    assert!(none.stderr.contains("--token-file FILE"), "{none:?}");
}

/// Issue 37: the imported file, completed as the walk says (credentials and provider named as
/// the server has them), planned against a GitHub holding GARM's scale sets under the ids the
/// capture shows (3 and 4, after two of another controller's), with GARM's sessions still
/// open: each imported set is an adopt naming GARM, nothing is written.
#[test]
fn plan_of_an_imported_fleet_shows_each_set_adopted_as_imported_from_garm() {
    use crate::helpers::Server;
    const GARM: &str = "89a4130b-9de1-47c5-8ca8-e2640daa0e13";
    let (url, _garm) = fake_garm();
    // A GitHub whose 409 names the session's owner (older backends do; github.com today does
    // not, and then the state reason is the unnamed holder's).
    let server = Server::start_with(|config| config.conflict_names_owner = true);
    server.with_acme();
    let sim = &server.sim;
    let gpu = sim.create_runner_group("acme", "gpu runners").unwrap();
    sim.create_foreign_scale_set("acme", 1, "other-ctl-linux", "other-controller")
        .unwrap();
    sim.create_foreign_scale_set("acme", 1, "other-ctl-win", "other-controller")
        .unwrap();
    let owner = format!("garm-{GARM}");
    let labels = |l: &[&str]| l.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    let linux = sim
        .create_foreign_scale_set_with_labels(
            "acme",
            1,
            "linux-small",
            &owner,
            &labels(&["linux", "x64-small"]),
        )
        .unwrap();
    let big = sim
        .create_foreign_scale_set_with_labels(
            "acme",
            gpu,
            "gpu-big",
            &owner,
            &labels(&["gpu", "cuda"]),
        )
        .unwrap();
    assert_eq!((linux.scale_set_id, big.scale_set_id), (3, 4));

    let dir = tempfile::tempdir().unwrap();
    let token = dir.path().join("garm.jwt");
    std::fs::write(&token, JWT).unwrap();
    let imported = ctl_with_env(
        &[
            "import",
            "garm",
            "--url",
            &url,
            "--token-file",
            token.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(imported.code, 0, "{imported:?}");
    // The operator's part: the credentials and the provider as the server has them.
    let text = imported
        .stdout
        .replace("credentials = \"simpat\"", "credentials = \"sim\"")
        .replace("provider = \"rec\"", "provider = \"fake\"");
    let fleet = server.dir().join("garm-fleet.toml");
    std::fs::write(&fleet, &text).unwrap();
    let github_before = sim.state().scale_sets.len();

    let plan = server.ctl(&["plan", "-f", fleet.to_str().unwrap()]);
    assert_eq!(plan.code, 2, "{plan:?}");
    for (name, id) in [("linux-small", 3), ("gpu-big", 4)] {
        let line = plan
            .stdout
            .lines()
            .find(|l| l.contains(name))
            .unwrap_or_else(|| panic!("{name} in {plan:?}"));
        assert!(line.starts_with("adopt"), "{line}");
        assert!(
            line.contains(&format!(
                "imported from GARM {GARM}: GitHub's scale set {id}"
            )),
            "{line}"
        );
    }
    assert!(plan.stdout.contains("2 adopt"), "{plan:?}");
    let state = sim.state();
    assert_eq!(
        state.scale_sets.len(),
        github_before,
        "zero scale-set creates"
    );
    assert_eq!(
        state
            .scale_set(3)
            .and_then(|s| s.session.as_ref())
            .map(|s| s.owner_name.as_str()),
        Some(owner.as_str())
    );

    // Applied while GARM still holds the sessions: stored under GitHub's ids, not served, and
    // the operator is told to stop GARM; nothing is deleted.
    let (_, planned) = server.json(&["plan", "-f", fleet.to_str().unwrap()]);
    let digest = planned["digest"].as_str().unwrap().to_owned();
    server.ok(&["apply", "-f", fleet.to_str().unwrap(), "--digest", &digest]);
    let shown = server.eventually("the worker meets GARM's session", || {
        let (_, shown) = server.json(&["scale-set", "show", "linux-small"]);
        (shown["state"] == "foreign_session").then_some(shown)
    });
    assert_eq!(shown["github_id"], 3, "{shown}");
    let reason = shown["state_reason"].as_str().unwrap();
    assert!(
        reason.starts_with("GARM still runs: stop it first."),
        "{reason}"
    );
    assert!(reason.contains("Nothing was deleted"), "{reason}");
    assert_eq!(sim.state().scale_sets.len(), github_before);

    // GARM stops (its SIGTERM deletes its sessions): the sets are served under the same ids.
    sim.evict_session(3).unwrap();
    sim.evict_session(4).unwrap();
    for (name, id) in [("linux-small", 3), ("gpu-big", 4)] {
        server.eventually("the imported set is served", || {
            let (_, shown) = server.json(&["scale-set", "show", name]);
            (shown["state"] == "ready" && shown["github_id"] == id).then_some(())
        });
    }
    let state = sim.state();
    assert_eq!(
        state.scale_sets.len(),
        github_before,
        "zero scale-set creates"
    );
    for id in [3, 4] {
        let session = state.scale_set(id).and_then(|s| s.session.as_ref());
        assert!(
            session.is_some_and(|s| s.owner_name.starts_with("scaleset-")),
            "{session:?}"
        );
    }
}
