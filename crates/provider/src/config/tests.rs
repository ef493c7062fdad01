//! Unit tests of provider configuration validation.

use super::*;

fn external(name: &str) -> RawProviderConfig {
    RawProviderConfig {
        name: Some(name.into()),
        kind: Some("external".into()),
        executable: Some("/opt/garm/providers.d/garm-provider-lxd".into()),
        config_file: Some("/etc/scaleset/lxd.toml".into()),
        ..RawProviderConfig::default()
    }
}

#[test]
fn defaults_follow_garm() {
    let config = ProviderConfig::try_from(external("lxd")).unwrap();
    let ProviderKind::External(ext) = config.kind else {
        panic!("expected external");
    };
    assert_eq!(ext.interface_version, InterfaceVersion::V010);
    assert_eq!(ext.timeout, ExternalConfig::DEFAULT_TIMEOUT);
    assert_eq!(ext.concurrency.get(), 4);
}

#[test]
fn every_problem_is_reported_at_once() {
    let raw = RawProviderConfig {
        name: Some("bad name".into()),
        kind: Some("external".into()),
        executable: Some("relative/garm-provider-lxd".into()),
        config_file: None,
        interface_version: Some("v0.2".into()),
        environment: vec!["GARM_COMMAND".into()],
        timeout: Some("soon".into()),
        concurrency: Some(0),
    };
    let err = ProviderConfig::try_from(raw).unwrap_err();
    let fields: Vec<&str> = err.problems.iter().map(|p| p.field).collect();
    assert_eq!(
        fields,
        [
            "name",
            "executable",
            "config_file",
            "interface_version",
            "environment",
            "timeout",
            "concurrency"
        ]
    );
    assert!(err.to_string().contains("must be an absolute path"));
}

#[test]
fn interface_versions_are_normalized() {
    for (text, version) in [
        ("v0.1.1", InterfaceVersion::V011),
        ("0.1.1", InterfaceVersion::V011),
        ("v0.1.0", InterfaceVersion::V010),
    ] {
        let mut raw = external("p");
        raw.interface_version = Some(text.into());
        let ProviderKind::External(ext) = ProviderConfig::try_from(raw).unwrap().kind else {
            panic!("expected external");
        };
        assert_eq!(ext.interface_version, version);
    }
}

#[test]
fn fake_refuses_external_fields_and_kind_is_required() {
    let raw = RawProviderConfig {
        name: Some("fake".into()),
        kind: Some("fake".into()),
        timeout: Some("1s".into()),
        ..RawProviderConfig::default()
    };
    let err = ProviderConfig::try_from(raw).unwrap_err();
    assert_eq!(err.problems[0].field, "timeout");

    let ok = RawProviderConfig {
        name: Some("fake".into()),
        kind: Some("fake".into()),
        ..RawProviderConfig::default()
    };
    assert_eq!(
        ProviderConfig::try_from(ok).unwrap().kind,
        ProviderKind::Fake
    );

    let err = ProviderConfig::try_from(RawProviderConfig {
        name: Some("x".into()),
        ..RawProviderConfig::default()
    })
    .unwrap_err();
    assert_eq!(err.problems[0].field, "kind");
}

#[test]
fn duplicate_names_are_refused() {
    let err = ProviderConfig::from_raw_list(vec![external("lxd"), external("lxd")]).unwrap_err();
    assert_eq!(err.problems.len(), 1);
    assert_eq!(err.problems[0].field, "name");
}

#[test]
fn zero_timeout_and_negative_concurrency_are_refused() {
    let mut raw = external("p");
    raw.timeout = Some("0s".into());
    raw.concurrency = Some(-1);
    let err = ProviderConfig::try_from(raw).unwrap_err();
    assert_eq!(err.problems.len(), 2);
}
