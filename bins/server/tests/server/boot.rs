//! Issue 45 item 4, the boot test: a queued job on the simulator is served by the real
//! `scaleset-server --with-worker` through a real external provider process,
//! `garm_like_provider.py`, that behaves as a provider built on garm-provider-common does. It
//! picks the runner download for the set's OS and architecture from the bootstrap's `tools`
//! (refusing an empty list with that library's error) and writes GARM's install script, which
//! is then executed for real in the instance's scratch directory. The script downloads the
//! simulator's runner archive, checks its sha256, fetches the JIT files from scaleset's metadata
//! routes with the instance token and posts its callbacks. The archive's `run.sh` connects to the
//! simulator as that runner and takes the job. Each hop is asserted from typed state: the
//! simulator's request counts and state, the API's instance and scale-set rows, and the
//! provider's state directory and call record.

use std::path::{Path, PathBuf};
use std::time::Duration;

use scaleset_eventually::Polling;
use serde_json::{Value, json};

use super::{Server, call, config, token};

const PROVIDER: &str = include_str!("garm_like_provider.py");

/// garm-provider-common's error for a bootstrap without a download for linux/amd64, as
/// garm-provider-aws printed it (shared/reference/garm/providers.md).
const NO_TOOLS: &str = "failed to get runner spec: failed to get tools: failed to find tools for OS linux and arch amd64";

/// The test provider installed in `dir` with its config file (naming its state directory).
struct Provider {
    executable: PathBuf,
    config_file: PathBuf,
    state: PathBuf,
}

impl Provider {
    fn install(dir: &Path) -> Self {
        let executable = dir.join("garm-provider-local");
        std::fs::write(&executable, PROVIDER).unwrap();
        std::fs::set_permissions(
            &executable,
            <std::fs::Permissions as std::os::unix::fs::PermissionsExt>::from_mode(0o755),
        )
        .unwrap();
        let state = dir.join("provider-state");
        std::fs::create_dir_all(&state).unwrap();
        let config_file = dir.join("provider.toml");
        std::fs::write(
            &config_file,
            format!("state_dir = \"{}\"\n", state.display()),
        )
        .unwrap();
        Self {
            executable,
            config_file,
            state,
        }
    }

    /// Every call the provider answered, as `(command, instance, exit code)`.
    fn calls(&self) -> Vec<(String, String, i64)> {
        std::fs::read_to_string(self.state.join("calls.jsonl"))
            .unwrap_or_default()
            .lines()
            .map(|line| {
                let call: Value = serde_json::from_str(line).unwrap();
                (
                    call["command"].as_str().unwrap().to_owned(),
                    call["instance"].as_str().unwrap().to_owned(),
                    call["exit"].as_i64().unwrap(),
                )
            })
            .collect()
    }

    /// When each `CreateInstance` that worked ended, in seconds since the epoch, in order.
    fn creates(&self) -> Vec<f64> {
        std::fs::read_to_string(self.state.join("calls.jsonl"))
            .unwrap_or_default()
            .lines()
            .map(|line| serde_json::from_str::<Value>(line).unwrap())
            .filter(|call| call["command"] == "CreateInstance" && call["exit"] == 0)
            .map(|call| call["at"].as_f64().unwrap())
            .collect()
    }

