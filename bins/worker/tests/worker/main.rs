//! `scaleset-worker` as a real process against the simulator over loopback: configuration
//! errors, serving a scale set end to end, clean shutdown, one worker per SQLite file, and
//! recovery after a wiped database or a kill -9.

mod apps;
mod check_files;
mod check_tools;
mod dashboard;
mod decommission;
mod drain;
mod early_signal;
mod helpers;
mod hostile;
mod link;
mod logs;
mod metrics;
mod outage;
mod partition;
mod rotation;
mod rules;
mod scale_out_metrics;
mod spreading;
mod together;
mod warm;

use std::os::unix::process::ExitStatusExt as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

use nix::sys::signal::Signal;
use scaleset_store::Refusal;

use helpers::{BIN, RunningSim, Site, Worker, eventually, get, worker_env, worker_env_with};

/// Runs the binary on `text` with `env` and returns (exit code, stderr).
async fn check_config(text: &str, env: &[(&str, &str)]) -> (Option<i32>, String) {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("worker.toml");
    std::fs::write(&path, text).expect("config");
    let mut command = tokio::process::Command::new(BIN);
    command.arg("--config").arg(&path).env_clear();
    for (k, v) in env {
        command.env(k, v);
    }
    let output = command.output().await.expect("run scaleset-worker");
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// A configuration, its environment, and the key its error must name.
type Case<'a> = (String, Vec<(&'a str, &'a str)>, &'a str);

const VALID: &str = r#"
controller_id = "3f2a9c1e-77b0-4d4e-9a55-0123456789ab"
[database]
url = "sqlite:///nonexistent-dir-for-config-tests/scaleset.db"
[encryption]
primary_key_id = "k1"
[[encryption.keys]]
id = "k1"
env = "K"
[[provider]]
name = "fake"
kind = "fake"
[fake]
allow = true
[[credentials]]
name = "gh"
base_url = "http://127.0.0.1:9"
token_env = "T"
[[scale_set]]
name = "linux"
credentials = "gh"
organization = "acme"
provider = "fake"
"#;

#[tokio::test]
async fn each_configuration_error_exits_2_naming_the_key_before_connecting() {
    let env = [("K", helpers::KEY), ("T", "ghp_x")];
    let cases: Vec<Case<'_>> = vec![
        (
            VALID.replace("[database]", "[database]\npool_szie = 2"),
            env.to_vec(),
            "pool_szie",
        ),
        (
            VALID.replace(
                "sqlite:///nonexistent-dir-for-config-tests/scaleset.db",
                "mysql://db",
            ),
            env.to_vec(),
            "database.url",
        ),
        (
            VALID.replace("http://127.0.0.1:9", "not a url"),
            env.to_vec(),
            "credentials[0].base_url",
        ),
        (
            VALID.replace("3f2a9c1e-77b0-4d4e-9a55-0123456789ab", "worker-one"),
            env.to_vec(),
            "controller_id",
        ),
        (
            VALID.to_owned(),
            vec![("T", "ghp_x")],
            "encryption.keys[0].env",
        ),
        (
            VALID.replace("primary_key_id = \"k1\"", ""),
            env.to_vec(),
            "encryption.primary_key_id",
        ),
        (
            VALID.to_owned(),
            vec![("K", helpers::KEY)],
            "credentials[0].token_env",
        ),
        (
            VALID.to_owned(),
            [env.to_vec(), vec![("SCALESET_DATABASE__URL", "ftp://x")]].concat(),
            "database.url",
        ),
        (
            VALID.to_owned(),
            [
                env.to_vec(),
                vec![("SCALESET_DATABSE__URL", "sqlite:///x.db")],
            ]
            .concat(),
            "SCALESET_DATABSE__URL",
        ),
        // Issue 29 item 9: names that climb out of the directory provider's state directory,
        // in the file and through an environment override.
        (
            VALID.replace("name = \"linux\"", "name = \"../../../escape\""),
            env.to_vec(),
            "scale_set[0].name",
        ),
        (
            VALID.replace(
                "name = \"linux\"",
                "name = \"linux\"\nrunner_prefix = \"../../../pfx\"",
            ),
            env.to_vec(),
            "scale_set[0].runner_prefix",
        ),
        (
            VALID.to_owned(),
            [
                env.to_vec(),
                vec![("SCALESET_SCALE_SET__0__NAME", "../../../escape")],
            ]
            .concat(),
            "scale_set[0].name",
        ),
        // The fake provider starts no machine: without the opt-in it is refused, also when the
        // opt-in is set to false by the environment.
        (
            VALID.replace("[fake]\nallow = true\n", ""),
            env.to_vec(),
            "provider \"fake\".kind",
        ),
        (
            VALID.to_owned(),
            [env.to_vec(), vec![("SCALESET_FAKE__ALLOW", "false")]].concat(),
            "provider \"fake\".kind",
        ),
    ];
    for (text, env, key) in cases {
        let (code, stderr) = check_config(&text, &env).await;
        assert_eq!(code, Some(2), "{key}: {stderr}");
        assert!(
            stderr.contains(&format!("{key}:")),
            "{key} not named in: {stderr}"
        );
    }
    // The valid file passes --check (so each case above failed for its own key only), its
    // database in a directory that exists (--check looks at it).
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("worker.toml");
    std::fs::write(&path, with_database_in(dir.path(), VALID)).expect("config");
    let output = tokio::process::Command::new(BIN)
        .arg("--config")
        .arg(&path)
        .arg("--check")
        .env_clear()
        .env("K", helpers::KEY)
        .env("T", "ghp_x")
        .output()
        .await
        .expect("run");
    assert_eq!(output.status.code(), Some(0), "{output:?}");
}

