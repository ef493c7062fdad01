//! The fake provider: each behaviour and each fault has a test.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use scaleset_provider::ExposeSecret as _;
use scaleset_provider::{
    Command, CreatedRunner, Error, FakeCloud, FakeProvider, InstanceId, InstanceStatus, Pool,
    PoolKey, Provider, ProviderInstance,
};
use uuid::Uuid;

use crate::helpers::{CONTROLLER, JIT, request};

fn pool(scale_set: i64) -> Pool {
    Pool::new(PoolKey::for_scale_set(
        CONTROLLER,
        scaleset_domain::GithubScaleSetId(scale_set),
    ))
}

fn id(text: &str) -> InstanceId {
    InstanceId::new(text).expect("id")
}

/// Creates the runner `runner-a` in scale set 1's pool.
async fn create_runner_a(provider: &FakeProvider) -> Result<ProviderInstance, Error> {
    provider.create(&request("runner-a", &pool(1))).await
}

#[tokio::test]
async fn records_instances_tagged_with_controller_and_pool() {
    let provider = FakeProvider::new(CONTROLLER);
    let created = create_runner_a(&provider).await.unwrap();
    assert_eq!(created.provider_id, "fake-000001");
    assert_eq!(created.status, InstanceStatus::Running);
    assert_eq!(created.os_type.as_deref(), Some("linux"));
    assert_eq!(created.os_arch.as_deref(), Some("amd64"));

    let recorded = provider.cloud().instances();
    assert_eq!(recorded.len(), 1);
    assert_eq!(recorded[0].controller_id, CONTROLLER);
    assert_eq!(recorded[0].pool, pool(1).key);
    assert_eq!(recorded[0].instance, created);
}

#[tokio::test]
async fn lists_by_pool_key() {
    let provider = FakeProvider::new(CONTROLLER);
    provider.create(&request("a1", &pool(1))).await.unwrap();
    provider.create(&request("a2", &pool(1))).await.unwrap();
    provider.create(&request("b1", &pool(2))).await.unwrap();
    let names = |list: Vec<ProviderInstance>| list.into_iter().map(|i| i.name).collect::<Vec<_>>();
    assert_eq!(names(provider.list(&pool(1)).await.unwrap()), ["a1", "a2"]);
    assert_eq!(names(provider.list(&pool(2)).await.unwrap()), ["b1"]);
    assert!(provider.list(&pool(3)).await.unwrap().is_empty());
}

#[tokio::test]
async fn get_finds_by_provider_id_or_name_and_delete_is_idempotent() {
    let provider = FakeProvider::new(CONTROLLER);
    let created = create_runner_a(&provider).await.unwrap();
    assert_eq!(
        provider.get(&pool(1), &created.id()).await.unwrap(),
        created
    );
    assert_eq!(
        provider.get(&pool(1), &id("runner-a")).await.unwrap(),
        created
    );

    provider.delete(&pool(1), &created.id()).await.unwrap();
    provider.delete(&pool(1), &created.id()).await.unwrap();
    let err = provider.get(&pool(1), &created.id()).await.unwrap_err();
    assert!(matches!(
        err,
        Error::NotFound {
            command: Command::GetInstance,
            ..
        }
    ));
}

#[tokio::test]
async fn a_taken_name_is_a_duplicate() {
    let provider = FakeProvider::new(CONTROLLER);
    create_runner_a(&provider).await.unwrap();
    let err = create_runner_a(&provider).await.unwrap_err();
    assert!(err.is_duplicate());
    assert_eq!(provider.cloud().instances().len(), 1);
}

#[tokio::test]
async fn injected_create_failures_create_nothing_then_stop() {
    let provider = FakeProvider::new(CONTROLLER);
    provider.cloud().fail_creates(2);
    for _ in 0..2 {
        let err = create_runner_a(&provider).await.unwrap_err();
        assert!(
            matches!(
                err,
                Error::Failed {
                    command: Command::CreateInstance,
                    exit_code: Some(1),
                    ..
                }
            ),
            "{err:?}"
        );
    }
    assert!(provider.cloud().instances().is_empty());
    create_runner_a(&provider).await.unwrap();
    assert_eq!(provider.cloud().instances().len(), 1);
}