    /// The instance directories present now.
    fn instances(&self) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(self.state.join("instances"))
            .map(|entries| {
                entries
                    .filter_map(Result::ok)
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        names.sort();
        names
    }
}

/// A simulator on a loopback port with short holds and an immediate `JobStarted`.
async fn simulator() -> scaleset_sim::RunningSim {
    scaleset_sim::RunningSim::start(scaleset_sim::SimConfig {
        long_poll_hold: Duration::from_millis(100),
        job_started_delay: Duration::ZERO,
        ..scaleset_sim::SimConfig::default()
    })
    .await
    .unwrap()
}

/// A free loopback port: the server must listen where `instance_api_url` (known before it
/// starts) says.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Starts `scaleset-server --with-worker` with the test provider as `local` (and `worker`,
/// lines of the `[worker]` table), creates the simulator's organization and a scale set `boot`
/// on it, and waits for its session. Returns the server, the admin token, the set's API path
/// and its GitHub id.
async fn serve(
    dir: &Path,
    github: &scaleset_sim::RunningSim,
    provider: &Provider,
    worker: &str,
) -> (Server, String, String, i64) {
    let port = free_port();
    let path = config(
        dir,
        &format!(
            "[worker]\nname = \"w1\"\nwatch_interval = \"100ms\"\nlisten = \"127.0.0.1:0\"\n\
             instance_api_url = \"http://127.0.0.1:{port}\"\n{worker}\
             [[provider]]\nname = \"local\"\nkind = \"external\"\nexecutable = \"{}\"\n\
             config_file = \"{}\"\nenvironment = [\"PATH=\"]\ntimeout = \"60s\"\n",
            provider.executable.display(),
            provider.config_file.display(),
        ),
    );
    let text = std::fs::read_to_string(&path).unwrap().replace(
        "listen = \"127.0.0.1:0\"\n[worker]",
        &format!("listen = \"127.0.0.1:{port}\"\n[worker]"),
    );
    std::fs::write(&path, text).unwrap();
    let secret = String::from_utf8(token(&path, "admin").stdout)
        .unwrap()
        .trim()
        .to_owned();
    let server = Server::start(&path, true);
    assert_eq!(server.addr, format!("127.0.0.1:{port}"));
    let t = Some(secret.as_str());
    let base = github.url("");
    let (status, body) = call(
        &server.addr,
        "POST",
        "/api/v1/credentials",
        t,
        Some(json!({
            "name": "sim", "auth": {"kind": "pat", "token": "ghp_simulator"},
            "endpoint": {"base_url": base, "api_base_url": format!("{base}/api/v3")},
        })),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    let (status, entity) = call(
        &server.addr,
        "POST",
        "/api/v1/entities",
        t,
        Some(json!({"kind": "organization", "name": "acme", "credentials": "sim"})),
    )
    .await;
    assert_eq!(status, 201, "{entity}");
    let (status, set) = call(
        &server.addr,
        "POST",
        "/api/v1/scale-sets",
        t,
        Some(json!({
            "entity_id": entity["id"], "name": "boot", "provider": "local", "max_runners": 1,
        })),
    )
    .await;
    assert_eq!(status, 201, "{set}");
    let set_path = format!("/api/v1/scale-sets/{}", set["id"].as_str().unwrap());
    let polling = Polling::within("the scale set is served", Duration::from_secs(60));
    let github_id = loop {
        let (_, shown) = call(&server.addr, "GET", &set_path, t, None).await;
        if let Some(id) = shown["github_id"].as_i64()
            && github
                .sim
                .state()
                .scale_set(id)
                .is_some_and(|s| s.session.is_some())
        {
            break id;
        }
        polling.again(|| format!("never served: {shown}")).await;
    };
    (server, secret, set_path, github_id)
}

/// What was seen of the instance while it lived (its directory goes with it).
#[derive(Debug, Default)]
struct Seen {
    instance: Option<String>,
    tool: Option<Value>,
    runner_file: Option<Value>,
    agent_id: Option<i64>,
    bootstrap_statuses: Vec<String>,
    github_runner_id: Option<i64>,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_queued_job_boots_a_real_install_script_through_a_garm_like_provider_and_the_instance_is_deleted()
 {
    let github = simulator().await;
    let dir = tempfile::tempdir().unwrap();
    let provider = Provider::install(dir.path());
    let (server, secret, _, github_id) = serve(dir.path(), &github, &provider, "").await;
    let t = Some(secret.as_str());

    let request = github
        .sim
        .enqueue_jobs(
            github_id,
            &scaleset_sim::JobSpec {
                run_seconds: Some(3.0),
                ..scaleset_sim::JobSpec::count(1)
            },
        )
        .unwrap()[0];

    // Follow the instance while it lives: its directory, its row, the job.
    let mut seen = Seen::default();
    let polling = Polling::within("the job completes", Duration::from_secs(120));
    let job = loop {
        if seen.instance.is_none() {
            seen.instance = provider.instances().into_iter().next();
        }
        if let Some(name) = seen.instance.clone() {
            let home = provider.state.join("instances").join(&name);
            if seen.tool.is_none() {
                seen.tool = std::fs::read(home.join("tool.json"))
                    .ok()
                    .and_then(|b| serde_json::from_slice(&b).ok());
            }
            if seen.runner_file.is_none() {
                seen.runner_file = std::fs::read(home.join("actions-runner/.runner"))
                    .ok()
                    .and_then(|b| serde_json::from_slice(&b).ok());
            }
            if seen.agent_id.is_none() {
                seen.agent_id = std::fs::read_to_string(home.join("actions-runner/.agent_id"))
                    .ok()
                    .and_then(|s| s.trim().parse().ok());
            }
            let (status, row) = call(
                &server.addr,
                "GET",
                &format!("/api/v1/instances/{name}"),
                t,
                None,
            )
            .await;
            if status == 200 {
                if let Some(s) = row["bootstrap"]["status"].as_str()
                    && seen.bootstrap_statuses.last().map(String::as_str) != Some(s)
                {
                    seen.bootstrap_statuses.push(s.to_owned());
                }
                seen.github_runner_id = seen.github_runner_id.or(row["github_runner_id"].as_i64());
            }
        }
        let state = github.sim.state();
        let job = state
            .jobs
            .iter()
            .find(|j| j.runner_request_id == request)
            .cloned()
            .unwrap();
        if job.state == "completed" {
            break job;
        }
        polling.again(|| format!("the job was never completed: {job:?}, seen {seen:?}, calls {:?}, install log {}",
            provider.calls(),
            seen.instance
                .as_ref()
                .and_then(|n| std::fs::read_to_string(
                    provider.state.join("instances").join(n).join("install.log")
                )
                .ok())
                .unwrap_or_default())).await;
    };
    let name = seen
        .instance
        .clone()
        .expect("the provider created an instance");

    // Tools: scaleset read the entity's runner downloads and handed them over; the provider
    // picked linux x64 for the set's linux/amd64, and the script downloaded that archive.
    let counts = github.sim.request_counts();
    assert!(
        counts.get("runner_downloads").copied().unwrap_or(0) >= 1,
        "{counts:?}"
    );
    assert_eq!(counts.get("runner_archive").copied(), Some(1), "{counts:?}");
    let tool = seen.tool.as_ref().expect("the provider recorded its tool");
    assert_eq!(tool["os"], "linux", "{tool}");
    assert_eq!(tool["architecture"], "x64", "{tool}");
    assert_eq!(tool["filename"], "actions-runner-linux-x64-2.330.0.tar.gz");
    // Metadata: the JIT `.runner` file the script fetched with the instance token names the
    // agent that took the job, on this simulator.
    let runner_file = seen
        .runner_file
        .as_ref()
        .expect("the script fetched .runner");
    assert_eq!(runner_file["AgentName"], name.as_str(), "{runner_file}");
    assert!(
        runner_file["ServerUrl"]
            .as_str()
            .unwrap()
            .starts_with(&github.url("/")),
        "{runner_file}"
    );
    let agent_id = runner_file["AgentId"].as_i64().unwrap();
    assert_eq!(
        seen.agent_id,
        Some(agent_id),
        "run.sh connected as that agent"
    );
    // Callbacks: the row went through `installing` to `idle` (the status posts).
    assert!(
        seen.bootstrap_statuses.iter().any(|s| s == "idle"),
        "{seen:?}"
    );
    // The runner took the job and completed it.
    assert_eq!(job.runner_name.as_deref(), Some(name.as_str()), "{job:?}");
    assert_eq!(job.result.as_deref(), Some("succeeded"), "{job:?}");

    // Then scaleset deletes the instance: the provider's DeleteInstance killed the script and
    // removed its directory, the row is gone and GitHub holds no runner.
    let polling = Polling::within(
        "the instance is deleted everywhere",
        Duration::from_secs(60),
    );
    loop {
        let deleted = provider
            .calls()
            .iter()
            .any(|(c, i, code)| c == "DeleteInstance" && i.ends_with(&name) && *code == 0);
        let (status, _) = call(
            &server.addr,
            "GET",
            &format!("/api/v1/instances/{name}"),
            t,
            None,
        )
        .await;
        if deleted && provider.instances().is_empty() && status == 404 {
            break;
        }
        polling
            .again(|| {
                format!(
                    "the instance was never deleted: calls {:?}, dirs {:?}, row {status}",
                    provider.calls(),
                    provider.instances()
                )
            })
            .await;
    }
    assert!(
        github.sim.state().agents.is_empty(),
        "{:?}",
        github.sim.state().agents
    );
    let creates: Vec<_> = provider
        .calls()
        .into_iter()
        .filter(|(c, _, _)| c == "CreateInstance")
        .collect();
    assert_eq!(creates.len(), 1, "{creates:?}");
    assert_eq!(creates[0].2, 0, "{creates:?}");

    let (status, stderr) = server.stop();
    assert!(status.success(), "{status:?}: {stderr}");
}

/// With no runner downloads (GitHub lists none for the entity), the bootstrap's `tools` is
/// empty: the provider refuses as garm-provider-common does, before creating anything, and
/// scaleset does not count a runner: the set shows the provider's error and the job waits.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_empty_tools_list_fails_the_create_as_garm_provider_common_does_and_the_set_shows_it() {
    let github = simulator().await;
    github.sim.set_faults(scaleset_sim::Faults {
        empty_runner_downloads: true,
        ..scaleset_sim::Faults::default()
    });
    let dir = tempfile::tempdir().unwrap();
    let provider = Provider::install(dir.path());

    // The provider alone, as scaleset runs it: exit 1 with that error, nothing created.
    let mut direct = std::process::Command::new(&provider.executable)
        .env_clear()
        .env("GARM_COMMAND", "CreateInstance")
        .env("GARM_PROVIDER_CONFIG_FILE", &provider.config_file)
        .env("GARM_POOL_ID", "pool-1")
        .env("GARM_INTERFACE_VERSION", "v0.1.0")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::Write as _;
        let bootstrap = json!({
            "name": "direct-1", "tools": [], "os_type": "linux", "arch": "amd64",
            "pool_id": "pool-1", "an_unknown_field": {"tolerated": true},
        });
        direct
            .stdin
            .take()
            .unwrap()
            .write_all(bootstrap.to_string().as_bytes())
            .unwrap();
    }
    let out = direct.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stderr).trim(), NO_TOOLS);
    assert!(out.stdout.is_empty(), "{out:?}");
    assert!(provider.instances().is_empty());

    // Under scaleset.
    let (server, secret, set_path, github_id) = serve(dir.path(), &github, &provider, "").await;
    let t = Some(secret.as_str());
    let request = github
        .sim
        .enqueue_jobs(github_id, &scaleset_sim::JobSpec::count(1))
        .unwrap()[0];
    let polling = Polling::within(
        "the provider's refusal shows on the scale set",
        Duration::from_secs(90),
    );
    let set = loop {
        let (_, set) = call(&server.addr, "GET", &set_path, t, None).await;
        let shown = set["events"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|e| e["reason"].as_str().unwrap_or_default().contains(NO_TOOLS))
            || set["attention"]["reason"]
                .as_str()
                .unwrap_or_default()
                .contains(NO_TOOLS)
            || set["state_reason"]
                .as_str()
                .unwrap_or_default()
                .contains(NO_TOOLS);
        let refused = provider
            .calls()
            .iter()
            .any(|(c, _, code)| c == "CreateInstance" && *code == 1);
        if shown && refused {
            break set;
        }
        polling
            .again(|| {
                format!(
                    "the provider's error never showed on the set: {set}, calls {:?}",
                    provider.calls()
                )
            })
            .await;
    };
    // Nothing succeeded: no create exited 0, no instance exists anywhere, the job was not run.
    assert!(
        provider
            .calls()
            .iter()
            .all(|(c, _, code)| c != "CreateInstance" || *code == 1),
        "{:?}",
        provider.calls()
    );
    assert!(provider.instances().is_empty());
    assert_eq!(github.sim.request_counts().get("runner_archive"), None);
    let state = github.sim.state();
    let job = state
        .jobs
        .iter()
        .find(|j| j.runner_request_id == request)
        .unwrap();
    assert_ne!(job.state, "completed", "{job:?}");
    assert!(job.runner_name.is_none(), "{job:?}");
    let (_, instances) = call(
        &server.addr,
        "GET",
        &format!("{set_path}/instances"),
        t,
        None,
    )
    .await;
    let running = instances["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|i| i["status"] == "running")
        .count();
    assert_eq!(running, 0, "{instances}, set {set}");

    let (status, stderr) = server.stop();
    assert!(status.success(), "{status:?}: {stderr}");
}