/// `text` with its SQLite database in `dir`.
fn with_database_in(dir: &std::path::Path, text: &str) -> String {
    text.replace(
        "sqlite:///nonexistent-dir-for-config-tests/scaleset.db",
        &format!("sqlite://{}", dir.join("scaleset.db").display()),
    )
}

/// Starts a worker on `site` and waits until `name` is listening; returns its GitHub id.
async fn start_serving(sim: &RunningSim, site: &Site, name: &str) -> (Worker, i64) {
    let worker = Worker::spawn(&site.config(), &worker_env());
    let id = sim
        .listening("the scale set exists on GitHub with a session", name)
        .await;
    (worker, id)
}

/// Enqueues `count` jobs, waits until they run, lets them finish, and waits until every
/// instance is gone.
async fn serve_jobs(sim: &RunningSim, site: &Site, id: i64, count: u32) {
    let before = sim.job_states(id).len();
    sim.enqueue(id, count);
    eventually("every job runs", || async {
        let states = sim.job_states(id);
        (states.len() == before + count as usize
            && states.iter().all(|s| s == "running" || s == "completed"))
        .then_some(())
    })
    .await;
    finish(sim, site, id).await;
}

/// Ends the running jobs of `id` by moving simulated time past them and waits until they
/// completed and nothing of theirs is left (instance, runner).
async fn finish(sim: &RunningSim, site: &Site, id: i64) {
    sim.sim.advance(Duration::from_secs(120));
    eventually(
        "jobs done; no instance, runner or session left over",
        || async {
            let done = sim.job_states(id).iter().all(|s| s == "completed");
            (done && site.instances().is_empty() && sim.sim.state().agents.is_empty()).then_some(())
        },
    )
    .await;
}

/// [`finish`], then checks each job was served once by the one scale set created.
async fn finish_served_once(sim: &RunningSim, site: &Site, id: i64) {
    finish(sim, site, id).await;
    assert_served_once(sim, id);
    assert_eq!(
        sim.sim.state().scale_sets.len(),
        1,
        "no duplicate scale set"
    );
    assert_eq!(sim.sim.request_count("create_scale_set"), 1);
}

fn assert_served_once(sim: &RunningSim, id: i64) {
    for job in sim.sim.state().jobs_of(id) {
        assert_eq!(job.result.as_deref(), Some("succeeded"), "{job:?}");
        assert_eq!(job.reassignments, 0, "a job was served twice: {job:?}");
    }
}