#[tokio::test]
async fn injected_delete_failures_keep_the_instance() {
    let provider = FakeProvider::new(CONTROLLER);
    let created = create_runner_a(&provider).await.unwrap();
    provider.cloud().fail_deletes(1);
    let err = provider.delete(&pool(1), &created.id()).await.unwrap_err();
    assert!(err.is_retryable(), "{err:?}");
    assert_eq!(provider.list(&pool(1)).await.unwrap().len(), 1);
    provider.delete(&pool(1), &created.id()).await.unwrap();
    assert!(provider.list(&pool(1)).await.unwrap().is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_slow_cloud_delays_every_call() {
    let provider = FakeProvider::new(CONTROLLER);
    provider.cloud().set_delay(Duration::from_secs(45));
    let started = tokio::time::Instant::now();
    create_runner_a(&provider).await.unwrap();
    assert!(started.elapsed() >= Duration::from_secs(45));
    let started = tokio::time::Instant::now();
    provider.list(&pool(1)).await.unwrap();
    assert!(started.elapsed() >= Duration::from_secs(45));
}

#[tokio::test]
async fn a_lost_instance_vanishes_from_get_and_list() {
    let provider = FakeProvider::new(CONTROLLER);
    let created = create_runner_a(&provider).await.unwrap();
    assert!(provider.cloud().lose_instance(&created.id()));
    assert!(!provider.cloud().lose_instance(&created.id()));
    assert!(
        provider
            .get(&pool(1), &created.id())
            .await
            .unwrap_err()
            .is_not_found()
    );
    assert!(provider.list(&pool(1)).await.unwrap().is_empty());
    provider.delete(&pool(1), &created.id()).await.unwrap();
}

#[tokio::test]
async fn a_lost_create_response_still_creates_the_instance() {
    let provider = FakeProvider::new(CONTROLLER);
    provider.cloud().lose_create_responses(1);
    let err = create_runner_a(&provider).await.unwrap_err();
    assert!(err.is_timeout(), "{err:?}");
    let listed = provider.list(&pool(1)).await.unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].name, "runner-a");
    // Retrying blindly would now be a duplicate: look before you create.
    assert!(create_runner_a(&provider).await.unwrap_err().is_duplicate());
}

#[tokio::test]
async fn the_hook_receives_each_created_runner_with_its_jit_config() {
    let cloud = FakeCloud::new();
    let seen: Arc<Mutex<Vec<CreatedRunner>>> = Arc::default();
    let sink = Arc::clone(&seen);
    cloud.on_create(move |runner| sink.lock().unwrap().push(runner.clone()));
    let provider = cloud.provider(CONTROLLER);
    create_runner_a(&provider).await.unwrap();
    cloud.fail_creates(1);
    provider
        .create(&request("runner-b", &pool(1)))
        .await
        .unwrap_err();

    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 1, "failed creates boot nothing");
    assert_eq!(seen[0].name, "runner-a");
    assert_eq!(seen[0].provider_id, "fake-000001");
    assert_eq!(seen[0].pool, pool(1).key);
    assert_eq!(seen[0].controller_id, CONTROLLER);
    assert_eq!(
        seen[0].jit_config.as_ref().map(|j| j.expose_secret()),
        Some(JIT)
    );
}

#[tokio::test]
async fn remove_all_only_touches_this_controllers_instances() {
    let cloud = FakeCloud::new();
    let ours = cloud.provider(CONTROLLER);
    let other_controller = Uuid::from_u128(99);
    let theirs = cloud.provider(other_controller);
    ours.create(&request("ours", &pool(1))).await.unwrap();
    let their_pool = Pool::new(PoolKey::for_scale_set(
        other_controller,
        scaleset_domain::GithubScaleSetId(1),
    ));
    theirs
        .create(&request("theirs", &their_pool))
        .await
        .unwrap();

    ours.remove_all().await.unwrap();
    let left = cloud.instances();
    assert_eq!(left.len(), 1);
    assert_eq!(left[0].instance.name, "theirs");
    assert_eq!(left[0].controller_id, other_controller);
}

