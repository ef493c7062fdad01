//! The whole loop: jobs queued → runners created through the fake provider with JIT configs →
//! jobs complete → runners retired → back to `min_idle`, in both assignment modes.

use std::time::Duration;

use scaleset_sim::{AssignmentMode, JobSpec};
use scaleset_store::ScaleSetStore as _;

use crate::helpers::{Harness, TestDb, backend_tests, eventually, sim_config};

backend_tests!(whole_loop_auto_assign, whole_loop_acquire, back_to_min_idle);

async fn whole_loop(db: TestDb, mode: AssignmentMode) -> Harness {
    let mut config = sim_config();
    config.assignment = mode;
    let h = Harness::new(db, config, |_| {}).await;
    let (controller, github_id) = h.start_ready().await;
    assert!(
        h.instances().await.is_empty(),
        "min_idle 0 starts no runner"
    );

    h.sim()
        .enqueue_jobs(github_id, &JobSpec::count(5))
        .expect("enqueue");
    eventually("every job runs on its own runner", || async {
        let states = h.job_states(github_id);
        (states.len() == 5 && states.iter().all(|s| s == "running")).then_some(())
    })
    .await;
    {
        let created = h.created.lock().unwrap();
        assert_eq!(created.len(), 5, "one runner per job");
        assert!(
            created.iter().all(|r| r.jit_config.is_some()),
            "each runner got a JIT config"
        );
        let key = h.identity.pool_key(github_id);
        assert!(
            created.iter().all(|r| r.pool == key),
            "every instance carries the pool key"
        );
        assert!(created.iter().all(|r| r.name.starts_with("linux-")));
    }
    assert_eq!(h.instances().await.len(), 5);
    // Issue 32 item 3: the listener stores the status page's samples (the harness's clock
    // stands still, so each replaces the last: one row).
    let samples = h
        .store
        .list_samples(
            &[h.scale_set.id],
            scaleset_store::Timestamp::from_unix_millis(0),
        )
        .await
        .unwrap();
    assert_eq!(samples.len(), 1, "{samples:?}");

    h.sim().advance(Duration::from_secs(60));
    eventually(
        "every job completed and every runner is retired",
        || async {
            let states = h.job_states(github_id);
            let done = states.iter().all(|s| s == "completed");
            (done && h.cloud.instances().is_empty() && h.instances().await.is_empty()).then_some(())
        },
    )
    .await;
    assert_eq!(
        h.created.lock().unwrap().len(),
        5,
        "no runner beyond the five"
    );
    let state = h.sim().state();
    assert!(
        state.agents.is_empty(),
        "no runner left registered on GitHub"
    );
    assert!(
        state
            .jobs_of(github_id)
            .all(|j| j.result.as_deref() == Some("succeeded"))
    );

    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &controller.registry).expect("encode");
    for expected in [
        "scaleset_scale_sets{state=\"ready\"} 1",
        "scaleset_jobs_seen_total{kind=\"completed\"} 5",
        "scaleset_github_calls_total{endpoint=\"generate_jit_config\",class=\"ok\"} 5",
        "scaleset_message_lag_seconds_count",
        "scaleset_runners{status=\"running\"}",
    ] {
        assert!(text.contains(expected), "metrics lack {expected}:\n{text}");
    }
    controller.stop().await;
    assert!(
        h.sim()
            .state()
            .scale_set(github_id)
            .unwrap()
            .session
            .is_none(),
        "the session is deleted on clean shutdown"
    );
    assert_eq!(h.stored().await.session_id, None);
    h
}

async fn whole_loop_auto_assign(db: TestDb) {
    whole_loop(db, AssignmentMode::AutoAssign).await;
}

async fn whole_loop_acquire(db: TestDb) {
    let h = whole_loop(db, AssignmentMode::AvailableThenAcquire).await;
    assert!(
        h.sim().request_count("acquire_jobs") >= 1,
        "jobs were acquired"
    );
}

