//! Issue 34: `scaleset-worker decommission --config FILE` against the simulator, with another
//! controller's scale set, runner and instance in the same runner group and cloud: everything
//! ours goes, everything foreign stays, with the database and after deleting it; a busy runner
//! is waited for, skipped, or killed by flag; only the reviewed plan (its digest) is applied.

use std::path::Path;
use std::time::Duration;

use nix::sys::signal::Signal;
use scaleset_github::{
    Client, ClientConfig, ConfigUrl, Credentials, ExposeSecret as _, JitConfigRequest, Label,
    NewRunnerScaleSet, RunnerGroupId,
};

use crate::helpers::{BIN, RunningSim, Site, Worker, eventually, worker_env};

const FOREIGN: &str = "9b1d2c3e-0000-4000-8000-00000000beef";

/// What another controller left in our runner group and our cloud.
struct Foreign {
    set_id: i64,
    runner: String,
    instance: (String, String),
}

async fn foreign_neighbour(sim: &RunningSim, site: &Site) -> Foreign {
    let client = Client::new(ClientConfig::new(
        ConfigUrl::parse(&sim.url("/acme")).expect("url"),
        Credentials::pat("ghp_simulator"),
    ))
    .expect("client");
    let label = format!("scaleset-owner-{}", FOREIGN.replace('-', ""));
    let set = client
        .create_scale_set(
            &NewRunnerScaleSet::new("their-linux", RunnerGroupId(1))
                .with_labels(vec![Label::system("linux"), Label::system(label)]),
        )
        .await
        .expect("the foreign scale set");
    let jit = client
        .generate_jit_config(set.id, &JitConfigRequest::new("their-runner"))
        .await
        .expect("a foreign runner");
    sim.sim
        .start_runner(jit.encoded_jit_config.expose_secret())
        .expect("the foreign runner registers");
    let pool = format!("{FOREIGN}_{}", set.id.0);
    std::fs::create_dir_all(site.cloud().join(&pool)).expect("foreign pool dir");
    std::fs::write(site.cloud().join(&pool).join("their-runner.json"), "{}")
        .expect("foreign instance");
    Foreign {
        set_id: set.id.0,
        runner: "their-runner".to_owned(),
        instance: (pool, "their-runner".to_owned()),
    }
}

