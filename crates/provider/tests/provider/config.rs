//! `[[provider]]` TOML parsing, including the example documented in
//! `docs/providers.md`.

use std::time::Duration;

use scaleset_provider::{
    FakeCloud, InterfaceVersion, Pool, PoolKey, ProviderConfig, ProviderKind, RawProviderConfig,
};

use crate::helpers::{CONTROLLER, Recorder, operator_env, request};
use serde::Deserialize;

#[derive(Deserialize)]
struct File {
    #[serde(default)]
    provider: Vec<RawProviderConfig>,
}

fn parse(text: &str) -> anyhow::Result<Vec<ProviderConfig>> {
    let file: File = toml::from_str(text)?;
    Ok(ProviderConfig::from_raw_list(file.provider)?)
}

/// The ```toml blocks of a Markdown document whose info string is exactly
/// `toml` (scaleset configuration), and those marked ```` ```toml garm ````
/// (GARM's configuration, shown for comparison).
fn toml_blocks(markdown: &str) -> (Vec<String>, Vec<String>) {
    let mut ours = Vec::new();
    let mut garm = Vec::new();
    let mut current: Option<(bool, String)> = None;
    for line in markdown.lines() {
        let trimmed = line.trim_start();
        match &mut current {
            None if trimmed == "```toml" => current = Some((false, String::new())),
            None if trimmed == "```toml garm" => current = Some((true, String::new())),
            Some(_) if trimmed.starts_with("```") => {
                if let Some((is_garm, block)) = current.take() {
                    if is_garm {
                        garm.push(block);
                    } else {
                        ours.push(block);
                    }
                }
            }
            Some((_, block)) => {
                block.push_str(line);
                block.push('\n');
            }
            None => {}
        }
    }
    (ours, garm)
}

#[test]
fn a_full_example_parses_into_typed_settings() {
    let configs = parse(
        r#"
        [[provider]]
        name = "openstack"
        kind = "external"
        executable = "/opt/garm/providers.d/garm-provider-openstack"
        config_file = "/etc/scaleset/providers/openstack.toml"
        interface_version = "v0.1.1"
        environment = ["OS_*", "HTTPS_PROXY", "NO_PROXY"]
        timeout = "2m30s"
        concurrency = 8

        [[provider]]
        name = "fake"
        kind = "fake"
        "#,
    )
    .expect("valid");
    assert_eq!(configs.len(), 2);
    assert_eq!(configs[0].name, "openstack");
    let ProviderKind::External(ext) = &configs[0].kind else {
        panic!("expected external");
    };
    assert_eq!(ext.interface_version, InterfaceVersion::V011);
    assert_eq!(ext.timeout, Duration::from_secs(150));
    assert_eq!(ext.concurrency.get(), 8);
    assert!(ext.environment.allows("OS_CLOUD"));
    assert!(ext.environment.allows("NO_PROXY"));
    assert!(!ext.environment.allows("HOME"));
    assert_eq!(configs[1].kind, ProviderKind::Fake);
}

#[test]
fn unknown_fields_are_refused() {
    let err = parse(
        r#"
        [[provider]]
        name = "lxd"
        kind = "external"
        provider_executable = "/opt/garm-provider-lxd"
        "#,
    )
    .unwrap_err();
    assert!(err.to_string().contains("provider_executable"), "{err}");
}

#[test]
fn the_documented_examples_parse_and_use_interface_v010() {
    let doc = include_str!("../../../../docs/providers.md");
    let (blocks, _) = toml_blocks(doc);
    assert!(
        !blocks.is_empty(),
        "docs/providers.md has no ```toml example"
    );
    let mut names = Vec::new();
    for block in blocks {
        let configs = parse(&block).unwrap_or_else(|err| panic!("{err:#}\n{block}"));
        for config in configs {
            // The current releases of every GARM provider implement only
            // v0.1.0: an example with v0.1.1 would fail every call.
            if let ProviderKind::External(ext) = &config.kind {
                assert_eq!(
                    ext.interface_version,
                    InterfaceVersion::V010,
                    "{}\n{block}",
                    config.name
                );
            }
            names.push(config.name);
        }
    }
    assert!(names.contains(&"lxd".to_owned()), "{names:?}");
    assert!(names.contains(&"openstack".to_owned()), "{names:?}");
}

