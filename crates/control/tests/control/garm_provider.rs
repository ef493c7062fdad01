//! Under a provider process that answers as GARM's real ones do (a shell script standing in
//! for garm-provider-aws: exit 1 for every error, "not found" included, and a delete of a gone
//! instance a success): the bootstrap it reads on stdin has the keys and value types of the one
//! GARM wrote in the capture (`fixtures/garm-create-instance-stdin.json`), every difference
//! listed in docs/providers.md; and a GetInstance that fails that way never blocks a set.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use scaleset_control::Checkpoint;
use scaleset_provider::{ExternalConfig, ExternalProvider};
use scaleset_sim::JobSpec;
use serde_json::Value;

use crate::helpers::{FreezeAt, Harness, TestDb, backend_tests, eventually, settings, sim_config};

backend_tests!(
    our_bootstrap_has_the_keys_and_value_types_of_garms_captured_create,
    a_get_instance_failing_with_exit_1_for_a_missing_instance_never_blocks_the_set,
    a_sets_proxy_ssh_keys_and_user_data_options_reach_its_bootstrap
);

/// The differences from GARM's captured bootstrap that stay, each as `path: what`; the same
/// list, with the reasons, is in docs/providers.md ("The bootstrap, compared with GARM's").
const ALLOWED: [&str; 1] = ["labels: GARM null, ours array"];

/// A runner install template as an operator writes one: a shell script with
/// garm-provider-common's Go-template values, which the provider renders.
const TEMPLATE: &str = "#!/bin/bash\nset -e\ncurl -fsSL -o /tmp/runner.tgz '{{ .DownloadURL }}'\n";

