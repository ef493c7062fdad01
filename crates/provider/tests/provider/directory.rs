//! The directory provider (the demo's and the simulator worker's fake cloud): what it writes
//! holds secrets until the runner boots (the JIT config and the instance token), so only the
//! owner may read it (issue 29 item 17b).

use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;

use scaleset_provider::{DirectoryProvider, Pool, PoolKey, Provider as _};

use crate::helpers::{CONTROLLER, request};

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .permissions()
        .mode()
        & 0o777
}

#[tokio::test]
async fn instance_files_are_0600_in_0700_directories() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let root = tmp.path().join("instances");
    let provider = DirectoryProvider::new(root.clone(), CONTROLLER);
    let pool = Pool::new(PoolKey::for_scale_set(
        CONTROLLER,
        scaleset_domain::GithubScaleSetId(1),
    ));
    provider
        .create(&request("runner-a", &pool))
        .await
        .expect("create");
    let pool_dir = root.join(pool.key.as_str());
    let file = pool_dir.join("runner-a.json");
    let text = std::fs::read_to_string(&file).expect("instance file");
    assert!(text.contains("instanceToken"), "{text}");
    assert_eq!(mode(&file), 0o600, "{}", file.display());
    for dir in [&root, &pool_dir, &root.join(".staging")] {
        assert_eq!(mode(dir), 0o700, "{}", dir.display());
    }
}

/// Issue 34: the pool directories with this controller's prefix, and no other's.
#[tokio::test]
async fn pools_lists_only_this_controllers_pool_directories() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().to_path_buf();
    let provider = DirectoryProvider::new(root.clone(), CONTROLLER);
    assert_eq!(
        provider.pools().await.expect("no directory yet"),
        Some(vec![])
    );
    for id in [7, 3] {
        let pool = Pool::new(PoolKey::for_scale_set(
            CONTROLLER,
            scaleset_domain::GithubScaleSetId(id),
        ));
        provider
            .create(&request(&format!("r{id}"), &pool))
            .await
            .expect("create");
    }
    let other = uuid::Uuid::from_u128(99);
    std::fs::create_dir_all(root.join(format!("{other}_1"))).expect("a foreign pool");
    assert_eq!(
        provider.pools().await.expect("pools"),
        Some(vec![
            PoolKey::for_scale_set(CONTROLLER, scaleset_domain::GithubScaleSetId(3)),
            PoolKey::for_scale_set(CONTROLLER, scaleset_domain::GithubScaleSetId(7))
        ])
    );
    // Issue 36: a pool whose last instance was deleted is no pool of instances any more.
    let pool = Pool::new(PoolKey::for_scale_set(
        CONTROLLER,
        scaleset_domain::GithubScaleSetId(3),
    ));
    let id = scaleset_provider::InstanceId::new("r3").expect("id");
    provider.delete(&pool, &id).await.expect("delete");
    assert_eq!(
        provider.pools().await.expect("pools"),
        Some(vec![PoolKey::for_scale_set(
            CONTROLLER,
            scaleset_domain::GithubScaleSetId(7)
        )])
    );
}

/// The chaos soak's view of the cloud (issue 36): every created instance is in the ledger,
/// a duplicate create adds nothing, and the fault files refuse creates while they exist.
#[tokio::test]
async fn the_ledger_records_every_create_and_the_fault_file_refuses_them() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let root = tmp.path().join("instances");
    let provider = DirectoryProvider::new(root.clone(), CONTROLLER);
    let pool = Pool::new(PoolKey::for_scale_set(
        CONTROLLER,
        scaleset_domain::GithubScaleSetId(1),
    ));
    provider
        .create(&request("runner-a", &pool))
        .await
        .expect("create");
    assert!(
        provider.create(&request("runner-a", &pool)).await.is_err(),
        "a duplicate name is refused"
    );
    std::fs::write(root.join(scaleset_provider::SLOW_CREATES), "1").expect("slow file");
    provider
        .create(&request("runner-b", &pool))
        .await
        .expect("a slow create still creates");
    std::fs::write(root.join(scaleset_provider::FAIL_CREATES), "").expect("fault file");
    let refused = provider
        .create(&request("runner-c", &pool))
        .await
        .expect_err("creates fail while the fault file exists");
    assert!(
        refused
            .to_string()
            .contains(scaleset_provider::FAIL_CREATES),
        "the refusal names its cause: {refused}"
    );
    assert!(!root.join(pool.key.as_str()).join("runner-c.json").exists());
    std::fs::remove_file(root.join(scaleset_provider::FAIL_CREATES)).expect("clear the fault");
    provider
        .create(&request("runner-c", &pool))
        .await
        .expect("creates work again");
    let ledger = std::fs::read_to_string(root.join(scaleset_provider::LEDGER)).expect("ledger");
    let key = pool.key.as_str();
    assert_eq!(
        ledger,
        format!("{key} runner-a\n{key} runner-b\n{key} runner-c\n"),
        "one line per instance created, none for the refused ones"
    );
}