#[test]
fn the_moving_from_garm_example_maps_every_key() {
    let doc = include_str!("../../../../docs/providers.md");
    let (ours, garm) = toml_blocks(doc);
    assert_eq!(garm.len(), 1, "one GARM block in docs/providers.md");
    let garm: toml::Table = toml::from_str(&garm[0]).expect("the GARM block is TOML");
    let garm = garm["provider"].as_array().expect("[[provider]]")[0].clone();
    let external = &garm["external"];
    // The scaleset block that follows it, with the same name.
    let name = garm["name"].as_str().expect("name");
    let ours = ours
        .iter()
        .flat_map(|block| parse(block).expect("valid"))
        .filter(|c| c.name == name)
        .collect::<Vec<_>>();
    let [ours] = ours.as_slice() else {
        panic!("expected exactly one scaleset block named {name}, got {ours:?}");
    };
    let ProviderKind::External(ext) = &ours.kind else {
        panic!("expected external");
    };
    assert_eq!(garm["provider_type"].as_str(), Some("external"));
    assert_eq!(
        ext.executable.to_str(),
        external["provider_executable"].as_str()
    );
    assert_eq!(ext.config_file.to_str(), external["config_file"].as_str());
    assert_eq!(
        Some(ext.interface_version.as_str()),
        external["interface_version"].as_str()
    );
    let garm_entries: Vec<&str> = external["environment_variables"]
        .as_array()
        .expect("environment_variables")
        .iter()
        .filter_map(|v| v.as_str())
        .collect();
    assert_eq!(
        ext.environment,
        scaleset_provider::EnvAllowList::parse(&garm_entries).expect("same entries")
    );
    // GARM's rule, which the copied entries keep: each is a prefix.
    assert!(ext.environment.allows("OS_AUTH_URL"));
    assert!(ext.environment.allows("AWS_REGION_EXTRA"));
}

#[tokio::test]
async fn configurations_build_working_providers() {
    let rec = Recorder::new();
    let exe = rec.script("provider", "echo 'v9.9.9'");
    let configs = parse(&format!(
        r#"
        [[provider]]
        name = "script"
        kind = "external"
        executable = "{}"
        config_file = "/etc/scaleset/script.toml"
        interface_version = "v0.1.1"
        environment = ["OS_*"]

        [[provider]]
        name = "fake"
        kind = "fake"
        "#,
        exe.display()
    ))
    .expect("valid");
    let cloud = FakeCloud::new();
    let external = configs[0].build(CONTROLLER, &operator_env(), &cloud);
    assert_eq!(external.version().await.expect("version"), "v9.9.9");
    let call = rec.only_call();
    assert_eq!(call.env["GARM_INTERFACE_VERSION"], "v0.1.1");
    assert_eq!(
        call.env["GARM_PROVIDER_CONFIG_FILE"],
        "/etc/scaleset/script.toml"
    );
    assert_eq!(call.env["OS_PASSWORD"], "hunter2");

    let fake = configs[1].build(CONTROLLER, &operator_env(), &cloud);
    let pool = Pool::new(PoolKey::for_scale_set(
        CONTROLLER,
        scaleset_domain::GithubScaleSetId(1),
    ));
    fake.create(&request("runner-a", &pool))
        .await
        .expect("create");
    assert_eq!(
        cloud.instances().len(),
        1,
        "the fake lives in the given cloud"
    );
}

/// Issue 29 item 17d: every `GARM_POOL_ID=` in docs/providers.md is a pool key as scaleset
/// makes it (`<controller id>_<scale set id>`), so trying a provider by hand lists the same
/// instances scaleset's own calls do.
#[test]
fn the_documented_pool_ids_are_pool_keys() {
    let doc = include_str!("../../../../docs/providers.md");
    let values: Vec<&str> = doc
        .split("GARM_POOL_ID=")
        .skip(1)
        .map(|rest| rest.split_whitespace().next().unwrap_or_default())
        .collect();
    assert!(!values.is_empty(), "docs/providers.md sets no GARM_POOL_ID");
    for value in values {
        let (controller, scale_set) = value
            .rsplit_once('_')
            .unwrap_or_else(|| panic!("{value:?} has no '_'"));
        let controller: uuid::Uuid = controller
            .parse()
            .unwrap_or_else(|e| panic!("{value:?}: {e}"));
        let scale_set: i64 = scale_set
            .parse()
            .unwrap_or_else(|e| panic!("{value:?}: {e}"));
        assert_eq!(
            PoolKey::for_scale_set(controller, scaleset_domain::GithubScaleSetId(scale_set))
                .as_str(),
            value
        );
    }
}
