//! A hostile external provider, run by the real worker: it answers every create with the
//! provider id of another controller's machine. The answers are refused (an event, the scale
//! set's provider error), and no `DeleteInstance` is ever run with the foreign id.

use scaleset_store::test_util::test_key;
use scaleset_store::{
    DieselStore, EventStore as _, InstanceStore as _, Keyring, ScaleSetStore as _, StoreOptions,
};

use crate::helpers::{self, Worker, eventually, worker_env};

/// The provider: a shell script using only shell built-ins (the worker runs it with a cleared
/// environment, no `PATH`). It logs each call to `calls` as `<command> <instance>`.
fn script(dir: &std::path::Path) -> String {
    let calls = dir.join("calls");
    format!(
        r#"#!/bin/sh
case "$GARM_COMMAND" in
CreateInstance)
  IFS= read -r body
  name=${{body#*\"name\":\"}}
  name=${{name%%\"*}}
  echo "CreateInstance $name" >> "{calls}"
  echo "{{\"provider_id\":\"victim-foreign-1\",\"name\":\"$name\",\"status\":\"running\"}}"
  ;;
DeleteInstance)
  echo "DeleteInstance $GARM_INSTANCE_ID" >> "{calls}"
  ;;
ListInstances)
  echo "[]"
  ;;
GetInstance)
  exit 30
  ;;
esac
exit 0
"#,
        calls = calls.display()
    )
}

fn calls(dir: &std::path::Path) -> Vec<String> {
    std::fs::read_to_string(dir.join("calls"))
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// Regression: an external provider answered two runners' creates with another controller's
/// provider id; the worker recorded it on both rows and deleted the foreign machine when it
/// removed a runner.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_provider_answering_a_foreign_provider_id_never_gets_it_deleted() {
    let (sim, site) = helpers::linux_site().await;
    let provider = site.dir.path().join("hostile-provider");
    std::fs::write(&provider, script(site.dir.path())).expect("script");
    std::fs::set_permissions(
        &provider,
        <std::fs::Permissions as std::os::unix::fs::PermissionsExt>::from_mode(0o700),
    )
    .expect("chmod");
    let provider_config = site.dir.path().join("hostile.toml");
    std::fs::write(&provider_config, "").expect("provider config");
    let text = std::fs::read_to_string(site.config()).expect("config");
    let text = text
        .replace(
            "[[provider]]\nname = \"fake\"\nkind = \"fake\"\n",
            &format!(
                "[[provider]]\nname = \"fake\"\nkind = \"fake\"\n\n[[provider]]\nname = \
                 \"hostile\"\nkind = \"external\"\nexecutable = \"{}\"\nconfig_file = \"{}\"\n",
                provider.display(),
                provider_config.display()
            ),
        )
        .replace(
            "provider = \"fake\"\n",
            "provider = \"hostile\"\nbootstrap_timeout = \"2s\"\n",
        )
        .replace(
            "[worker]\n",
            "[worker]\ninstance_api_url = \"http://127.0.0.1:9/\"\n",
        );
    std::fs::write(site.config(), text).expect("config");

    let worker = Worker::spawn(&site.config(), &worker_env());
    let id = sim.listening("the scale set listens", "linux").await;
    sim.enqueue(id, 2);

    let store = DieselStore::open(StoreOptions::new(
        scaleset_store::DatabaseUrl::parse(&format!("sqlite://{}", site.db().display()))
            .expect("the site's database URL"),
        Keyring::new(test_key("k1", 1)),
    ))
    .await
    .expect("open the store");
    let set = eventually("the scale set is stored", || async {
        store
            .list_scale_sets(None)
            .await
            .ok()?
            .into_iter()
            .find(|s| s.spec.name() == "linux")
    })
    .await;
    eventually(
        "answers refused, the provider shown failing, runners removed by name",
        || async {
            let events = store.list_events(set.id, 200).await.ok()?;
            let refused = events
                .iter()
                .any(|e| e.kind == scaleset_store::EventKind::ProviderAnswerRefused);
            let failing = store
                .get_scale_set(set.id)
                .await
                .ok()?
                .provider_error
                .is_some();
            let deletes = calls(site.dir.path())
                .iter()
                .filter(|c| c.starts_with("DeleteInstance "))
                .count();
            (refused && failing && deletes >= 2).then_some(())
        },
    )
    .await;
    let calls = calls(site.dir.path());
    assert!(
        calls
            .iter()
            .filter(|c| c.starts_with("CreateInstance "))
            .count()
            >= 2,
        "{calls:?}"
    );
    assert!(
        !calls.iter().any(|c| c == "DeleteInstance victim-foreign-1"),
        "no delete with the foreign id: {calls:?}"
    );
    assert!(
        store
            .instances_claiming("victim-foreign-1")
            .await
            .expect("rows")
            .is_empty(),
        "no row records the foreign id"
    );
    drop(worker);
}
