//! The runner downloads of the entity (GARM's `tools`) in every bootstrap: read from GitHub
//! once per entity however many scale sets ask, handed whole to each create, and no provider
//! call while they cannot be read; each scale set's OS and architecture beside them.

use scaleset_sim::{Burst, Faults, JobSpec};
use scaleset_store::test_util;
use scaleset_store::{NewScaleSet, RunnerDownloadStore as _, ScaleSetState, ScaleSetStore as _};

use crate::helpers::{Harness, TestDb, backend_tests, eventually, sim_config};

backend_tests!(
    every_bootstrap_carries_its_sets_platform_and_the_entitys_runner_downloads_read_once,
    no_runner_is_created_while_the_runner_downloads_cannot_be_read
);

/// The `(os, architecture)` of every tool of a bootstrap, sorted.
fn platforms(tools: &[scaleset_provider::RunnerTool]) -> Vec<(String, String)> {
    let mut all: Vec<(String, String)> = tools
        .iter()
        .map(|t| {
            (
                t.os.clone().unwrap_or_default(),
                t.architecture.clone().unwrap_or_default(),
            )
        })
        .collect();
    all.sort();
    all
}

async fn every_bootstrap_carries_its_sets_platform_and_the_entitys_runner_downloads_read_once(
    db: TestDb,
) {
    let h = Harness::new(db, sim_config(), |_| {}).await;
    let second = h
        .store
        .create_scale_set(NewScaleSet {
            entity_id: h.scale_set.entity_id,
            spec: test_util::spec("arm")
                .edit(|r| r.os_arch = Some(scaleset_store::OsArch::Arm64.as_str().to_owned()))
                .expect("a valid test spec"),
        })
        .await
        .expect("second scale set");
    let (controller, first_id) = h.start_ready().await;
    let second_id = eventually("the second scale set is ready", || async {
        let stored = h.store.get_scale_set(second.id).await.ok()?;
        (stored.state == ScaleSetState::Ready && stored.session_id.is_some())
            .then_some(stored.github_id?)
    })
    .await;
    for id in [first_id, second_id] {
        h.sim()
            .enqueue_jobs(id, &JobSpec::count(2))
            .expect("enqueue");
    }
    eventually("a runner for each job", || async {
        (h.created.lock().unwrap().len() == 4).then_some(())
    })
    .await;
    let expected: Vec<(String, String)> = [
        ("linux", "arm"),
        ("linux", "arm64"),
        ("linux", "x64"),
        ("osx", "arm64"),
        ("osx", "x64"),
        ("win", "arm64"),
        ("win", "x64"),
    ]
    .iter()
    .map(|(os, arch)| ((*os).to_owned(), (*arch).to_owned()))
    .collect();
    for runner in h.created.lock().unwrap().iter() {
        // Each scale set's own OS and architecture, as GARM sends them.
        let arch = serde_json::to_value(runner.bootstrap.arch).unwrap();
        let os_type = serde_json::to_value(runner.bootstrap.os_type).unwrap();
        let wanted = if runner.name.starts_with("arm-") {
            "arm64"
        } else {
            "amd64"
        };
        assert_eq!(
            (arch.as_str(), os_type.as_str()),
            (Some(wanted), Some("linux")),
            "{}",
            runner.name
        );
        let tools = &runner.bootstrap.tools;
        assert_eq!(
            platforms(tools),
            expected,
            "{}: every OS and arch",
            runner.name
        );
        for tool in tools {
            let url = tool.download_url.as_deref().unwrap_or_default();
            let filename = tool.filename.as_deref().unwrap_or_default();
            assert!(
                !filename.is_empty() && url.ends_with(filename),
                "{}: the tool's URL names its file: {url}",
                runner.name
            );
            assert_eq!(
                tool.sha256_checksum.as_deref().map(str::len),
                Some(64),
                "{}: a SHA-256 to check the download",
                runner.name
            );
        }
    }
    assert_eq!(
        h.sim().request_count("runner_downloads"),
        1,
        "one read for the entity, not one per scale set or runner"
    );
    // The list read is recorded for the API, which does not share the worker's memory.
    let stored = h
        .store
        .runner_downloads(h.scale_set.entity_id)
        .await
        .expect("read the recorded downloads")
        .expect("the worker recorded the list it read");
    let (list, _) = stored.read.expect("a good read is recorded");
    let mut recorded: Vec<(String, String)> = list
        .iter()
        .map(|d| (d.os.clone(), d.architecture.clone()))
        .collect();
    recorded.sort();
    assert_eq!(recorded, expected);
    assert!(list.iter().all(|d| d.sha256_checksum.is_some()));
    assert_eq!(stored.failure, None);
    controller.stop().await;
}

async fn no_runner_is_created_while_the_runner_downloads_cannot_be_read(db: TestDb) {
    let h = Harness::new(db, sim_config(), |_| {}).await;
    let (controller, github_id) = h.start_ready().await;
    h.sim().set_faults(Faults {
        server_errors: Some(Burst::new(u32::MAX, 403).on("runner_downloads")),
        ..Faults::default()
    });
    h.sim()
        .enqueue_jobs(github_id, &JobSpec::count(1))
        .expect("enqueue");
    eventually("the scale set shows the failure", || async {
        let stored = h.stored().await;
        (stored.state == ScaleSetState::Error && h.sim().request_count("runner_downloads") >= 2)
            .then_some(())
    })
    .await;
    assert!(
        h.created.lock().unwrap().is_empty(),
        "the provider is never asked without the tools"
    );
    assert!(
        h.instances().await.is_empty(),
        "no runner intent is recorded without the tools"
    );
    assert!(h.events().await.iter().any(|kind| kind == "error"));
    // The failure is recorded for the API, with no list to show.
    let stored = h
        .store
        .runner_downloads(h.scale_set.entity_id)
        .await
        .expect("read the recorded downloads")
        .expect("the worker recorded its failed read");
    assert_eq!(stored.read, None);
    let (failure, _) = stored.failure.expect("the failure is recorded");
    assert!(failure.contains("403"), "{failure}");

    h.sim().set_faults(Faults::default());
    eventually("the job runs once the tools can be read", || async {
        let states = h.job_states(github_id);
        (states.len() == 1 && states[0] == "running").then_some(())
    })
    .await;
    assert_eq!(
        platforms(&h.created.lock().unwrap()[0].bootstrap.tools).len(),
        7
    );
    assert_eq!(h.stored().await.state, ScaleSetState::Ready);
    let stored = h
        .store
        .runner_downloads(h.scale_set.entity_id)
        .await
        .expect("read the recorded downloads")
        .expect("recorded");
    assert_eq!(stored.read.map(|(list, _)| list.len()), Some(7));
    assert_eq!(stored.failure, None, "a good read clears the failure");
    controller.stop().await;
}