async fn back_to_min_idle(db: TestDb) {
    let h = Harness::new(db, sim_config(), |spec| {
        spec.change(|r| r.min_idle = Some(i64::from(1))).unwrap()
    })
    .await;
    let (controller, github_id) = h.start_ready().await;
    eventually("one idle runner is kept warm", || async {
        (h.instances().await.len() == 1).then_some(())
    })
    .await;
    h.sim()
        .enqueue_jobs(github_id, &JobSpec::count(3))
        .expect("enqueue");
    eventually("every job runs", || async {
        let states = h.job_states(github_id);
        (states.len() == 3 && states.iter().all(|s| s == "running")).then_some(())
    })
    .await;
    h.sim().advance(Duration::from_secs(60));
    eventually("jobs completed and one idle runner remains", || async {
        let done = h.job_states(github_id).iter().all(|s| s == "completed");
        let instances = h.instances().await;
        let idle = instances.len() == 1
            && instances[0].status == scaleset_store::InstanceStatus::Running
            && h.cloud.instances().len() == 1;
        (done && idle).then_some(())
    })
    .await;
    controller.stop().await;
}

backend_tests!(instances_without_our_pool_key_are_never_touched);

async fn instances_without_our_pool_key_are_never_touched(db: TestDb) {
    use scaleset_provider::{
        BootstrapInstance, CreateRequest, OsArch, OsType, PoolKey, Provider as _, SecretString,
        UserDataOptions,
    };
    let h = Harness::new(db, sim_config(), |_| {}).await;
    // Another controller's instance in the same cloud, and one of ours under another pool.
    let bootstrap = |name: &str, pool: PoolKey| BootstrapInstance {
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
    };
    let other = uuid::Uuid::from_u128(42);
    h.cloud
        .provider(other)
        .create(&CreateRequest {
            bootstrap: bootstrap("linux-foreign1", scaleset_control::pool_key(other, 1)),
            jit_config: None,
            bootstrap_timeout: None,
        })
        .await
        .expect("foreign instance");
    // The other pool of ours names a scale set that exists on GitHub (not provably another
    // controller's), so the orphan sweep leaves it too: a pool key naming an id gone on every
    // entity is an orphan, and the sweep deletes it (`orphans` tests).
    let other_set = h
        .sim()
        .create_foreign_scale_set("acme", 1, "other", "another-autoscaler")
        .expect("the other pool's scale set");
    h.cloud
        .provider(h.identity.id())
        .create(&CreateRequest {
            bootstrap: bootstrap(
                "linux-otherpool",
                h.identity.pool_key(other_set.scale_set_id),
            ),
            jit_config: None,
            bootstrap_timeout: None,
        })
        .await
        .expect("instance of another pool");
    let (controller, github_id) = h.start_ready().await;
    h.sim()
        .enqueue_jobs(github_id, &JobSpec::count(2))
        .expect("enqueue");
    eventually("the jobs run", || async {
        let states = h.job_states(github_id);
        (states.len() == 2 && states.iter().all(|s| s == "running")).then_some(())
    })
    .await;
    h.sim().advance(Duration::from_secs(60));
    eventually("the jobs completed and our runners are retired", || async {
        let done = h.job_states(github_id).iter().all(|s| s == "completed");
        (done && h.instances().await.is_empty()).then_some(())
    })
    .await;
    controller.stop().await;
    let mut left: Vec<String> = h
        .cloud
        .instances()
        .into_iter()
        .map(|i| i.instance.name)
        .collect();
    left.sort();
    assert_eq!(
        left,
        vec!["linux-foreign1".to_owned(), "linux-otherpool".to_owned()]
    );
}

backend_tests!(
    a_runner_is_handed_its_metadata_urls_and_a_token_that_opens_only_its_jit_config,
    without_an_instance_api_url_no_token_is_granted
);

