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
        .map(|s| s.spec.name().as_str())
        .collect();
    assert_eq!(names, ["linux-small", "gpu-big"]);
    assert_eq!(parsed.scale_sets[1].spec.runner_group().name, "gpu runners");
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
        // Issue 37's Done-when wording, where the action is read.
        assert!(
            line.starts_with(&format!("adopt (imported from GARM {GARM})")),
            "{line}"
        );
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

/// GARM's entity (organization) id in the capture: the second half of its pool ids.
const GARM_ORG: &str = "df2a9b56-d0d9-4e79-ad71-44d114828592";

/// A GARM, played as the capture recorded it: it creates its scale sets on GitHub (name
/// label first, then its tags, the runner group's id, `disableUpdate`), listens under
/// `garm-<controller id>`, takes the jobs GitHub assigns, registers JIT runners named
/// `<prefix>-<12 chars>` and boots them in its provider under `<set name>-<org id>`, tagged
/// with its controller id.
struct Garm<'a> {
    server: &'a crate::helpers::Server,
    client: scaleset_github::Client,
    controller: uuid::Uuid,
    sessions: Vec<(scaleset_github::GithubScaleSetId, scaleset_github::Session)>,
}

impl<'a> Garm<'a> {
    const ID: &'static str = "89a4130b-9de1-47c5-8ca8-e2640daa0e13";

    fn new(server: &'a crate::helpers::Server) -> Self {
        use scaleset_github::{Client, ClientConfig, ConfigUrl, Credentials};
        let config = ClientConfig::new(
            ConfigUrl::parse(&format!("{}/acme", server.github)).unwrap(),
            Credentials::pat("ghp_simulator"),
        )
        .with_api_base(url::Url::parse(&format!("{}/api/v3", server.github)).unwrap());
        Self {
            server,
            client: Client::new(config).unwrap(),
            controller: uuid::Uuid::parse_str(Self::ID).unwrap(),
            sessions: Vec::new(),
        }
    }

    fn owner() -> String {
        format!("garm-{}", Self::ID)
    }

    /// `garm-cli scaleset add`: the GitHub scale set, and GARM's listener on it.
    fn add_scale_set(
        &mut self,
        name: &str,
        group: i64,
        tags: &[&str],
        disable_update: bool,
    ) -> scaleset_github::GithubScaleSetId {
        use scaleset_github::{Label, NewRunnerScaleSet, RunnerGroupId, RunnerSetting};
        let labels = std::iter::once(name)
            .chain(tags.iter().copied())
            .map(Label::system)
            .collect();
        let new = NewRunnerScaleSet::new(name, RunnerGroupId(group))
            .with_labels(labels)
            .with_runner_setting(RunnerSetting {
                disable_update,
                ..RunnerSetting::default()
            });
        let set = self
            .server
            .block_on(self.client.create_scale_set(&new))
            .unwrap();
        let session = self
            .server
            .block_on(self.client.create_session(set.id, &Self::owner()))
            .unwrap();
        self.sessions.push((set.id, session));
        set.id
    }

    /// GARM's listener takes the job GitHub assigns to `set` and acknowledges it.
    fn take_job(&self, set: scaleset_github::GithubScaleSetId) {
        use scaleset_github::MessageId;
        let (_, session) = self.sessions.iter().find(|(s, _)| *s == set).unwrap();
        let mut session = session.clone();
        // Long polls (the simulator holds each 100 ms here), as GARM's listener makes them.
        let message = self
            .server
            .block_on(async {
                for _ in 0..200 {
                    let polled = self.client.get_message(&mut session, MessageId(0), 3).await;
                    if let Some(message) = polled.unwrap().filter(|m| !m.jobs.is_empty()) {
                        return Some(message);
                    }
                }
                None
            })
            .expect("GitHub assigns GARM the job");
        self.server
            .block_on(self.client.delete_message(&mut session, message.message_id))
            .unwrap();
    }

    /// A runner of `set`, registered on GitHub (JIT) and its instance created in the provider
    /// under GARM's pool id; `boot` starts it in the simulator.
    fn runner(
        &self,
        set: scaleset_github::GithubScaleSetId,
        set_name: &str,
        name: &str,
        boot: bool,
    ) {
        use scaleset_github::JitConfigRequest;
        use scaleset_provider::{ExposeSecret as _, PoolKey};
        let jit = self
            .server
            .block_on(
                self.client
                    .generate_jit_config(set, &JitConfigRequest::new(name)),
            )
            .unwrap();
        self.server.cloud.plant(
            self.controller,
            PoolKey::parse(&format!("{set_name}-{GARM_ORG}")).unwrap(),
            name,
        );
        if boot {
            self.server
                .sim
                .start_runner(jit.encoded_jit_config.expose_secret())
                .unwrap();
        }
    }

