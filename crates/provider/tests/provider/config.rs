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

/// The ```toml blocks of a Markdown document.
fn toml_blocks(markdown: &str) -> Vec<String> {
    let mut blocks = Vec::new();
    let mut current: Option<String> = None;
    for line in markdown.lines() {
        match (&mut current, line.trim_start()) {
            (None, l) if l.starts_with("```toml") => current = Some(String::new()),
            (Some(_), l) if l.starts_with("```") => blocks.extend(current.take()),
            (Some(block), _) => {
                block.push_str(line);
                block.push('\n');
            }
            (None, _) => {}
        }
    }
    blocks
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
fn the_documented_examples_parse() {
    let doc = include_str!("../../../../docs/providers.md");
    let blocks = toml_blocks(doc);
    assert!(
        !blocks.is_empty(),
        "docs/providers.md has no ```toml example"
    );
    let mut names = Vec::new();
    for block in blocks {
        let configs = parse(&block).unwrap_or_else(|err| panic!("{err:#}\n{block}"));
        names.extend(configs.into_iter().map(|c| c.name));
    }
    assert!(names.contains(&"lxd".to_owned()), "{names:?}");
    assert!(names.contains(&"openstack".to_owned()), "{names:?}");
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
    let pool = Pool::new(PoolKey::for_scale_set(CONTROLLER, 1));
    fake.create(&request("runner-a", &pool))
        .await
        .expect("create");
    assert_eq!(
        cloud.instances().len(),
        1,
        "the fake lives in the given cloud"
    );
}