/// A provider as garm-provider-aws answers: instances kept as files under `DIR/instances`;
/// every CreateInstance's stdin kept as `DIR/create-<pid>.json`; GetInstance of a missing
/// instance exits 1 saying so on stderr (not 30); DeleteInstance of a missing one succeeds.
const AWS_LIKE: &str = r#"#!/bin/bash
set -u
DIR='@DIR@'
mkdir -p "$DIR/instances"
answer() {
  printf '{"provider_id":"%s","name":"%s","os_type":"linux","os_arch":"amd64","status":"running"}' "$1" "$1"
}
case "$GARM_COMMAND" in
  CreateInstance)
    cat > "$DIR/create-$$.json"
    name=$(grep -o '"name":"[^"]*"' "$DIR/create-$$.json" | head -n 1 | cut -d '"' -f 4)
    touch "$DIR/instances/$name"
    answer "$name"
    ;;
  GetInstance)
    if [ -e "$DIR/instances/$GARM_INSTANCE_ID" ]; then
      answer "$GARM_INSTANCE_ID"
    else
      echo "failed to get instance: instance $GARM_INSTANCE_ID not found" >&2
      exit 1
    fi
    ;;
  DeleteInstance)
    rm -f "$DIR/instances/$GARM_INSTANCE_ID"
    ;;
  ListInstances)
    printf '['
    sep=''
    for f in "$DIR"/instances/*; do
      [ -e "$f" ] || continue
      printf '%s' "$sep"
      answer "$(basename "$f")"
      sep=','
    done
    printf ']'
    ;;
  *)
    echo "unsupported command $GARM_COMMAND" >&2
    exit 1
    ;;
esac
"#;

/// The script above in `dir`, as the external provider `fake` (the harness's scale sets use
/// provider `fake`).
fn aws_like(dir: &Path, controller: uuid::Uuid) -> ExternalProvider {
    let path = dir.join("provider");
    std::fs::write(&path, AWS_LIKE.replace("@DIR@", &dir.display().to_string()))
        .expect("write the provider script");
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let mut config = ExternalConfig::new(&path, "/etc/scaleset/aws-provider.toml");
    config.timeout = Duration::from_secs(30);
    ExternalProvider::new(
        "fake",
        config,
        controller,
        &BTreeMap::<String, String>::new(),
    )
}

/// Every CreateInstance stdin the script kept, parsed.
fn creates(dir: &Path) -> Vec<Value> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut paths: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("create-"))
        })
        .collect();
    paths.sort();
    paths
        .iter()
        .filter_map(|p| serde_json::from_slice(&std::fs::read(p).ok()?).ok())
        .collect()
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// The differences of shape between GARM's bootstrap and ours, recursively: keys only one has,
/// and values of different JSON types (an array's elements compared by its first element's
/// shape, so each tool is compared with GARM's first).
fn differences(garm: &Value, ours: &Value, path: &str, out: &mut BTreeSet<String>) {
    let at = |key: &str| {
        if path.is_empty() {
            key.to_owned()
        } else {
            format!("{path}.{key}")
        }
    };
    match (garm, ours) {
        (Value::Object(g), Value::Object(o)) => {
            let keys: BTreeSet<&String> = g.keys().chain(o.keys()).collect();
            for key in keys {
                match (g.get(key), o.get(key)) {
                    (Some(gv), Some(ov)) => differences(gv, ov, &at(key), out),
                    (Some(_), None) => {
                        out.insert(format!("{}: only GARM's", at(key)));
                    }
                    (None, _) => {
                        out.insert(format!("{}: only ours", at(key)));
                    }
                }
            }
        }
        (Value::Array(g), Value::Array(o)) => {
            if let Some(first) = g.first() {
                for item in o {
                    differences(first, item, &format!("{path}[]"), out);
                }
            }
        }
        (g, o) if kind(g) != kind(o) => {
            out.insert(format!("{path}: GARM {}, ours {}", kind(g), kind(o)));
        }
        _ => {}
    }
}

/// The differences docs/providers.md lists: the `path` of each bullet between its markers.
fn documented() -> BTreeSet<String> {
    let doc = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/providers.md"),
    )
    .expect("docs/providers.md");
    let start = doc
        .find("<!-- bootstrap-differences -->")
        .expect("the start marker of the differences in docs/providers.md");
    let end = doc
        .find("<!-- /bootstrap-differences -->")
        .expect("the end marker");
    doc[start..end]
        .lines()
        .filter_map(|line| line.strip_prefix("- `"))
        .filter_map(|line| line.split_once('`'))
        .map(|(path, _)| path.to_owned())
        .collect()
}

/// A real self-signed CA certificate (PEM).
fn ca_certificate() -> String {
    let key = rcgen::KeyPair::generate().expect("key");
    let mut params =
        rcgen::CertificateParams::new(vec!["ghes.example".to_owned()]).expect("params");
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    params.self_signed(&key).expect("certificate").pem()
}

async fn our_bootstrap_has_the_keys_and_value_types_of_garms_captured_create(db: TestDb) {
    let captured: Value =
        serde_json::from_str(include_str!("fixtures/garm-create-instance-stdin.json"))
            .expect("the captured stdin");
    let garm = &captured["stdin"];
    let pem = ca_certificate();
    // The captured set's settings (linux-small: linux/amd64, its extra specs), so what
    // differs is how we send them, not what was asked for.
    let h = Harness::with_endpoint_ca_bundle(
        db,
        sim_config(),
        |spec| {
            let mut extra_specs = garm["extra_specs"].clone();
            if let Some(specs) = extra_specs.as_object_mut() {
                specs.remove("runner_install_template");
            }
            spec.change(|r| {
                r.extra_specs = Some(extra_specs);
                r.labels = vec!["x64-small".to_owned()];
                // GARM sends its set's template on every create; so does a set naming one.
                r.runner_setup.runner_install_template = Some("garm-stub".to_owned());
            })
            .unwrap();
        },
        pem.clone(),
    )
    .await;
    let dir = tempfile::tempdir().expect("tempdir");
    let mut settings = settings();
    settings.instance_api_url = Some(url::Url::parse("http://127.0.0.1:9/").expect("url"));
    let template = dir.path().join("garm-stub.sh");
    std::fs::write(&template, TEMPLATE).expect("write the template");
    settings
        .runner_install_templates
        .insert("garm-stub".to_owned(), template);
    let controller = h.start_with_provider(
        settings,
        None,
        Arc::new(aws_like(dir.path(), h.identity.id())),
    );
    let github_id = h.ready().await;
    h.sim()
        .enqueue_jobs(github_id, &JobSpec::count(1))
        .expect("enqueue");
    let ours = eventually("the provider is asked for a machine", || async {
        creates(dir.path()).into_iter().next()
    })
    .await;
    controller.stop().await;

    let mut found = BTreeSet::new();
    differences(garm, &ours, "", &mut found);
    let allowed: BTreeSet<String> = ALLOWED.iter().map(|s| (*s).to_owned()).collect();
    assert_eq!(
        found, allowed,
        "every difference from GARM's bootstrap is gone or listed (ours: {ours:#})"
    );
    let allowed_paths: BTreeSet<String> = ALLOWED
        .iter()
        .filter_map(|s| s.split_once(':'))
        .map(|(path, _)| path.to_owned())
        .collect();
    assert_eq!(
        documented(),
        allowed_paths,
        "docs/providers.md lists exactly the differences this test allows"
    );
    // The values GARM's providers act on, beyond their shape.
    let bundle = base64::engine::general_purpose::STANDARD
        .decode(ours["ca-cert-bundle"].as_str().expect("a string"))
        .expect("base64");
    assert_eq!(
        bundle,
        pem.as_bytes(),
        "the endpoint's CA bundle, for the runner to trust"
    );
    for key in [
        "os_type",
        "arch",
        "jit_config_enabled",
        "user_data_options",
        "proxy_config",
    ] {
        assert_eq!(ours[key], garm[key], "{key}");
    }
    assert_eq!(ours["ssh-keys"], Value::Null, "none given: null, as GARM");
    let sent = base64::engine::general_purpose::STANDARD
        .decode(
            ours["extra_specs"]["runner_install_template"]
                .as_str()
                .expect("a string"),
        )
        .expect("base64");
    assert_eq!(
        sent,
        TEMPLATE.as_bytes(),
        "the named template's file, as it is"
    );
    assert_eq!(ours["extra_specs"]["disk_gb"], 50);
}

async fn a_get_instance_failing_with_exit_1_for_a_missing_instance_never_blocks_the_set(
    db: TestDb,
) {
    let h = Harness::new(db, sim_config(), |_| {}).await;
    let dir = tempfile::tempdir().expect("tempdir");
    // The first controller stops for good once the runner's row is `creating` and before
    // its provider create: the row has no instance, and recovery asks GetInstance by name.
    let freeze = FreezeAt::new(Checkpoint::JitConfigGenerated);
    let first = h.start_with_provider(
        settings(),
        Some(freeze.clone()),
        Arc::new(aws_like(dir.path(), h.identity.id())),
    );
    let github_id = h.ready().await;
    h.sim()
        .enqueue_jobs(github_id, &JobSpec::count(1))
        .expect("enqueue");
    eventually("the first controller reaches the crash point", || async {
        freeze.was_reached().then_some(())
    })
    .await;
    first.crash().await;
    let stranded: Vec<String> = h.instances().await.iter().map(|i| i.name.clone()).collect();
    assert_eq!(stranded.len(), 1, "one row left creating: {stranded:?}");
    assert!(creates(dir.path()).is_empty(), "no create was made");

    let second = h.start_with_provider(
        settings(),
        None,
        Arc::new(aws_like(dir.path(), h.identity.id())),
    );
    eventually(
        "the stranded row is resolved and the job gets a new machine",
        || async {
            let rows = h.instances().await;
            let created = creates(dir.path());
            let gone = rows.iter().all(|r| r.name != stranded[0]);
            (gone && !created.is_empty()).then_some(())
        },
    )
    .await;
    let stored = h.stored().await;
    assert_ne!(
        stored.state,
        scaleset_store::ScaleSetState::Error,
        "the set serves: {:?}",
        stored.state_reason
    );
    second.stop().await;
}

/// The scale set's proxy (GARM #822: the runners', not the worker's), SSH keys and user-data
/// options reach its bootstrap in GARM's fields.
async fn a_sets_proxy_ssh_keys_and_user_data_options_reach_its_bootstrap(db: TestDb) {
    let setup = scaleset_store::RunnerSetup {
        http_proxy: Some("http://proxy.internal:3128".to_owned()),
        https_proxy: Some("http://proxy.internal:3129".to_owned()),
        no_proxy: Some("10.0.0.0/8,.internal".to_owned()),
        ssh_keys: vec!["ssh-ed25519 AAAAC3Nza ops@example".to_owned()],
        extra_packages: vec!["jq".to_owned(), "git".to_owned()],
        disable_updates_on_boot: true,
        enable_boot_debug: true,
        runner_install_template: None,
    };
    let given = setup.clone();
    let h = Harness::new(db, sim_config(), move |spec| {
        spec.change(|r| r.runner_setup = given).unwrap();
    })
    .await;
    let (controller, github_id) = h.start_ready().await;
    h.sim()
        .enqueue_jobs(github_id, &JobSpec::count(1))
        .expect("enqueue");
    let bootstrap = eventually("a runner is created", || async {
        let created = h.created.lock().unwrap();
        created.first().map(|r| r.bootstrap.clone())
    })
    .await;
    controller.stop().await;
    let json = serde_json::to_value(&bootstrap).expect("json");
    assert_eq!(
        json["proxy_config"],
        serde_json::json!({
            "http_proxy": "http://proxy.internal:3128",
            "https_proxy": "http://proxy.internal:3129",
            "no_proxy": "10.0.0.0/8,.internal",
        })
    );
    assert_eq!(json["ssh-keys"], serde_json::json!(setup.ssh_keys));
    assert_eq!(
        json["user_data_options"],
        serde_json::json!({
            "disable_updates_on_boot": true,
            "extra_packages": ["jq", "git"],
            "enable_boot_debug": true,
        })
    );
}