    /// SIGTERM: GARM deletes its message sessions and leaves everything else.
    fn stop(&self) {
        for (set, session) in &self.sessions {
            self.server
                .block_on(self.client.delete_session(*set, &session.session_id))
                .unwrap();
        }
    }
}

/// Issue 37 item 5, the whole takeover against the simulator: a GARM (played as captured)
/// runs two scale sets, one runner busy with a long job, one idle, one never booted, plus an
/// instance it did not make under its pool id; another controller's scale set sits in the
/// same runner group and another controller's instance in the cloud. The import is run against
/// a fake GARM serving the captured answers; the plan says `adopt (imported from GARM <id>)`;
/// applied while GARM runs, each set is refused "GARM still runs: stop it first" and nothing
/// is deleted; once GARM stops, both sets are served under the same GitHub ids with our owner
/// label (added by the worker's ensure), GARM's busy runner keeps its job, which finishes once
/// under us, after which its instance is deleted under GARM's pool; GARM's idle and unbooted
/// runners are retired; a new job runs on a runner of ours under our pool key; zero
/// scale-set creates; the foreign set, the planted instance and the foreign instance are
/// untouched.
#[test]
fn a_running_garm_is_taken_over_and_its_job_finishes_once_under_us() {
    use crate::helpers::{CONTROLLER_ID, Server};
    use scaleset_sim::JobSpec;
    let (url, _fake_garm) = fake_garm();
    let server = Server::start_with(|config| config.conflict_names_owner = true);
    server.with_acme();
    let sim = &server.sim;
    let gpu = sim.create_runner_group("acme", "gpu runners").unwrap();
    sim.create_foreign_scale_set("acme", 1, "other-ctl-linux", "other-controller")
        .unwrap();
    sim.create_foreign_scale_set("acme", 1, "other-ctl-win", "other-controller")
        .unwrap();
    let mut garm = Garm::new(&server);
    let linux = garm.add_scale_set("linux-small", 1, &["linux", "x64-small"], false);
    let big = garm.add_scale_set("gpu-big", gpu, &["gpu", "cuda"], true);
    assert_eq!((linux.0, big.0), (3, 4), "GitHub's ids as in the capture");
    // Another controller's scale set in GARM's second runner group.
    let foreign = sim
        .create_foreign_scale_set("acme", gpu, "other-ctl-gpu", "other-controller")
        .unwrap();
    let foreign_before = sim
        .state()
        .scale_set(foreign.scale_set_id)
        .cloned()
        .unwrap();

    // A 1-hour job on gpu-big, taken by GARM's runner; an idle runner on linux-small; a
    // runner GARM registered but never booted; an instance GARM did not make under its pool
    // id; another controller's instance.
    let job = sim
        .enqueue_jobs(
            big.0,
            &JobSpec {
                run_seconds: Some(3600.0),
                display_name: Some("train (gpu-big)".into()),
                ..JobSpec::count(1)
            },
        )
        .unwrap()[0];
    garm.take_job(big);
    garm.runner(big, "gpu-big", "gpu-g4wrcxxlxiik", true);
    garm.runner(big, "gpu-big", "gpu-tqirkoibjg3m", false);
    garm.runner(linux, "linux-small", "garm-pjsz34gpqbac", true);
    server.eventually("GARM's runner runs the job", || {
        let state = sim.state();
        let running = state.jobs.iter().find(|j| j.runner_request_id == job)?;
        (running.state == "running" && running.runner_name.as_deref() == Some("gpu-g4wrcxxlxiik"))
            .then_some(())
    });
    let orphan_pool = format!("linux-small-{GARM_ORG}");
    server.cloud.plant(
        garm.controller,
        scaleset_provider::PoolKey::parse(&orphan_pool).unwrap(),
        "orphan-1",
    );
    let stranger = uuid::Uuid::from_u128(0x0123);
    server.cloud.plant(
        stranger,
        scaleset_provider::PoolKey::parse(&format!("{stranger}_1")).unwrap(),
        "other-vm-1",
    );
    let creates_before = sim.request_count("create_scale_set");

    // 1. Import, and the operator's part of the file.
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
    let text = imported
        .stdout
        .replace("credentials = \"simpat\"", "credentials = \"sim\"")
        .replace("provider = \"rec\"", "provider = \"fake\"");
    let fleet = server.dir().join("garm-fleet.toml");
    std::fs::write(&fleet, &text).unwrap();
    let fleet = fleet.to_str().unwrap();

    // 2. Review the plan: each imported set is an adopt, literally so.
    let plan = server.ctl(&["plan", "-f", fleet]);
    assert_eq!(plan.code, 2, "{plan:?}");
    for name in ["linux-small", "gpu-big"] {
        let line = plan.stdout.lines().find(|l| l.contains(name)).unwrap();
        assert!(
            line.starts_with(&format!("adopt (imported from GARM {})", Garm::ID)),
            "{line}"
        );
    }
    assert!(!plan.stdout.contains("other-ctl"), "{plan:?}");

    // Applied before GARM is stopped: refused with the remedy, nothing deleted.
    let (_, planned) = server.json(&["plan", "-f", fleet]);
    let digest = planned["digest"].as_str().unwrap().to_owned();
    server.ok(&["apply", "-f", fleet, "--digest", &digest]);
    for name in ["linux-small", "gpu-big"] {
        let shown = server.eventually("the worker meets GARM's session", || {
            let (_, shown) = server.json(&["scale-set", "show", name]);
            (shown["state"] == "foreign_session").then_some(shown)
        });
        let reason = shown["state_reason"].as_str().unwrap();
        assert!(
            reason.starts_with("GARM still runs: stop it first."),
            "{reason}"
        );
    }
    assert_eq!(server.cloud.instances().len(), 5, "nothing deleted");
    assert_eq!(sim.state().agents.len(), 3, "GARM's three runners");

    // 3. Stop GARM: both sets are served under the same ids, with our owner label.
    garm.stop();
    let owner_label = format!(
        "scaleset-owner-{}",
        uuid::Uuid::parse_str(CONTROLLER_ID).unwrap().simple()
    );
    for (name, id) in [("linux-small", linux.0), ("gpu-big", big.0)] {
        server.eventually("the imported set is served", || {
            let (_, shown) = server.json(&["scale-set", "show", name]);
            (shown["state"] == "ready" && shown["github_id"] == id).then_some(())
        });
        server.eventually("our owner label is added by the worker's ensure", || {
            let state = sim.state();
            let set = state.scale_set(id)?;
            set.labels.contains(&owner_label).then_some(())
        });
    }

    // GARM's busy runner is taken over and keeps its job; its idle and unbooted ones go.
    let names = |server: &Server| -> Vec<String> {
        let mut names: Vec<String> = server
            .cloud
            .instances()
            .into_iter()
            .map(|i| i.instance.name)
            .collect();
        names.sort();
        names
    };
    server.eventually("GARM's idle and unbooted runners are retired", || {
        (names(&server) == ["gpu-g4wrcxxlxiik", "orphan-1", "other-vm-1"]).then_some(())
    });
    let (_, shown) = server.json(&["scale-set", "show", "gpu-big"]);
    let events = shown["events"].to_string();
    assert!(events.contains("instance_inherited"), "{events}");
    let state = sim.state();
    let agents: Vec<&str> = state.agents.iter().map(|a| a.name.as_str()).collect();
    assert_eq!(agents, ["gpu-g4wrcxxlxiik"], "GARM's busy runner only");
    assert_eq!(
        state
            .jobs
            .iter()
            .find(|j| j.runner_request_id == job)
            .map(|j| j.state.as_str()),
        Some("running")
    );

    // 4. The job ends under us: once, on GARM's runner; its instance is deleted under
    // GARM's pool, and no runner of ours was made for it.
    sim.advance(std::time::Duration::from_secs(3601));
    server.eventually("the job finishes and GARM's instance goes", || {
        (names(&server) == ["orphan-1", "other-vm-1"]).then_some(())
    });
    let state = sim.state();
    let jobs: Vec<_> = state
        .jobs
        .iter()
        .filter(|j| j.scale_set_id == big.0)
        .collect();
    assert_eq!(jobs.len(), 1, "{jobs:?}");
    assert_eq!(jobs[0].state, "completed");
    assert_eq!(jobs[0].runner_name.as_deref(), Some("gpu-g4wrcxxlxiik"));
    assert_eq!(jobs[0].reassignments, 0);
    assert_eq!(
        server.cloud.create_calls(),
        0,
        "no runner of ours for GARM's job"
    );

    // 5. A new job runs on a runner of ours, under our pool key.
    let next = sim.enqueue_jobs(linux.0, &JobSpec::count(1)).unwrap()[0];
    let ours = server.eventually("a runner of ours comes up", || {
        server
            .cloud
            .instances()
            .into_iter()
            .find(|i| i.controller_id.to_string() == CONTROLLER_ID)
    });
    assert_eq!(ours.pool.as_str(), format!("{CONTROLLER_ID}_{}", linux.0));
    assert!(ours.instance.name.starts_with("garm-"), "{ours:?}");
    server.eventually("the new job runs on it", || {
        let state = sim.state();
        let job = state.jobs.iter().find(|j| j.runner_request_id == next)?;
        (job.runner_name.as_deref() == Some(ours.instance.name.as_str())).then_some(())
    });

    // Zero scale-set creates, the same ids; the foreign set, the planted and the foreign
    // instances untouched.
    let state = sim.state();
    assert_eq!(sim.request_count("create_scale_set"), creates_before);
    assert_eq!(state.scale_sets.len(), 5);
    for (id, name) in [(linux.0, "linux-small"), (big.0, "gpu-big")] {
        assert_eq!(state.scale_set(id).map(|s| s.name.as_str()), Some(name));
    }
    let foreign_after = state.scale_set(foreign.scale_set_id).unwrap();
    assert_eq!(foreign_after.labels, foreign_before.labels);
    assert_eq!(
        foreign_after
            .session
            .as_ref()
            .map(|s| s.owner_name.as_str()),
        Some("other-controller")
    );
    let kept: Vec<(String, uuid::Uuid)> = server
        .cloud
        .instances()
        .into_iter()
        .filter(|i| i.instance.name == "orphan-1" || i.instance.name == "other-vm-1")
        .map(|i| (i.instance.name, i.controller_id))
        .collect();
    assert_eq!(
        kept,
        [
            ("orphan-1".to_owned(), garm.controller),
            ("other-vm-1".to_owned(), stranger)
        ]
    );
}

