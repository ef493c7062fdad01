//! Issue 34 through the server: `scalesetctl decommission` against the API with its worker
//! running (as `scaleset-server --with-worker`), another controller's scale set and instance
//! beside ours. The plan names everything with why; apply needs the reviewed digest; the
//! server's own worker lets the scale set go; everything ours goes, the foreign ones stay.

use scaleset_provider::{
    BootstrapInstance, CreateRequest, OsArch, OsType, PoolKey, Provider as _, SecretString,
    UserDataOptions,
};

use crate::helpers::{CONTROLLER_ID, Server};

const FOREIGN: u128 = 0x9b1d_2c3e_0000_4000_8000_0000_0000_beef;

fn bootstrap(name: &str, pool: PoolKey) -> BootstrapInstance {
    BootstrapInstance {
        name: name.into(),
        tools: vec![],
        repo_url: String::new(),
        callback_url: String::new(),
        metadata_url: String::new(),
        instance_token: SecretString::from(""),
        ssh_keys: vec![],
        extra_specs: None,
        github_runner_group: "Default".into(),
        ca_cert_bundle: None,
        arch: OsArch::Amd64,
        os_type: OsType::Linux,
        flavor: "small".into(),
        image: "ubuntu".into(),
        labels: vec![],
        pool_id: pool,
        user_data_options: UserDataOptions::default(),
        jit_config_enabled: true,
        proxy_config: None,
    }
}

fn digest_of(plan: &str) -> String {
    plan.lines()
        .find_map(|l| l.strip_prefix("plan digest: "))
        .unwrap_or_else(|| panic!("the plan prints its digest:\n{plan}"))
        .trim()
        .to_owned()
}

#[test]
fn decommission_through_the_server_deletes_ours_and_leaves_the_foreign() {
    let server = Server::start();
    server.with_acme();
    let run = server.create_scale_set("linux", 3, &["--min-idle", "1"]);
    assert_eq!(run.code, 0, "{run:?}");
    let (_, set) = server.json(&["scale-set", "show", "linux"]);
    let github_id = set["github_id"].as_i64().expect("a GitHub id");
    server
        .sim
        .enqueue_jobs(github_id, &scaleset_sim::JobSpec::count(1))
        .expect("enqueue");
    server.eventually("one busy and one idle runner of ours", || {
        let state = server.sim.state();
        let running = state
            .jobs_of(github_id)
            .filter(|j| j.state == "running")
            .count();
        let agents = state
            .agents
            .iter()
            .filter(|a| a.scale_set_id == github_id)
            .count();
        (running == 1 && agents == 2 && server.cloud.instances().len() == 2).then_some(())
    });

    // Another controller's scale set in our runner group, and its instance in our cloud.
    let foreign = server
        .sim
        .create_foreign_scale_set("acme", 1, "their-linux", "other-controller")
        .expect("the foreign scale set")
        .scale_set_id;
    let other = uuid::Uuid::from_u128(FOREIGN);
    server
        .runtime()
        .block_on(server.cloud.provider(other).create(&CreateRequest {
            bootstrap: bootstrap("their-runner", scaleset_control::pool_key(other, foreign)),
            jit_config: None,
            bootstrap_timeout: None,
        }))
        .expect("the foreign instance");
    // And an instance of ours whose scale set is neither on GitHub nor in the store (what a
    // set deleted out of band with its record left behind): ours by its pool key alone.
    let ours: uuid::Uuid = CONTROLLER_ID.parse().expect("uuid");
    server
        .runtime()
        .block_on(server.cloud.provider(ours).create(&CreateRequest {
            bootstrap: bootstrap("linux-orphan", scaleset_control::pool_key(ours, 99_999)),
            jit_config: None,
            bootstrap_timeout: None,
        }))
        .expect("the orphaned instance");

    // Not without a valid token.
    let refused = server.ctl_env(&["decommission"], &[("SCALESET_TOKEN", "sst_not-a-token")]);
    assert_eq!(refused.code, 1, "{refused:?}");
    assert!(refused.stderr.contains("401"), "{refused:?}");

    // The plan changes nothing, says what it would do and why, and exits 2: it has work in it.
    let plan = server.ctl(&["decommission", "--force-busy"]);
    assert_eq!(plan.code, 2, "{plan:?}");
    let plan = plan.stdout;
    assert!(
        plan.contains("skip   scale set acme/their-linux") && plan.contains("not provably ours"),
        "the foreign set is shown skipped, with why:\n{plan}"
    );
    assert!(
        plan.contains("kill   runner") && plan.contains("delete runner"),
        "the busy runner is killed by flag, the idle one retired:\n{plan}"
    );
    assert!(
        plan.contains(&format!(
            "delete scale set acme/linux (GitHub id {github_id})"
        )),
        "{plan}"
    );
    assert!(!plan.contains("their-runner"), "{plan}");
    assert!(
        plan.contains(&format!(
            "delete instance linux-orphan (provider fake, pool {CONTROLLER_ID}_99999): tagged \
             with our pool key"
        )),
        "the orphan is found by our pool-key prefix:\n{plan}"
    );
    assert!(server.sim.state().scale_set(github_id).is_some());

    // A wrong digest, or the digest of another plan (without --force-busy), is refused.
    let wrong = "0".repeat(64);
    let stale = server.ctl(&[
        "decommission",
        "--force-busy",
        "--apply",
        "--digest",
        &wrong,
    ]);
    assert_eq!(stale.code, 2, "{stale:?}");
    assert!(stale.stderr.contains("stale_plan"), "{stale:?}");
    let digest = digest_of(&plan);
    let other_plan = server.ctl(&["decommission", "--apply", "--digest", &digest]);
    assert_eq!(other_plan.code, 2, "{other_plan:?}");
    assert!(
        server.sim.state().scale_set(github_id).is_some(),
        "nothing applied"
    );
    assert_eq!(server.cloud.instances().len(), 4, "nothing applied");

    // Applied as reviewed, while the server's worker serves the set: it lets it go.
    let applied = server.ok(&[
        "decommission",
        "--force-busy",
        "--apply",
        "--digest",
        &digest,
    ]);
    assert!(
        applied
            .stdout
            .contains("decommissioned: nothing of ours is left"),
        "{applied:?}"
    );
    let state = server.sim.state();
    assert!(state.scale_set(github_id).is_none(), "our set is gone");
    assert!(
        !state.agents.iter().any(|a| a.scale_set_id == github_id),
        "our runners are gone"
    );
    assert!(state.scale_set(foreign).is_some(), "the foreign set stays");
    let left: Vec<_> = server
        .cloud
        .instances()
        .into_iter()
        .map(|i| i.instance.name)
        .collect();
    assert_eq!(left, ["their-runner"], "only the foreign instance stays");
    server.ok_starting_with(&["scale-set", "list"], "no scale sets");
    // The records went last: a new plan has nothing of ours (and, with no scale set stored
    // or declared, no runner group to look in).
    let after = server.ok(&["decommission"]).stdout;
    // (Exit 0: a plan with nothing to do.)
    assert!(
        after.contains("delete 0, detach 0, wait 0, kill 0,") && !after.contains("acme/linux"),
        "nothing of ours is left:\n{after}"
    );
}

