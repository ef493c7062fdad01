//! A scale set whose runners keep failing to boot, and one whose start-up recovery fails:
//! each is shown on the scale set (state, reason, event, the attention gauge) and retried
//! without hot-looping, and both clear once things work again.

use std::sync::atomic::Ordering;
use std::time::Duration;

use scaleset_control::Settings;
use scaleset_store::{
    BootstrapReport, BootstrapStatus, InstanceAccessStore as _, InstanceStatus, ScaleSetState,
};

use crate::helpers::{Harness, TestDb, backend_tests, eventually, settings, sim_config};

backend_tests!(
    runners_failing_to_boot_are_created_again_only_after_a_growing_wait_until_one_comes_online,
    a_failing_recovery_is_shown_on_the_scale_set_retried_and_cleared_once_it_works,
);

const BASE: Duration = Duration::from_secs(60);

/// Waits until a few more polls (and so scaling passes) have run.
async fn a_few_polls(h: &Harness) {
    let polls = h.sim().request_count("get_message");
    eventually("a few more polls ran", || async {
        (h.sim().request_count("get_message") >= polls + 3).then_some(())
    })
    .await;
}

/// How many runners the cloud was asked to create.
fn created(h: &Harness) -> usize {
    h.created.lock().expect("created").len()
}

/// Waits until the `n`-th runner is created and running, and returns its name.
async fn nth_runner(h: &Harness, n: usize) -> String {
    eventually("the next runner is created", || async {
        let name = h.created.lock().expect("created").get(n - 1)?.name.clone();
        let row = h.instances().await.into_iter().find(|i| i.name == name)?;
        (row.status == InstanceStatus::Running).then_some(name)
    })
    .await
}

/// Reports `name`'s bootstrap failed, as the instance-facing callback records it, and waits
/// until it is removed and the scale set shows the back-off.
async fn fails(h: &Harness, name: &str) {
    h.store
        .report_instance_status(
            name,
            BootstrapReport {
                status: BootstrapStatus::Failed,
                message: "failed to download tools".to_owned(),
                agent_id: None,
            },
        )
        .await
        .expect("the report");
    eventually("the runner is removed and creates back off", || async {
        let gone = h.instances().await.iter().all(|i| i.name != name);
        let stored = h.stored().await;
        (gone
            && stored.state == ScaleSetState::Error
            && stored.state_reason.contains(name)
            && h.events().await.first().map(String::as_str) == Some("bootstrap_backoff"))
        .then_some(stored.state_reason)
    })
    .await;
}

async fn runners_failing_to_boot_are_created_again_only_after_a_growing_wait_until_one_comes_online(
    db: TestDb,
) {
    let h = Harness::with_store_on_the_clock(db, sim_config(), |spec| {
        spec.change(|r| r.bootstrap_timeout = Some(Duration::from_secs(3600)))
            .unwrap();
    })
    .await;
    h.boot.store(false, Ordering::SeqCst);
    let controller = h.start_with(
        Settings {
            lease_ttl: Duration::from_secs(86_400),
            instance_api_url: Some("http://127.0.0.1:9/".parse().unwrap()),
            bootstrap_backoff_base: BASE,
            bootstrap_backoff_max: 4 * BASE,
            ..settings()
        },
        None,
    );
    let github_id = h.ready().await;
    // The job waits through every failed boot.
    h.sim()
        .enqueue_jobs(github_id, &scaleset_sim::JobSpec::count(1))
        .expect("enqueue");

    let first = nth_runner(&h, 1).await;
    fails(&h, &first).await;
    let reason = h.stored().await.state_reason;
    assert!(
        reason.contains("failed to download tools")
            && reason.contains("scalesetctl scale-set retry"),
        "{reason}"
    );
    // However often the task wakes, nothing is created before the wait is over.
    a_few_polls(&h).await;
    a_few_polls(&h).await;
    assert_eq!(created(&h), 1, "no create while the set backs off");
    h.clock.advance(BASE);
    let second = nth_runner(&h, 2).await;

    // The second failure waits longer: between half of 2 × BASE and all of it.
    fails(&h, &second).await;
    h.clock.advance(BASE - Duration::from_secs(1));
    a_few_polls(&h).await;
    a_few_polls(&h).await;
    assert_eq!(created(&h), 2, "the second wait is longer than the first");

    // The boot works again: the next runner comes up, takes the job that waited, and the set
    // is served as ready again.
    h.boot.store(true, Ordering::SeqCst);
    h.clock.advance(BASE + Duration::from_secs(1));
    nth_runner(&h, 3).await;
    eventually("the waiting job runs", || async {
        h.job_states(github_id)
            .iter()
            .any(|s| s == "running")
            .then_some(())
    })
    .await;
    eventually("the back-off is over and the set is ready", || async {
        let stored = h.stored().await;
        let recovered = h.events().await.iter().any(|k| k == "bootstrap_recovered");
        (stored.state == ScaleSetState::Ready && recovered).then_some(())
    })
    .await;
    let labels = controller
        .metrics
        .set_labels(h.stored().await.id)
        .expect("the scale set's series are exported");
    assert_eq!(
        controller
            .metrics
            .bootstrap_failures
            .get_or_create(&labels)
            .get(),
        2,
        "each reported failure counts"
    );
    h.sim().advance(Duration::from_secs(60));
    eventually("the job completed", || async {
        h.job_states(github_id)
            .iter()
            .all(|s| s == "completed")
            .then_some(())
    })
    .await;
    assert_eq!(created(&h), 3);
    controller.stop().await;
}

/// The attention gauge, read from the registry's text.
fn attention(controller: &crate::helpers::RunningController) -> Option<String> {
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &controller.registry).expect("encode");
    text.lines()
        .find(|l| l.starts_with("scaleset_scale_sets_needing_attention "))
        .map(|l| l.rsplit(' ').next().unwrap_or_default().to_owned())
}

async fn a_failing_recovery_is_shown_on_the_scale_set_retried_and_cleared_once_it_works(
    db: TestDb,
) {
    let h = Harness::new(db, sim_config(), |_| {}).await;
    h.cloud.fail_lists(usize::MAX);
    let controller = h.start(None);
    let reason = eventually("the failed recovery is shown", || async {
        let stored = h.stored().await;
        let shown = stored.state == ScaleSetState::Error
            && stored
                .state_reason
                .contains("recovering the instances failed");
        let event = h.events().await.iter().any(|k| k == "recovery_failed");
        (shown && event).then_some(stored.state_reason)
    })
    .await;
    assert!(
        reason.contains("injected list failure")
            && reason.contains("ListInstances")
            && reason.contains("tried again"),
        "the cause and what to do: {reason}"
    );
    eventually("the attention gauge counts it", || async {
        (attention(&controller).as_deref() == Some("1")).then_some(())
    })
    .await;
    // Jobs are served meanwhile.
    let github_id = h.stored().await.github_id.expect("ensured");
    h.serve_jobs(github_id, 1).await;

    // The provider lists again: the next try works and the set is ready.
    h.cloud.fail_lists(0);
    eventually("the recovery worked and the set is ready", || async {
        let stored = h.stored().await;
        let event = h.events().await.iter().any(|k| k == "recovery_recovered");
        (stored.state == ScaleSetState::Ready && event).then_some(())
    })
    .await;
    eventually("the attention gauge is clear", || async {
        (attention(&controller).as_deref() == Some("0")).then_some(())
    })
    .await;
    controller.stop().await;
}