/// Every install fails (the runner archive answers 404, so the script posts `failed` to its
/// callback and exits): the set creates its next runner only after a wait that doubles per
/// failure (here 2 s, capped at 8 s, each jittered between half of it and all of it), shows
/// why and what to do, and once the archive is served again the next runner boots, takes the
/// job that waited all along, and the back-off is over: the set is ready again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runners_whose_install_fails_are_created_again_only_after_a_growing_wait_until_one_boots() {
    let github = simulator().await;
    github.sim.set_faults(scaleset_sim::Faults {
        server_errors: Some(scaleset_sim::Burst {
            endpoint: Some("runner_archive".to_owned()),
            ..scaleset_sim::Burst::new(u32::MAX, 404)
        }),
        ..scaleset_sim::Faults::default()
    });
    let dir = tempfile::tempdir().unwrap();
    let provider = Provider::install(dir.path());
    let (server, secret, set_path, github_id) = serve(
        dir.path(),
        &github,
        &provider,
        "bootstrap_backoff_base = \"2s\"\nbootstrap_backoff_max = \"8s\"\n",
    )
    .await;
    let t = Some(secret.as_str());
    let request = github
        .sim
        .enqueue_jobs(
            github_id,
            &scaleset_sim::JobSpec {
                run_seconds: Some(1.0),
                ..scaleset_sim::JobSpec::count(1)
            },
        )
        .unwrap()[0];

    // Five creates, each boot failing: the waits between them are at least half of 2, 4, 8,
    // 8 s (without the back-off a failed runner was replaced within about a second).
    let creates = scaleset_eventually::eventually("five runners were created", || async {
        let creates = provider.creates();
        (creates.len() >= 5).then_some(creates)
    })
    .await;
    let least = [1.0, 2.0, 4.0, 4.0];
    for (k, pair) in creates.windows(2).take(least.len()).enumerate() {
        let gap = pair[1] - pair[0];
        assert!(
            gap >= least[k],
            "create {} came {gap:.2}s after the one before, under the back-off's {}s: {creates:?}",
            k + 2,
            least[k]
        );
    }
    let archive_fetches = github
        .sim
        .request_counts()
        .get("runner_archive")
        .copied()
        .unwrap_or(0);
    assert!(archive_fetches >= 4, "every boot tried: {archive_fetches}");
    let (_, set) = call(&server.addr, "GET", &set_path, t, None).await;
    assert_eq!(set["state"], "error", "{set}");
    let reason = set["state_reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("bootstrap(s) failed in a row")
            && reason.contains("failed to download tools")
            && reason.contains("scalesetctl scale-set retry"),
        "{set}"
    );
    let kinds = |set: &Value| -> Vec<String> {
        set["events"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|e| e["kind"].as_str().map(str::to_owned))
            .collect()
    };
    assert!(
        kinds(&set).iter().any(|k| k == "bootstrap_backoff"),
        "{set}"
    );
    let job_state = |github: &scaleset_sim::RunningSim| {
        let state = github.sim.state();
        let job = state.jobs.iter().find(|j| j.runner_request_id == request);
        job.map(|j| j.state.clone()).unwrap_or_default()
    };
    assert_ne!(job_state(&github), "completed");

    // The archive is served again: the next runner boots and takes the job that waited, and
    // the set is ready again.
    github.sim.set_faults(scaleset_sim::Faults::default());
    scaleset_eventually::eventually("the waiting job was run", || async {
        (job_state(&github) == "completed").then_some(())
    })
    .await;
    let set = scaleset_eventually::eventually("the set is ready again", || async {
        let (_, set) = call(&server.addr, "GET", &set_path, t, None).await;
        (set["state"] == "ready" && kinds(&set).iter().any(|k| k == "bootstrap_recovered"))
            .then_some(set)
    })
    .await;
    assert!(
        set["state_reason"]
            .as_str()
            .unwrap_or_default()
            .contains("came online after"),
        "{set}"
    );

    let (status, stderr) = server.stop();
    assert!(status.success(), "{status:?}: {stderr}");
}