#[tokio::test]
async fn start_and_stop_change_status_and_need_an_instance() {
    let provider = FakeProvider::new(CONTROLLER);
    let created = create_runner_a(&provider).await.unwrap();
    provider.stop(&pool(1), &created.id()).await.unwrap();
    assert_eq!(
        provider.get(&pool(1), &created.id()).await.unwrap().status,
        InstanceStatus::Stopped
    );
    provider.start(&pool(1), &created.id()).await.unwrap();
    assert_eq!(
        provider.get(&pool(1), &created.id()).await.unwrap().status,
        InstanceStatus::Running
    );
    // As with an external provider, only `get` reports "not found": a stop
    // of a missing instance fails with its reason.
    let err = provider.stop(&pool(1), &id("nope")).await.unwrap_err();
    assert!(!err.is_not_found(), "{err:?}");
    assert!(
        matches!(
            &err,
            Error::Failed {
                command: Command::StopInstance,
                exit_code: Some(30),
                stderr_tail,
                ..
            } if stderr_tail.contains("nope")
        ),
        "{err:?}"
    );
    assert!(
        provider
            .version()
            .await
            .unwrap()
            .starts_with("scaleset-fake-")
    );
}

/// Issue 37: an instance GARM left running (planted with its controller id and pool id) is
/// listed under that pool only with GARM's controller id, never under ours or another pool.
#[tokio::test]
async fn a_planted_garm_instance_is_listed_by_its_pool_and_controller() {
    let garm = Uuid::from_u128(0x89a4_130b_9de1_47c5_8ca8_e264_0daa_0e13);
    let provider = FakeProvider::new(CONTROLLER);
    let key = PoolKey::parse("gpu-big-df2a9b56").expect("key");
    let provider_id = provider
        .cloud()
        .plant(garm, key.clone(), "gpu-g4wrcxxlxiik");
    assert_eq!(provider.cloud().create_calls(), 0);
    let listed = provider
        .list(&Pool::new(key.clone()).of_controller(garm))
        .await
        .unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(
        (listed[0].provider_id.as_str(), listed[0].name.as_str()),
        (provider_id.as_str(), "gpu-g4wrcxxlxiik")
    );
    let other = Uuid::from_u128(7);
    assert!(
        provider
            .list(&Pool::new(key).of_controller(other))
            .await
            .unwrap()
            .is_empty()
    );
    assert!(provider.list(&pool(1)).await.unwrap().is_empty());
}

/// Issue 34: a decommission finds this controller's instances whatever their pool.
#[tokio::test]
async fn pools_lists_only_this_controllers_pools() {
    let cloud = FakeCloud::new();
    let ours = cloud.provider(CONTROLLER);
    let other_controller = Uuid::from_u128(99);
    ours.create(&request("a", &pool(2))).await.unwrap();
    ours.create(&request("b", &pool(1))).await.unwrap();
    ours.create(&request("c", &pool(2))).await.unwrap();
    let their_pool = Pool::new(PoolKey::for_scale_set(
        other_controller,
        scaleset_domain::GithubScaleSetId(3),
    ));
    cloud
        .provider(other_controller)
        .create(&request("theirs", &their_pool))
        .await
        .unwrap();
    assert_eq!(
        ours.pools().await.unwrap(),
        Some(vec![pool(1).key, pool(2).key])
    );
}

/// Issue 34: wrappers forward `pools` (the trait's default `None` would hide this controller's
/// instances from a decommission; a shared `Arc` once did).
#[tokio::test]
async fn pools_are_forwarded_through_a_shared_provider_and_its_limits() {
    let cloud = FakeCloud::new();
    let ours = cloud.provider(CONTROLLER);
    ours.create(&request("a", &pool(2))).await.unwrap();
    let shared: std::sync::Arc<dyn Provider> = std::sync::Arc::new(ours);
    assert_eq!(shared.pools().await.unwrap(), Some(vec![pool(2).key]));
    let limited = scaleset_provider::Limited::new(shared, scaleset_provider::CallLimits::default());
    assert_eq!(limited.pools().await.unwrap(), Some(vec![pool(2).key]));
}
