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
    // v0.1.0: what the current releases of every GARM provider implement.
    assert_eq!(ext.interface_version, InterfaceVersion::V010);
    // Proxy variables pass as GARM passes them.
    assert!(ext.forward_proxy_variables);
    // GARM sets no per-call limit; ours are generous, and a create is bounded
    // by the scale set's bootstrap timeout (GARM's default: 20 minutes).
    assert_eq!(ext.timeout, Duration::from_secs(20 * 60));
    assert_eq!(ext.create_timeout, None);
    assert_eq!(ext.create_timeout_for(None), Duration::from_secs(20 * 60));
    assert_eq!(
        ext.create_timeout_for(Some(Duration::from_secs(7 * 60))),
        Duration::from_secs(7 * 60)
    );
    // Issue 35: a burst is bounded by the cloud, not by us (4 made 100 jobs wait 25 rounds
    // of a 30 s create); no rate limit unless asked for, as GARM.
    assert_eq!(ext.concurrency.get(), 1000);
    assert_eq!(ext.create_rate, None);
    assert_eq!(ext.limits(), CallLimits::default());
    // The programmatic defaults are the configuration defaults.
    assert_eq!(
        ExternalConfig::new(ext.executable.clone(), ext.config_file.clone()),
        ext
    );
}

#[test]
fn create_timeout_and_proxy_forwarding_are_configurable() {
    let mut raw = external("p");
    raw.create_timeout = Some("45m".into());
    raw.timeout = Some("1h".into());
    raw.forward_proxy_variables = Some(false);
    let ProviderKind::External(ext) = ProviderConfig::try_from(raw).unwrap().kind else {
        panic!("expected external");
    };
    assert_eq!(ext.create_timeout, Some(Duration::from_secs(45 * 60)));
    // A configured create_timeout wins over the scale set's bootstrap timeout.
    assert_eq!(
        ext.create_timeout_for(Some(Duration::from_secs(60))),
        Duration::from_secs(45 * 60)
    );
    assert_eq!(ext.timeout, Duration::from_secs(3600));
    assert!(!ext.forward_proxy_variables);
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
        forward_proxy_variables: None,
        timeout: Some("soon".into()),
        create_timeout: Some("0s".into()),
        concurrency: Some(0),
        create_rate: Some("fast".into()),
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
            "create_timeout",
            "concurrency",
            "create_rate"
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
        create_timeout: Some("1s".into()),
        forward_proxy_variables: Some(false),
        ..RawProviderConfig::default()
    };
    let err = ProviderConfig::try_from(raw).unwrap_err();
    let fields: Vec<&str> = err.problems.iter().map(|p| p.field).collect();
    assert_eq!(
        fields,
        ["forward_proxy_variables", "timeout", "create_timeout"]
    );

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

/// The provider settings take the one duration grammar of every door (`scaleset-duration`).
#[test]
fn timeouts_take_the_shared_duration_grammar() {
    let mut raw = external("p");
    raw.timeout = Some("1m30s".into());
    raw.create_timeout = Some("7d".into());
    let ProviderKind::External(ext) = ProviderConfig::try_from(raw).unwrap().kind else {
        panic!("expected external");
    };
    assert_eq!(ext.timeout, Duration::from_secs(90));
    assert_eq!(ext.create_timeout, Some(Duration::from_secs(7 * 86_400)));
    let mut raw = external("p");
    raw.timeout = Some("soon".into());
    assert!(ProviderConfig::try_from(raw).is_err());
}

/// Issue 35: the rate of creates is a per-provider setting, parsed into typed limits.
#[test]
fn create_rate_and_concurrency_are_parsed_into_the_limits() {
    for (text, interval) in [
        ("5/s", Duration::from_millis(200)),
        ("120/m", Duration::from_millis(500)),
        (" 2 / h ", Duration::from_secs(1800)),
    ] {
        let mut raw = external("p");
        raw.create_rate = Some(text.into());
        raw.concurrency = Some(50);
        let ProviderKind::External(ext) = ProviderConfig::try_from(raw).unwrap().kind else {
            panic!("expected external");
        };
        let limits = ext.limits();
        assert_eq!(limits.concurrency.get(), 50);
        assert_eq!(
            limits.create_rate.map(CreateRate::interval),
            Some(interval),
            "{text}"
        );
    }
}

/// Issue 35: an invalid rate or concurrency is refused naming the key, what is wrong and what
/// to write instead.
#[test]
fn invalid_create_rates_and_concurrency_are_refused_naming_the_key() {
    for (text, says) in [
        ("0/s", "not a positive whole number"),
        ("-3/s", "not a positive whole number"),
        ("1.5/s", "not a positive whole number"),
        ("10", "is not a rate"),
        ("10/d", "is not a unit"),
        ("", "is not a rate"),
    ] {
        let mut raw = external("lxd");
        raw.create_rate = Some(text.into());
        let err = ProviderConfig::try_from(raw).unwrap_err();
        assert_eq!(err.problems.len(), 1, "{text}: {err}");
        assert_eq!(err.problems[0].field, "create_rate");
        let message = err.to_string();
        assert!(message.contains("provider lxd: `create_rate`"), "{message}");
        assert!(message.contains(says), "{text}: {message}");
        assert!(message.contains("\"N/s\""), "the remedy: {message}");
    }
    for n in [0, -1, i64::MIN] {
        let mut raw = external("lxd");
        raw.concurrency = Some(n);
        let err = ProviderConfig::try_from(raw).unwrap_err();
        assert_eq!(err.problems[0].field, "concurrency");
        let message = err.to_string();
        assert!(message.contains("`concurrency`"), "{message}");
        assert!(message.contains("not a positive number"), "{message}");
    }
    // In-process providers take no limits.
    let raw = RawProviderConfig {
        name: Some("fake".into()),
        kind: Some("fake".into()),
        create_rate: Some("1/s".into()),
        ..RawProviderConfig::default()
    };
    let err = ProviderConfig::try_from(raw).unwrap_err();
    assert_eq!(err.problems[0].field, "create_rate");
}