#[test]
fn a_server_without_providers_refuses_to_decommission_and_says_where_to_run_it() {
    let server = Server::start_without_decommission();
    let run = server.ctl(&["decommission"]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stderr.contains("no_providers"), "{run:?}");
    assert!(
        run.stderr.contains("--with-worker")
            && run.stderr.contains("scaleset-worker decommission --config"),
        "{run:?}"
    );
}

#[test]
fn decommission_exits_2_for_a_plan_with_work_and_3_when_busy_runners_are_left() {
    let server = Server::start();
    server.with_acme();
    let run = server.create_scale_set("linux", 3, &["--min-idle", "1"]);
    assert_eq!(run.code, 0, "{run:?}");
    let (_, set) = server.json(&["scale-set", "show", "linux"]);
    let github_id = set["github_id"].as_i64().expect("a GitHub id");
    server
        .sim
        .enqueue_jobs(github_id, &scaleset_sim::JobSpec::count(1))
        .expect("enqueue");
    server.eventually("one busy and one idle runner of ours", || {
        let state = server.sim.state();
        let running = state
            .jobs_of(github_id)
            .filter(|j| j.state == "running")
            .count();
        (running == 1 && server.cloud.instances().len() == 2).then_some(())
    });
    let plan = server.ctl(&["decommission"]);
    assert_eq!(plan.code, 2, "a plan with work in it: {plan:?}");
    assert!(
        plan.stdout.contains("delete runner"),
        "the idle one: {plan:?}"
    );
    let applied = server.ctl(&[
        "decommission",
        "--apply",
        "--digest",
        &digest_of(&plan.stdout),
    ]);
    assert_eq!(applied.code, 3, "busy runners were left: {applied:?}");
    assert!(
        applied.stdout.contains("busy runners of ours were left"),
        "{applied:?}"
    );
    let (code, json) = server.json(&["decommission", "--apply", "--digest", &"0".repeat(64)]);
    assert_eq!(code, 2, "a stale plan is refused: {json}");
    assert_eq!(json["code"], "stale_plan", "{json}");
}