/// The takeover on github.com, whose 409 names no session holder (the simulator's default):
/// applied while GARM still runs, each imported set says GARM is most likely the holder and
/// to stop it, and nothing at all is written to GARM's sets (no owner label, no patch); the
/// short rechecks of a holder that may be our own are long over and the slow recheck is ten
/// minutes, yet each set listens within seconds of GARM's stop, because an imported set no
/// session of ours has held is rechecked on the takeover's own short schedule however long
/// GARM keeps running. Only then is our owner label added, and the event names it; GARM's
/// never-booted runner is retired for what it is.
#[test]
fn a_garm_takeover_on_github_com_writes_nothing_while_garm_runs_and_listens_within_seconds_of_its_stop()
 {
    use crate::helpers::{CONTROLLER_ID, Server};
    use std::time::Duration;
    let (url, _fake_garm) = fake_garm();
    assert!(
        !scaleset_sim::SimConfig::default().conflict_names_owner,
        "github.com's behaviour"
    );
    let server = Server::start_tuned(|settings| {
        // GARM stops after the window of short rechecks (ten minutes by default): only the
        // takeover's schedule can see it go before the slow recheck.
        settings.held_session_window = Duration::ZERO;
        settings.held_session_recheck = Duration::from_secs(600);
        settings.foreign_session_recheck = Duration::from_secs(600);
        settings.takeover_session_recheck = Duration::from_millis(200);
    });
    server.with_acme();
    let sim = &server.sim;
    let gpu = sim.create_runner_group("acme", "gpu runners").unwrap();
    sim.create_foreign_scale_set("acme", 1, "other-ctl-linux", "other-controller")
        .unwrap();
    sim.create_foreign_scale_set("acme", 1, "other-ctl-win", "other-controller")
        .unwrap();
    let mut garm = Garm::new(&server);
    let linux = garm.add_scale_set("linux-small", 1, &["linux", "x64-small"], false);
    let big = garm.add_scale_set("gpu-big", gpu, &["gpu", "cuda"], true);
    assert_eq!((linux.0, big.0), (3, 4), "GitHub's ids as in the capture");
    // A runner GARM registered on GitHub and never booted.
    garm.runner(big, "gpu-big", "gpu-tqirkoibjg3m", false);

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
    let text = imported
        .stdout
        .replace("credentials = \"simpat\"", "credentials = \"sim\"")
        .replace("provider = \"rec\"", "provider = \"fake\"");
    let fleet = server.dir().join("garm-fleet.toml");
    std::fs::write(&fleet, &text).unwrap();
    let fleet = fleet.to_str().unwrap();
    let (_, planned) = server.json(&["plan", "-f", fleet]);
    let digest = planned["digest"].as_str().unwrap().to_owned();
    server.ok(&["apply", "-f", fleet, "--digest", &digest]);

    let owner_label = format!(
        "scaleset-owner-{}",
        uuid::Uuid::parse_str(CONTROLLER_ID).unwrap().simple()
    );
    let events = |name: &str| -> Vec<(String, String)> {
        let (_, shown) = server.json(&["scale-set", "show", name]);
        shown["events"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| {
                (
                    e["kind"].as_str().unwrap().to_owned(),
                    e["reason"].as_str().unwrap().to_owned(),
                )
            })
            .collect()
    };
    for name in ["linux-small", "gpu-big"] {
        let shown = server.eventually("the worker meets GARM's session", || {
            let (_, shown) = server.json(&["scale-set", "show", name]);
            (shown["state"] == "foreign_session").then_some(shown)
        });
        let reason = shown["state_reason"].as_str().unwrap();
        assert!(
            reason.starts_with("GARM still runs: stop it first."),
            "{reason}"
        );
        for part in [
            "GitHub does not name",
            "most likely GARM's",
            Garm::ID,
            "Nothing was written to it. Nothing was deleted",
        ] {
            assert!(reason.contains(part), "{part:?} in {reason}");
        }
        // What waits for our session is said.
        assert!(
            events(name).iter().any(|(kind, reason)| kind == "notice"
                && reason.contains("message session is not ours yet")
                && reason.contains(&owner_label)),
            "{:?}",
            events(name)
        );
    }
    // Nothing is written to GARM's sets while it runs.
    assert_eq!(sim.request_count("update_scale_set"), 0);
    let state = sim.state();
    for id in [linux.0, big.0] {
        let set = state.scale_set(id).unwrap();
        assert!(!set.labels.contains(&owner_label), "{set:?}");
    }

    // GARM stops: each set listens within seconds, under the same id.
    garm.stop();
    for (name, id) in [("linux-small", linux.0), ("gpu-big", big.0)] {
        server.block_on(scaleset_eventually::eventually_within(
            "the imported set listens within seconds of GARM's stop",
            Duration::from_secs(30),
            || {
                let (_, shown) = server.json(&["scale-set", "show", name]);
                let session = sim
                    .state()
                    .scale_set(id)
                    .and_then(|s| s.session.clone())
                    .map(|s| s.owner_name);
                let listening = shown["state"] == "ready"
                    && session.is_some_and(|owner| owner.starts_with("scaleset-"));
                async move { listening.then_some(()) }
            },
        ));
        // Then our owner label is added, and the event names it.
        server.eventually("our owner label is added once our session is open", || {
            sim.state()
                .scale_set(id)?
                .labels
                .contains(&owner_label)
                .then_some(())
        });
        let added = format!("added our owner label {owner_label}");
        server.eventually("the event names the added label", || {
            events(name)
                .iter()
                .any(|(_, reason)| reason.contains(&added))
                .then_some(())
        });
    }
    assert_eq!(
        sim.request_count("update_scale_set"),
        2,
        "one patch per set"
    );

    // GARM's never-booted runner is retired, named for what it is.
    server.eventually("GARM's never-booted runner is retired", || {
        events("gpu-big")
            .iter()
            .any(|(kind, reason)| {
                kind == "inherited_runner_offline" && reason.contains("gpu-tqirkoibjg3m")
            })
            .then_some(())
    });
    server.eventually("its instance is deleted", || {
        (!server
            .cloud
            .instances()
            .iter()
            .any(|i| i.instance.name == "gpu-tqirkoibjg3m"))
        .then_some(())
    });
    assert!(
        !events("gpu-big")
            .iter()
            .any(|(kind, _)| kind == "inherited_runner_retired"),
        "{:?}",
        events("gpu-big")
    );
}