/// Runs `scaleset-worker decommission --config <site> <args>`: (exit code, stdout, stderr).
async fn decommission(config: &Path, args: &[&str]) -> (Option<i32>, String, String) {
    let mut command = tokio::process::Command::new(BIN);
    command
        .arg("decommission")
        .arg("--config")
        .arg(config)
        .args(args)
        .env_clear()
        .kill_on_drop(true);
    for (k, v) in worker_env() {
        command.env(k, v);
    }
    let output = tokio::time::timeout(Duration::from_secs(120), command.output())
        .await
        .expect("decommission ends within 120 s")
        .expect("run scaleset-worker decommission");
    let out = (
        output.status.code(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    );
    if std::env::var_os("WORKER_LOG").is_some() {
        eprintln!("decommission {args:?}: {out:?}");
    }
    out
}

fn digest_of(plan: &str) -> String {
    plan.lines()
        .find_map(|l| l.strip_prefix("plan digest: "))
        .unwrap_or_else(|| panic!("the plan prints its digest:\n{plan}"))
        .trim()
        .to_owned()
}

/// A worker served `linux` with one job running on one of our runners, then stopped: our
/// scale set, its busy runner and its instance, beside the foreign neighbour.
async fn served_and_stopped(sim: &RunningSim, site: &Site) -> (i64, Foreign) {
    let worker = Worker::spawn(&site.config(), &worker_env());
    let id = sim.listening("the worker listens on linux", "linux").await;
    sim.enqueue(id, 1);
    sim.all_running("our runner runs the job", id, 1).await;
    let foreign = foreign_neighbour(sim, site).await;
    assert_eq!(
        worker.signal_and_wait(Signal::SIGTERM).await,
        Some(0),
        "the worker stops cleanly"
    );
    assert!(
        site.instances()
            .iter()
            .any(|(pool, _)| pool.ends_with(&format!("_{id}"))),
        "our instance is still running after the stop"
    );
    (id, foreign)
}

fn assert_foreign_untouched(sim: &RunningSim, site: &Site, foreign: &Foreign) {
    let state = sim.sim.state();
    assert!(
        state.scale_set(foreign.set_id).is_some(),
        "the foreign scale set stays"
    );
    assert!(
        state.agents.iter().any(|a| a.name == foreign.runner),
        "the foreign runner stays"
    );
    assert!(
        site.instances().contains(&foreign.instance),
        "the foreign instance stays"
    );
}

fn ours_left(sim: &RunningSim, site: &Site, id: i64) -> (bool, usize, usize) {
    let state = sim.sim.state();
    let set = state.scale_set(id).is_some();
    let runners = state.agents.iter().filter(|a| a.scale_set_id == id).count();
    let instances = site
        .instances()
        .iter()
        .filter(|(pool, _)| pool.ends_with(&format!("_{id}")) && !pool.starts_with(FOREIGN))
        .count();
    (set, runners, instances)
}

#[tokio::test]
async fn decommission_with_the_database_skips_a_busy_runner_then_kills_it_by_flag() {
    let sim = RunningSim::start_with(|c| c.runner_job_duration = Duration::from_secs(3600)).await;
    let site = Site::new(&sim, &["linux"]);
    let (id, foreign) = served_and_stopped(&sim, &site).await;

    // The plan alone changes nothing; with the busy runner skipped (no --wait, no
    // --force-busy) it has nothing to do either: exit 0.
    let (code, plan, err) = decommission(&site.config(), &[]).await;
    assert_eq!(code, Some(0), "{err}");
    assert!(plan.contains("records: database"), "{plan}");
    assert!(
        plan.contains("skip   scale set acme/their-linux") && plan.contains("another controller"),
        "the foreign set is shown skipped, with why:\n{plan}"
    );
    assert!(
        plan.contains("skip   runner") && plan.contains("--force-busy kills it"),
        "the busy runner is shown left:\n{plan}"
    );
    assert_eq!(ours_left(&sim, &site, id), (true, 1, 1), "nothing applied");

    // Apply needs the reviewed digest, and refuses another.
    let (code, _, err) = decommission(&site.config(), &["--apply"]).await;
    assert_eq!(
        code,
        Some(1),
        "--apply without --digest is a usage error: {err}"
    );
    let wrong = "0".repeat(64);
    let (code, _, err) = decommission(&site.config(), &["--apply", "--digest", &wrong]).await;
    assert_eq!(code, Some(2), "a stale plan is refused: {err}");
    assert!(err.contains("stale"), "{err}");
    assert_eq!(ours_left(&sim, &site, id), (true, 1, 1), "nothing applied");

    // Applied as reviewed: the busy runner, its instance and its set are left.
    let reviewed = digest_of(&plan);
    let (code, out, err) = decommission(&site.config(), &["--apply", "--digest", &reviewed]).await;
    assert_eq!(code, Some(3), "busy runners were left: {out}{err}");
    assert_eq!(ours_left(&sim, &site, id), (true, 1, 1));
    assert_foreign_untouched(&sim, &site, &foreign);
    // A plan with --force-busy is another plan: the digest reviewed without it is refused.
    let (code, forced, err) = decommission(&site.config(), &["--force-busy"]).await;
    assert_eq!(code, Some(2), "{err}");
    assert!(forced.contains("kill   runner"), "{forced}");
    assert_ne!(digest_of(&forced), reviewed);
    let (code, _, err) = decommission(
        &site.config(),
        &["--apply", "--digest", &reviewed, "--force-busy"],
    )
    .await;
    assert_eq!(
        code,
        Some(2),
        "the plan reviewed without --force-busy is not this one"
    );
    assert!(err.contains("stale"), "{err}");

    let (code, out, err) = decommission(
        &site.config(),
        &["--force-busy", "--apply", "--digest", &digest_of(&forced)],
    )
    .await;
    assert_eq!(code, Some(0), "{out}{err}");
    assert_eq!(ours_left(&sim, &site, id), (false, 0, 0), "{out}");
    assert_foreign_untouched(&sim, &site, &foreign);
    // The record went last: a new plan has nothing of ours.
    let (code, after, _) = decommission(&site.config(), &[]).await;
    assert_eq!(code, Some(0), "a plan of skips alone has nothing to do");
    assert!(!after.contains("acme/linux (GitHub"), "{after}");
    assert!(!after.contains("record acme/linux"), "{after}");
    assert!(
        after.contains("delete 0, detach 0, wait 0, kill 0, skip 1"),
        "nothing of ours is left:\n{after}"
    );
}

#[tokio::test]
async fn decommission_after_deleting_the_database_waits_for_a_busy_runner() {
    let sim = RunningSim::start_with(|c| c.runner_job_duration = Duration::from_secs(3600)).await;
    let site = Site::new(&sim, &["linux"]);
    let (id, foreign) = served_and_stopped(&sim, &site).await;
    site.wipe_database();

    let (code, plan, err) = decommission(&site.config(), &["--wait", "5m"]).await;
    assert_eq!(code, Some(2), "{err}");
    assert!(plan.contains("records: no database"), "{plan}");
    assert!(
        plan.contains("wait   runner") && plan.contains("scale set acme/linux"),
        "the busy runner is waited for:\n{plan}"
    );
    assert!(!site.db().exists(), "planning creates no database");

    let mut apply = tokio::process::Command::new(BIN);
    apply
        .arg("decommission")
        .arg("--config")
        .arg(site.config())
        .args(["--wait", "5m", "--apply", "--digest", &digest_of(&plan)])
        .env_clear()
        .kill_on_drop(true);
    for (k, v) in worker_env() {
        apply.env(k, v);
    }
    let listed = sim.sim.request_count("list_agents");
    let child = apply.output();
    let finish = async {
        // The decommission looked twice (the reviewed plan, then again while it waits): the
        // job still runs and our set is still there; then the job ends.
        eventually("the decommission looks again while it waits", || async {
            (sim.sim.request_count("list_agents") >= listed + 2).then_some(())
        })
        .await;
        assert_eq!(sim.job_states(id), ["running"], "nothing busy was retired");
        assert!(sim.sim.state().scale_set(id).is_some(), "our set waits");
        sim.sim.advance(Duration::from_secs(7200));
    };
    let (output, ()) = tokio::join!(
        async {
            tokio::time::timeout(Duration::from_secs(180), child)
                .await
                .expect("the decommission ends")
                .expect("run it")
        },
        finish
    );
    let out = String::from_utf8_lossy(&output.stdout);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{out}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(
        sim.job_states(id),
        Vec::<String>::new(),
        "the set is gone with its finished job"
    );
    assert_eq!(ours_left(&sim, &site, id), (false, 0, 0), "{out}");
    assert_foreign_untouched(&sim, &site, &foreign);
}

#[tokio::test]
async fn decommission_without_a_database_needs_the_pinned_controller_id() {
    let sim = RunningSim::start().await;
    let site = Site::new(&sim, &["linux"]);
    let text = std::fs::read_to_string(site.config())
        .expect("config")
        .replace("controller_id = ", "# controller_id = ");
    std::fs::write(site.config(), text).expect("config");
    let (code, out, err) = decommission(&site.config(), &[]).await;
    assert_eq!(code, Some(1), "{out}");
    assert!(err.contains("controller_id"), "{err}");
}

#[tokio::test]
async fn decommission_is_refused_while_a_worker_serves_the_database() {
    let sim = RunningSim::start().await;
    let site = Site::new(&sim, &["linux"]);
    let worker = Worker::spawn(&site.config(), &worker_env());
    let id = sim.listening("the worker listens on linux", "linux").await;
    let (code, out, err) = decommission(&site.config(), &[]).await;
    assert_eq!(code, Some(1), "{out}");
    assert!(err.contains("another worker already serves"), "{err}");
    assert!(sim.has_session(id), "nothing was touched");
    assert_eq!(worker.signal_and_wait(Signal::SIGTERM).await, Some(0));
}