async fn a_runner_is_handed_its_metadata_urls_and_a_token_that_opens_only_its_jit_config(
    db: TestDb,
) {
    use scaleset_store::{ExposeSecret as _, InstanceAccessStore as _, SecretString};
    let h = Harness::new(db, sim_config(), |spec| {
        spec.change(|r| r.min_idle = Some(i64::from(2))).unwrap()
    })
    .await;
    let mut settings = crate::helpers::settings();
    settings.instance_api_url = Some("https://scaleset.example.com/".parse().unwrap());
    let controller = h.start_with(settings, None);
    h.ready().await;
    let created = eventually("two runners are created", || async {
        let created = h.created.lock().unwrap().clone();
        (created.len() >= 2).then_some(created)
    })
    .await;
    for runner in &created {
        assert_eq!(
            (runner.metadata_url.as_str(), runner.callback_url.as_str()),
            (
                "https://scaleset.example.com/api/v1/metadata",
                "https://scaleset.example.com/api/v1/callbacks/status"
            )
        );
        let token = SecretString::from(runner.instance_token.expose_secret());
        let access = h
            .store
            .authenticate_instance(&token)
            .await
            .unwrap()
            .expect("the handed token opens its instance");
        assert_eq!(access.instance_name, runner.name);
        assert_eq!(access.scale_set_id, h.scale_set.id);
        // It lasts the bootstrap timeout, on the store's clock (which checks it).
        let now = scaleset_store::Clock::now(&scaleset_store::SystemClock);
        let left = access.expires_at.unix_millis() - now.unix_millis();
        assert!((590_000..=600_000).contains(&left), "{left} ms left");
        let kept = h
            .store
            .open_instance_jit_config(&runner.name)
            .await
            .unwrap();
        assert_eq!(
            Some(kept.expose_secret()),
            runner.jit_config.as_ref().map(|j| j.expose_secret()),
            "the JIT config kept for the instance is the one GitHub generated for it"
        );
    }
    assert_ne!(
        created[0].instance_token.expose_secret(),
        created[1].instance_token.expose_secret(),
        "each instance has its own token"
    );
    controller.stop().await;
}

async fn without_an_instance_api_url_no_token_is_granted(db: TestDb) {
    use scaleset_store::{ExposeSecret as _, InstanceAccessStore as _};
    let h = Harness::new(db, sim_config(), |spec| {
        spec.change(|r| r.min_idle = Some(i64::from(1))).unwrap()
    })
    .await;
    let (controller, _) = h.start_ready().await;
    let created = eventually("a runner is created", || async {
        h.created.lock().unwrap().first().cloned()
    })
    .await;
    assert_eq!(
        (
            created.metadata_url.as_str(),
            created.callback_url.as_str(),
            created.instance_token.expose_secret()
        ),
        ("", "", "")
    );
    assert_eq!(
        h.store.get_instance_access(&created.name).await.unwrap(),
        None
    );
    controller.stop().await;
}

backend_tests!(an_instance_an_operator_asked_to_go_is_retired_and_replaced);

async fn an_instance_an_operator_asked_to_go_is_retired_and_replaced(db: TestDb) {
    use scaleset_store::InstanceStore as _;
    let h = Harness::new(db, sim_config(), |spec| {
        spec.change(|r| r.min_idle = Some(i64::from(1))).unwrap()
    })
    .await;
    let (controller, github_id) = h.start_ready().await;
    let first = eventually("one idle runner is kept warm", || async {
        let instances = h.instances().await;
        (instances.len() == 1 && instances[0].status == scaleset_store::InstanceStatus::Running)
            .then(|| instances[0].name.clone())
    })
    .await;
    h.store.request_instance_removal(&first).await.unwrap();
    eventually("the runner is retired everywhere and replaced", || async {
        let instances = h.instances().await;
        let replaced = instances.len() == 1
            && instances[0].name != first
            && instances[0].status == scaleset_store::InstanceStatus::Running;
        let gone_from_cloud = h.cloud.instances().iter().all(|i| i.instance.name != first);
        let gone_from_github = !h
            .sim()
            .state()
            .agents
            .iter()
            .any(|a| a.scale_set_id == github_id && a.name == first);
        (replaced && gone_from_cloud && gone_from_github).then_some(())
    })
    .await;
    controller.stop().await;
}
