//! Every provider refuses an instance name that is not one safe path component, before it
//! writes a file or runs an executable (issue 29 item 9: a runner prefix `../../../pfx` once
//! made the directory provider write runner files outside its state directory).

use scaleset_provider::{DirectoryProvider, FakeProvider, InstanceId, InterfaceVersion, Provider};

use crate::helpers::{CONTROLLER, Recorder, instance_json, pool, request};

const UNSAFE: [&str; 5] = ["../x", "a/b", "..", ".hidden", "a b"];

#[tokio::test]
async fn the_directory_provider_refuses_unsafe_names() {
    let root = tempfile::tempdir().expect("tempdir");
    let state = root.path().join("state");
    let provider = DirectoryProvider::new(state.clone(), CONTROLLER);
    for name in UNSAFE {
        let err = provider.create(&request(name, &pool())).await.unwrap_err();
        assert!(err.is_invalid_name(), "{name:?}: {err}");
        let id = InstanceId::new(name).expect("an id");
        assert!(
            provider
                .get(&pool(), &id)
                .await
                .unwrap_err()
                .is_invalid_name()
        );
        assert!(
            provider
                .delete(&pool(), &id)
                .await
                .unwrap_err()
                .is_invalid_name()
        );
    }
    let outside: Vec<_> = std::fs::read_dir(root.path())
        .expect("the root")
        .filter_map(Result::ok)
        .map(|e| e.file_name())
        .filter(|n| n != "state")
        .collect();
    assert!(
        outside.is_empty(),
        "written outside the state directory: {outside:?}"
    );
    provider
        .create(&request("linux-abcdefgh", &pool()))
        .await
        .expect("a safe name is created");
}

#[tokio::test]
async fn the_external_provider_refuses_unsafe_names_without_running() {
    let recorder = Recorder::new();
    let body = format!(
        "echo '{}'",
        instance_json("p-1", "linux-abcdefgh", "running")
    );
    let provider = recorder.provider(&body, InterfaceVersion::V011);
    for name in UNSAFE {
        let err = provider.create(&request(name, &pool())).await.unwrap_err();
        assert!(err.is_invalid_name(), "{name:?}: {err}");
    }
    assert!(recorder.calls().is_empty(), "the executable ran");
    provider
        .create(&request("linux-abcdefgh", &pool()))
        .await
        .expect("a safe name is created");
}

#[tokio::test]
async fn the_fake_provider_refuses_unsafe_names() {
    let provider = FakeProvider::new(CONTROLLER);
    for name in UNSAFE {
        let err = provider.create(&request(name, &pool())).await.unwrap_err();
        assert!(err.is_invalid_name(), "{name:?}: {err}");
    }
    assert!(provider.list(&pool()).await.expect("list").is_empty());
}