/// A CONNECT proxy on loopback that tunnels to the requested target and counts the tunnels.
async fn connect_proxy() -> (std::net::SocketAddr, Arc<AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind the proxy");
    let addr = listener.local_addr().expect("proxy address");
    let tunnels = Arc::new(AtomicUsize::new(0));
    let counted = tunnels.clone();
    tokio::spawn(async move {
        while let Ok((mut client, _)) = listener.accept().await {
            let counted = counted.clone();
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") {
                    if client.read_exact(&mut byte).await.is_err() {
                        return;
                    }
                    head.push(byte[0]);
                }
                let head = String::from_utf8_lossy(&head).into_owned();
                let Some(target) = head
                    .strip_prefix("CONNECT ")
                    .and_then(|rest| rest.split(' ').next())
                else {
                    return;
                };
                let Ok(mut upstream) = tokio::net::TcpStream::connect(target).await else {
                    return;
                };
                counted.fetch_add(1, Ordering::SeqCst);
                if client
                    .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
                    .await
                    .is_ok()
                {
                    let _ = tokio::io::copy_bidirectional(&mut client, &mut upstream).await;
                }
            });
        }
    });
    (addr, tunnels)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn github_calls_go_through_the_proxy_the_environment_names() {
    let (sim, site) = helpers::linux_site().await;
    let (proxy, tunnels) = connect_proxy().await;
    let mut env = worker_env();
    env.push(("HTTP_PROXY", format!("http://{proxy}")));
    let worker = Worker::spawn(&site.config(), &env);
    eventually("the scale set exists on GitHub with a session", || async {
        let id = sim.scale_set_id("linux")?;
        sim.has_session(id).then_some(())
    })
    .await;
    assert!(
        tunnels.load(Ordering::SeqCst) >= 1,
        "GitHub calls went through the proxy: {}",
        worker.log()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serves_jobs_end_to_end_and_stops_cleanly_on_sigterm() {
    let (sim, site) = helpers::linux_site().await;
    let (worker, id) = start_serving(&sim, &site, "linux").await;
    let addr = worker.listen().await;

    sim.enqueue(id, 3);
    sim.all_running("three runners run the three jobs", id, 3)
        .await;
    let instances = site.instances();
    assert_eq!(instances.len(), 3, "one instance per job: {instances:?}");
    let pool = format!("{}_{id}", helpers::CONTROLLER);
    assert!(
        instances.iter().all(|(key, _)| *key == pool),
        "{instances:?}"
    );

    assert_eq!(get(addr, "/healthz").await.0, 200);
    let (status, ready) = get(addr, "/readyz").await;
    assert_eq!(status, 200, "{ready}");
    let ready: serde_json::Value = serde_json::from_str(&ready).expect("readyz JSON");
    assert_eq!(ready["leasesHeld"], 1, "{ready}");
    let (status, metrics) = get(addr, "/metrics").await;
    assert_eq!(status, 200);
    assert!(metrics.contains("scaleset_scale_sets"), "{metrics}");
    assert!(metrics.contains("scaleset_jobs_seen_total"), "{metrics}");

    finish(&sim, &site, id).await;
    assert_served_once(&sim, id);

    let deletes = sim.sim.request_count("delete_session");
    let log_before = worker.log();
    let code = worker.signal_and_wait(Signal::SIGTERM).await;
    assert_eq!(code, Some(0), "{log_before}");
    assert!(!sim.has_session(id), "the session was deleted on SIGTERM");
    assert!(sim.sim.request_count("delete_session") > deletes);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_worker_on_the_same_sqlite_file_is_refused() {
    let (sim, site) = helpers::linux_site().await;
    let (first, _) = start_serving(&sim, &site, "linux").await;
    let second = Worker::spawn(&site.config(), &worker_env());
    let log = second.log_handle();
    let code = second.exit_code().await;
    assert_eq!(code, Some(1), "{}", log.log());
    // The refusal the binary answers its operator with (its interface, not a log line); the
    // reader may still be draining the dead process's stderr.
    eventually("the refusal is explained", || async {
        log.answer()
            .iter()
            .any(|line| line.contains("another worker already serves the SQLite database"))
            .then_some(())
    })
    .await;
    assert_eq!(first.signal_and_wait(Signal::SIGINT).await, Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wiped_database_is_rebuilt_by_a_restart_adopting_every_scale_set() {
    let sim = RunningSim::start().await;
    let site = Site::new(&sim, &["linux", "arm"]);
    let worker = Worker::spawn(&site.config(), &worker_env());
    let ids = eventually("both scale sets listen", || async {
        let linux = sim.scale_set_id("linux")?;
        let arm = sim.scale_set_id("arm")?;
        (sim.has_session(linux) && sim.has_session(arm)).then_some([linux, arm])
    })
    .await;
    for id in ids {
        serve_jobs(&sim, &site, id, 2).await;
    }
    assert_eq!(worker.signal_and_wait(Signal::SIGTERM).await, Some(0));
    assert_eq!(sim.sim.request_count("create_scale_set"), 2);

    site.wipe_database();
    assert!(!site.db().exists());
    let worker = Worker::spawn(&site.config(), &worker_env());
    sim.all_listening("both scale sets listen again", &ids)
        .await;
    assert_eq!(
        sim.sim.request_count("create_scale_set"),
        2,
        "every scale set was adopted, none created"
    );
    for id in ids {
        serve_jobs(&sim, &site, id, 2).await;
        assert_served_once(&sim, id);
        assert_eq!(sim.job_states(id).len(), 4);
    }
    assert_eq!(
        sim.sim.state().scale_sets.len(),
        2,
        "no duplicate scale set"
    );
    assert_eq!(worker.signal_and_wait(Signal::SIGTERM).await, Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_mid_stream_then_restart_converges_without_duplicates_or_orphans() {
    let (sim, site) = helpers::linux_site().await;
    let (worker, id) = start_serving(&sim, &site, "linux").await;
    sim.enqueue(id, 4);
    eventually("instances are being created", || async {
        (!site.instances().is_empty()).then_some(())
    })
    .await;
    let _ = worker.signal_and_wait(Signal::SIGKILL).await;

    let worker = Worker::spawn(&site.config(), &worker_env());
    sim.all_running("every job runs", id, 4).await;
    finish_served_once(&sim, &site, id).await;
    assert_eq!(worker.signal_and_wait(Signal::SIGTERM).await, Some(0));
    assert!(!sim.has_session(id));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wipe_while_runners_are_busy_re_records_them_and_touches_nothing_foreign() {
    let (sim, site) = helpers::linux_site().await;
    // Another controller's machine in the same cloud, and its scale set on the same org.
    let foreign_pool = site.cloud().join("00000000-0000-0000-0000-000000000042_77");
    std::fs::create_dir_all(&foreign_pool).expect("foreign pool");
    std::fs::write(
        foreign_pool.join("linux-foreign01.json"),
        r#"{"name":"linux-foreign01"}"#,
    )
    .expect("foreign instance");
    let group = sim
        .sim
        .state()
        .runner_groups
        .iter()
        .find(|g| g.scope == "acme")
        .map(|g| g.id)
        .expect("acme has a runner group");
    let foreign_id = sim
        .sim
        .create_foreign_scale_set("acme", group, "theirs", "someone-else")
        .expect("foreign scale set")
        .scale_set_id;

    let (worker, id) = start_serving(&sim, &site, "linux").await;
    sim.enqueue(id, 2);
    sim.all_running("both jobs run", id, 2).await;
    let ours = |site: &Site| -> Vec<(String, String)> {
        site.instances()
            .into_iter()
            .filter(|(key, _)| key.starts_with(helpers::CONTROLLER))
            .collect()
    };
    let busy = ours(&site);
    assert_eq!(busy.len(), 2, "{busy:?}");
    assert_eq!(worker.signal_and_wait(Signal::SIGTERM).await, Some(0));
    assert_eq!(ours(&site), busy, "SIGTERM leaves the instances running");

    site.wipe_database();
    let worker = Worker::spawn(&site.config(), &worker_env());
    eventually("the scale set listens again", || async {
        sim.has_session(id).then_some(())
    })
    .await;
    eventually("both busy instances are recorded again", || async {
        (site
            .count_events("linux", scaleset_store::EventKind::InstanceRerecorded)
            .await
            == 2)
            .then_some(())
    })
    .await;
    assert_eq!(ours(&site), busy, "no instance deleted or created");

    sim.sim.advance(Duration::from_secs(120));
    eventually("jobs done, our instances retired", || async {
        let done = sim.job_states(id).iter().all(|s| s == "completed");
        (done && ours(&site).is_empty() && sim.sim.state().agents.is_empty()).then_some(())
    })
    .await;
    assert_served_once(&sim, id);
    assert_eq!(sim.sim.request_count("create_scale_set"), 1, "adopted");
    assert!(
        foreign_pool.join("linux-foreign01.json").exists(),
        "another controller's instance is never touched"
    );
    let state = sim.sim.state();
    let theirs = state.scale_set(foreign_id).expect("foreign scale set kept");
    assert!(theirs.session.is_some(), "their session is kept");
    assert_eq!(worker.signal_and_wait(Signal::SIGTERM).await, Some(0));
}

/// `leasesHeld` from the worker's `/readyz`.
async fn leases_held(worker: &Worker) -> u64 {
    let (_, body) = get(worker.listen().await, "/readyz").await;
    let value: serde_json::Value = serde_json::from_str(&body).expect("readyz JSON");
    value["leasesHeld"].as_u64().expect("leasesHeld")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_controllers_on_one_organization_each_serve_only_their_own() {
    let (sim, site) = helpers::linux_site().await;
    // Controller b: another id, its own database, the same cloud account, and a fleet that
    // also declares "linux" (controller a's) beside its own "arm".
    let other = "00000000-0000-4000-8000-0000000000bb";
    let text_b = std::fs::read_to_string(site.config())
        .expect("config")
        .replace(helpers::CONTROLLER, other)
        .replace("scaleset.db", "scaleset-b.db")
        .replace("name = \"worker-a\"", "name = \"worker-b\"")
        + "\n[[scale_set]]\nname = \"arm\"\ncredentials = \"sim\"\norganization = \"acme\"\n\
           provider = \"fake\"\nmax_runners = 10\ndisable_update = true\n";
    let config_b = site.dir.path().join("worker-b.toml");
    std::fs::write(&config_b, text_b).expect("config b");

    let (a, linux) = start_serving(&sim, &site, "linux").await;
    let b = Worker::spawn(&config_b, &worker_env());
    let arm = sim.listening("b's own scale set listens", "arm").await;
    let b_database = format!(
        "sqlite://{}",
        site.dir.path().join("scaleset-b.db").display()
    );
    eventually(
        "b refuses a's scale set: it carries a's owner label",
        || async {
            let set = helpers::scale_set_in(&b_database, "linux").await?;
            matches!(set.refusal, Some(Refusal::ForeignOwner { .. })).then_some(())
        },
    )
    .await;

    sim.enqueue(linux, 2);
    sim.enqueue(arm, 2);
    eventually("every job runs", || async {
        let all: Vec<String> = [linux, arm]
            .iter()
            .flat_map(|id| sim.job_states(*id))
            .collect();
        (all.len() == 4 && all.iter().all(|s| s == "running")).then_some(())
    })
    .await;
    let pools: std::collections::BTreeSet<String> =
        site.instances().into_iter().map(|(key, _)| key).collect();
    assert_eq!(
        pools,
        [
            format!("{}_{linux}", helpers::CONTROLLER),
            format!("{other}_{arm}")
        ]
        .into_iter()
        .collect(),
        "each controller runs its own scale set's runners, under its own pool key"
    );
    sim.sim.advance(Duration::from_secs(120));
    eventually("jobs done, no instance left", || async {
        let done = [linux, arm]
            .iter()
            .all(|id| sim.job_states(*id).iter().all(|s| s == "completed"));
        (done && site.instances().is_empty()).then_some(())
    })
    .await;
    assert_served_once(&sim, linux);
    assert_served_once(&sim, arm);
    let state = sim.sim.state();
    assert_eq!(state.scale_sets.len(), 2, "no duplicate, nothing deleted");
    assert!(sim.has_session(linux) && sim.has_session(arm));
    assert_eq!(sim.sim.request_count("delete_scale_set"), 0);

    assert_eq!(b.signal_and_wait(Signal::SIGTERM).await, Some(0));
    assert!(sim.has_session(linux), "b's shutdown leaves a's session");
    assert_eq!(a.signal_and_wait(Signal::SIGTERM).await, Some(0));
}

/// The worker process aborts (as a kill -9 would) at `point` of the control loop, through the
/// debug-build crash hook; a restarted worker converges: one scale set, every job served once,
/// no instance, runner or session left over.
async fn crash_at(point: &str) {
    let (sim, site) = helpers::linux_site().await;
    let before_ready = matches!(point, "ScaleSetCreateIntent" | "ScaleSetCreated");
    let mut env = worker_env();
    env.push(("SCALESET_TEST_CRASH_AT", point.to_owned()));
    let first = Worker::spawn(&site.config(), &env);
    if !before_ready {
        let id = sim.listening("the scale set listens", "linux").await;
        sim.enqueue(id, 2);
    }
    let log = first.log_handle();
    let status = first.exit_status().await;
    // SIGABRT is the crash hook's own end: the hook fires only at `point`, a failure exits 1
    // and a panic 101, so the signal alone says the worker died there, as a kill -9 would.
    assert_eq!(
        status.signal(),
        Some(Signal::SIGABRT as i32),
        "the worker aborted at {point}, not {status:?}: {}",
        log.log()
    );

    let (second, id) = start_serving(&sim, &site, "linux").await;
    if before_ready {
        sim.enqueue(id, 2);
    }
    sim.all_running("both jobs run", id, 2).await;
    finish_served_once(&sim, &site, id).await;
    assert_eq!(second.signal_and_wait(Signal::SIGTERM).await, Some(0));
    assert!(!sim.has_session(id));
}

macro_rules! crash_tests {
    ($($name:ident => $point:literal),+ $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() {
                crash_at($point).await;
            }
        )+
    };
}

crash_tests!(
    crash_after_scale_set_create_intent => "ScaleSetCreateIntent",
    crash_after_scale_set_created => "ScaleSetCreated",
    crash_after_runner_intent => "RunnerIntentRecorded",
    crash_after_jit_config => "JitConfigGenerated",
    crash_after_instance_created => "InstanceCreated",
    crash_after_cursor_persisted => "CursorPersisted",
);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn repeated_kill_9_at_random_moments_of_a_job_stream_converges() {
    let (sim, site) = helpers::linux_site().await;
    let (mut worker, id) = start_serving(&sim, &site, "linux").await;
    let rounds = 4u32;
    for round in 0..rounds {
        sim.enqueue(id, 3);
        // A random observable moment: after 0 to 3 of this round's instances exist.
        let wanted = usize::from(uuid::Uuid::new_v4().as_bytes()[0] % 4);
        eventually("the chosen moment of the stream", || async {
            (site.instances().len() >= wanted).then_some(())
        })
        .await;
        let _ = worker.signal_and_wait(Signal::SIGKILL).await;
        if round % 2 == 1 {
            // Some runs finish while no worker listens.
            sim.sim.advance(Duration::from_secs(120));
        }
        worker = Worker::spawn(&site.config(), &worker_env());
    }
    let total = 3 * rounds as usize;
    eventually("every job runs or ran", || async {
        let states = sim.job_states(id);
        (states.len() == total && states.iter().all(|s| s == "running" || s == "completed"))
            .then_some(())
    })
    .await;
    finish_served_once(&sim, &site, id).await;
    assert_eq!(worker.signal_and_wait(Signal::SIGTERM).await, Some(0));
    assert!(!sim.has_session(id));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_postgres_a_paused_worker_that_lost_its_leases_writes_nothing_when_it_wakes() {
    let Some((_db, sim, site)) =
        helpers::postgres_site("the paused-worker PostgreSQL test", &["linux"]).await
    else {
        return;
    };
    // A lease long enough that a busy machine stalling a worker for a moment does not hand the
    // scale set back and forth (the point here is the paused worker, not the stall).
    let lease = ("SCALESET_WORKER__LEASE_TTL", "6s");
    let env_a = worker_env_with(&[lease]);
    let env_b = worker_env_with(&[("SCALESET_WORKER__NAME", "worker-b"), lease]);

    let a = Worker::spawn(&site.config(), &env_a);
    let id = sim
        .listening("the scale set exists on GitHub with a session", "linux")
        .await;
    eventually("worker a holds the lease", || async {
        (leases_held(&a).await == 1).then_some(())
    })
    .await;
    let b = Worker::spawn(&site.config(), &env_b);
    // The one meaning of readiness (the store answers): a worker standing by is ready, and
    // says it holds nothing.
    let (status, body) = get(b.listen().await, "/readyz").await;
    assert_eq!(status, 200, "a worker standing by is ready: {body}");
    assert_eq!(leases_held(&b).await, 0, "{body}");
    assert_eq!(get(a.listen().await, "/readyz").await.0, 200);
    nix::sys::signal::kill(a.pid(), Signal::SIGSTOP).expect("pause worker a");
    eventually("worker b takes the lease once a's expired", || async {
        (leases_held(&b).await == 1).then_some(())
    })
    .await;
    serve_jobs(&sim, &site, id, 2).await;

    nix::sys::signal::kill(a.pid(), Signal::SIGCONT).expect("wake worker a");
    // Whichever a meets first: its renewal refused, its next acquisition held by b, or its
    // lease planner leaving the scale set to b.
    eventually("worker a notices it lost the lease", || async {
        (leases_held(&a).await == 0).then_some(())
    })
    .await;
    serve_jobs(&sim, &site, id, 3).await;
    assert_served_once(&sim, id);
    assert_eq!(
        sim.sim.request_count("generate_jit_config"),
        5,
        "one runner per job: the woken worker created none"
    );
    assert_eq!(leases_held(&b).await, 1, "b still holds the lease");
    assert_eq!(sim.sim.state().scale_sets.len(), 1);
    assert_eq!(a.signal_and_wait(Signal::SIGTERM).await, Some(0));
    assert!(
        sim.has_session(id),
        "a's shutdown did not delete b's session"
    );
    assert_eq!(b.signal_and_wait(Signal::SIGTERM).await, Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_documented_simulator_example_serves_jobs_with_environment_overrides() {
    let sim = RunningSim::start().await;
    let dir = tempfile::tempdir().expect("temp dir");
    let cloud = dir.path().join("cloud");
    std::fs::create_dir_all(&cloud).expect("cloud dir");
    let example = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../docs/examples/worker-sim.toml");
    let base = format!("http://{}", sim.addr);
    // The example as documented; only what this test must move elsewhere is overridden, each
    // through its SCALESET_ variable.
    let mut env = vec![
        ("SCALESET_KEY", helpers::KEY.to_owned()),
        ("SIM_TOKEN", "ghp_simulator".to_owned()),
        (
            "SCALESET_DATABASE__URL",
            format!("sqlite://{}", dir.path().join("demo.db").display()),
        ),
        ("SCALESET_WORKER__LISTEN", "127.0.0.1:0".to_owned()),
        ("SCALESET_WORKER__WATCH_INTERVAL", "100ms".to_owned()),
        ("SCALESET_FAKE__STATE_DIR", cloud.display().to_string()),
        ("SCALESET_FAKE__SIMULATOR_URL", base.clone()),
        ("SCALESET_CREDENTIALS__0__BASE_URL", base.clone()),
        (
            "SCALESET_CREDENTIALS__0__API_BASE_URL",
            format!("{base}/api/v3"),
        ),
    ];
    env.push(("RUST_LOG", "info".to_owned()));
    let worker = Worker::spawn(&example, &env);
    let id = sim
        .listening("the example's scale set listens", "linux")
        .await;
    sim.enqueue(id, 2);
    eventually("both jobs run on fake instances", || async {
        let states = sim.job_states(id);
        let pools: Vec<_> = std::fs::read_dir(&cloud)
            .ok()?
            .flatten()
            .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
            .collect();
        let instances = pools
            .iter()
            .filter_map(|p| std::fs::read_dir(p.path()).ok())
            .map(Iterator::count)
            .sum::<usize>();
        (states.len() == 2 && states.iter().all(|s| s == "running") && instances == 2).then_some(())
    })
    .await;
    assert_eq!(worker.signal_and_wait(Signal::SIGTERM).await, Some(0));
    assert!(!sim.has_session(id));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listening_worker_reconciles_periodically_and_only_its_own_pool() {
    let (sim, site) = helpers::linux_site().await;
    let (worker, id) = start_serving(&sim, &site, "linux").await;
    // Appearing while the worker listens: a machine under our pool key with no runner and no
    // record (e.g. left by a provider retry), and one of another controller.
    let ours = site.cloud().join(format!("{}_{id}", helpers::CONTROLLER));
    let theirs = site
        .cloud()
        .join(format!("00000000-0000-0000-0000-000000000042_{id}"));
    for (dir, name) in [(&ours, "linux-orphan01"), (&theirs, "linux-foreign01")] {
        std::fs::create_dir_all(dir).expect("pool dir");
        std::fs::write(
            dir.join(format!("{name}.json")),
            format!(r#"{{"name":"{name}"}}"#),
        )
        .expect("instance");
    }
    // The pass appends its event after the provider's delete: wait for both.
    eventually("a periodic pass deletes our orphan and says so", || async {
        (!ours.join("linux-orphan01.json").exists()
            && site
                .count_events("linux", scaleset_store::EventKind::OrphanInstanceDeleted)
                .await
                == 1)
            .then_some(())
    })
    .await;
    assert!(
        theirs.join("linux-foreign01.json").exists(),
        "another controller's machine is never touched"
    );
    assert_eq!(worker.signal_and_wait(Signal::SIGTERM).await, Some(0));
}

/// An external provider's instances fetch their runner configuration from scaleset-server at
/// `worker.instance_api_url`; without it they get no metadata URL and no token and can never
/// register, so `--check` refuses the file, naming the key and the provider (issue 29 item 16).
#[tokio::test]
async fn check_refuses_an_external_provider_without_instance_api_url() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("worker.toml");
    // A provider that is installed: --check looks at its files.
    let (executable, config_file) = (
        dir.path().join("garm-provider-lxd"),
        dir.path().join("lxd.toml"),
    );
    std::fs::write(&executable, "#!/bin/sh\n").expect("executable");
    std::fs::set_permissions(
        &executable,
        <std::fs::Permissions as std::os::unix::fs::PermissionsExt>::from_mode(0o755),
    )
    .expect("chmod");
    std::fs::write(&config_file, "").expect("provider config");
    let external = with_database_in(dir.path(), VALID).replace(
        "[[provider]]\nname = \"fake\"\nkind = \"fake\"",
        &format!(
            "[[provider]]\nname = \"fake\"\nkind = \"fake\"\n[[provider]]\nname = \"lxd\"\nkind = \"external\"\nexecutable = \"{}\"\nconfig_file = \"{}\"",
            executable.display(),
            config_file.display()
        ),
    );
    assert_ne!(external, VALID, "the external provider was added");
    let check = |text: String| {
        std::fs::write(&path, text).expect("config");
        tokio::process::Command::new(BIN)
            .arg("--config")
            .arg(&path)
            .arg("--check")
            .env_clear()
            .env("K", helpers::KEY)
            .env("T", "ghp_x")
            .output()
    };
    let refused = check(external.clone()).await.expect("run");
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(2), "{refused:?}");
    assert!(stderr.contains("worker.instance_api_url:"), "{stderr}");
    assert!(stderr.contains("\"lxd\""), "{stderr}");
    assert!(refused.stdout.is_empty(), "{refused:?}");

    let with_url = external.replacen(
        "[[provider]]",
        "[worker]\ninstance_api_url = \"https://scaleset.example.com\"\n\n[[provider]]",
        1,
    );
    let accepted = check(with_url).await.expect("run");
    assert_eq!(accepted.status.code(), Some(0), "{accepted:?}");
    // Then one line per credentials, saying what they are without the secret (issue 31).
    assert_eq!(
        String::from_utf8_lossy(&accepted.stdout),
        "configuration ok\ncredentials \"gh\": personal access token for http://127.0.0.1:9/api/v3\n"
    );
}

/// Issue 29 item 17a: `scaleset-worker --check | head -0` (stdout closed before the answer) and
/// an error to a closed stderr are not a panic (exit 101): the exit code is the check's own.
/// (std's `Command`: tokio's `output()` replaces the stdout and stderr it is given with pipes.)
#[test]
fn a_closed_stdout_or_stderr_is_not_a_panic() {
    let closed_pipe = || {
        let (reader, writer) = std::io::pipe().expect("pipe");
        drop(reader);
        std::process::Stdio::from(writer)
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("worker.toml");
    let run = |text: &str, stdout_closed: bool| {
        std::fs::write(&path, text).expect("config");
        let mut command = std::process::Command::new(BIN);
        command
            .arg("--config")
            .arg(&path)
            .arg("--check")
            .env_clear()
            .env("K", helpers::KEY)
            .env("T", "ghp_x");
        if stdout_closed {
            command
                .stdout(closed_pipe())
                .stderr(std::process::Stdio::piped());
        } else {
            command
                .stdout(std::process::Stdio::piped())
                .stderr(closed_pipe());
        }
        command.output().expect("run")
    };
    // --check looks at the database's directory: it must exist.
    let ok = run(&with_database_in(dir.path(), VALID), true);
    assert_eq!(ok.status.code(), Some(0), "{ok:?}");
    assert!(
        !String::from_utf8_lossy(&ok.stderr).contains("panicked"),
        "{ok:?}"
    );
    let bad = run(&VALID.replace("primary_key_id = \"k1\"", ""), false);
    assert_eq!(bad.status.code(), Some(2), "{bad:?}");
}

/// Issue 29 item 17c: the simulator example run twice, each time with a new random
/// `SCALESET_KEY` as its comment says. The credentials stored by the first run are sealed with
/// a key that is gone; the declared ones replace them without being decrypted, and the second
/// run serves again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_simulator_example_runs_twice_with_a_new_key_each_time() {
    let sim = RunningSim::start().await;
    let dir = tempfile::tempdir().expect("temp dir");
    let cloud = dir.path().join("cloud");
    std::fs::create_dir_all(&cloud).expect("cloud dir");
    let example = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../docs/examples/worker-sim.toml");
    let base = format!("http://{}", sim.addr);
    let env = |key: &str| {
        vec![
            ("SCALESET_KEY", key.to_owned()),
            ("SIM_TOKEN", "ghp_simulator".to_owned()),
            (
                "SCALESET_DATABASE__URL",
                format!("sqlite://{}", dir.path().join("demo.db").display()),
            ),
            ("SCALESET_WORKER__LISTEN", "127.0.0.1:0".to_owned()),
            ("SCALESET_WORKER__WATCH_INTERVAL", "100ms".to_owned()),
            ("SCALESET_FAKE__STATE_DIR", cloud.display().to_string()),
            ("SCALESET_FAKE__SIMULATOR_URL", base.clone()),
            ("SCALESET_CREDENTIALS__0__BASE_URL", base.clone()),
            (
                "SCALESET_CREDENTIALS__0__API_BASE_URL",
                format!("{base}/api/v3"),
            ),
            ("RUST_LOG", "info".to_owned()),
        ]
    };
    let first = Worker::spawn(&example, &env(helpers::KEY));
    let id = sim.listening("the first run listens", "linux").await;
    assert_eq!(first.signal_and_wait(Signal::SIGTERM).await, Some(0));
    assert!(!sim.has_session(id));

    // Another 32-byte key, as `head -c 32 /dev/urandom | base64` gives.
    let second = Worker::spawn(
        &example,
        &env("AgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgI="),
    );
    eventually("the second run listens again", || async {
        sim.has_session(id).then_some(())
    })
    .await;
    let log = second.log();
    assert_eq!(
        second.signal_and_wait(Signal::SIGTERM).await,
        Some(0),
        "{log}"
    );
}

#[test]
fn completions_and_the_man_page_name_the_worker_commands_and_a_usage_error_exits_1() {
    let bash = std::process::Command::new(BIN)
        .args(["completions", "bash"])
        .output()
        .unwrap();
    assert_eq!(bash.status.code(), Some(0), "{bash:?}");
    let script = String::from_utf8_lossy(&bash.stdout);
    assert!(script.contains("complete -F _scaleset__worker"), "{script}");
    assert!(script.contains("decommission"), "{script}");
    let dir = tempfile::tempdir().unwrap();
    let man = std::process::Command::new(BIN)
        .args(["man", "--dir", dir.path().to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(man.status.code(), Some(0), "{man:?}");
    let page = std::fs::read_to_string(dir.path().join("scaleset-worker-decommission.1")).unwrap();
    assert!(
        page.contains(".TH scaleset-worker-decommission 1"),
        "{page}"
    );
    // 2 means "refused" in the table of exit codes (docs/cli.md); a typo is an error.
    let typo = std::process::Command::new(BIN)
        .arg("--bogus")
        .output()
        .unwrap();
    assert_eq!(typo.status.code(), Some(1), "{typo:?}");
}
