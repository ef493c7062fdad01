//! Unit tests of the spec rules and the endpoint's API base URL derivation.

use super::*;
use crate::Endpoint;

fn raw(name: &str) -> RawScaleSetSpec {
    RawScaleSetSpec {
        name: Some(name.to_owned()),
        provider: Some("fake".to_owned()),
        ..RawScaleSetSpec::default()
    }
}

fn fields(result: Result<ScaleSetSpec, Vec<SpecProblem>>) -> Vec<String> {
    match result {
        Ok(spec) => panic!("expected problems, parsed {spec:?}"),
        Err(problems) => problems.into_iter().map(|p| p.field).collect(),
    }
}

#[test]
fn defaults_are_filled_in_once() {
    let spec = ScaleSetSpec::parse(raw("linux")).unwrap();
    assert_eq!(spec.runner_group.name, DEFAULT_RUNNER_GROUP);
    assert_eq!(spec.max_runners, DEFAULT_MAX_RUNNERS);
    assert_eq!(spec.min_idle, 0);
    assert_eq!(spec.bootstrap_timeout, DEFAULT_BOOTSTRAP_TIMEOUT);
    assert_eq!(spec.extra_specs, serde_json::json!({}));
    assert_eq!(spec.adoption_policy, AdoptionPolicy::Owned);
    assert!(spec.enabled && !spec.repair && !spec.disable_update);
    assert_eq!(spec.runner_prefix(), "linux");
    let prefixed = ScaleSetSpec::parse(RawScaleSetSpec {
        runner_prefix: Some("ci".into()),
        ..raw("linux")
    })
    .unwrap();
    assert_eq!(prefixed.runner_prefix(), "ci");
}

#[test]
fn null_extra_specs_are_none_and_other_values_are_refused() {
    let spec = ScaleSetSpec::parse(RawScaleSetSpec {
        extra_specs: Some(serde_json::Value::Null),
        ..raw("linux")
    })
    .unwrap();
    assert_eq!(spec.extra_specs, serde_json::json!({}));
    assert_eq!(
        fields(ScaleSetSpec::parse(RawScaleSetSpec {
            extra_specs: Some(serde_json::json!([1])),
            ..raw("linux")
        })),
        ["extra_specs"]
    );
}

#[test]
fn names_are_one_safe_path_component() {
    for bad in [
        "../escape",
        "a/b",
        ".",
        "..",
        "-x",
        "a b",
        "日本",
        "é",
        "",
        &"a".repeat(NAME_MAX + 1),
    ] {
        assert_eq!(fields(ScaleSetSpec::parse(raw(bad))), ["name"], "{bad:?}");
    }
    for good in ["linux-x64_1.2", "a", &"a".repeat(NAME_MAX)] {
        assert!(ScaleSetSpec::parse(raw(good)).is_ok(), "{good:?}");
    }
}

#[test]
fn owner_label_prefixed_names_are_refused_in_any_case() {
    assert_eq!(
        fields(ScaleSetSpec::parse(raw("ScaleSet-Owner-abc"))),
        ["name"]
    );
    assert_eq!(
        fields(ScaleSetSpec::parse(raw("scaleset-owner-abc"))),
        ["name"]
    );
    assert!(ScaleSetSpec::parse(raw("scaleset-linux")).is_ok());
}

#[test]
fn a_missing_name_or_provider_is_one_problem_each() {
    let problems = ScaleSetSpec::parse(RawScaleSetSpec::default()).unwrap_err();
    assert_eq!(problems.len(), 2, "{problems:?}");
    assert!(problems.iter().all(|p| p.message.starts_with("missing")));
}

#[test]
fn counts_out_of_range_read_the_same_whatever_the_integer() {
    let message = |n: i64| {
        ScaleSetSpec::parse(RawScaleSetSpec {
            max_runners: Some(n),
            ..raw("linux")
        })
        .unwrap_err()[0]
            .message
            .clone()
    };
    assert_eq!(message(0), "0 is outside 1–10000");
    assert_eq!(message(-1), "-1 is outside 1–10000");
    assert_eq!(message(10_001), "10001 is outside 1–10000");
    assert_eq!(
        fields(ScaleSetSpec::parse(RawScaleSetSpec {
            min_idle: Some(-1),
            ..raw("linux")
        })),
        ["min_idle"]
    );
    assert!(
        ScaleSetSpec::parse(RawScaleSetSpec {
            max_runners: Some(10_000),
            min_idle: Some(10_000),
            ..raw("linux")
        })
        .is_ok()
    );
}

#[test]
fn bootstrap_timeouts_are_whole_seconds_in_range() {
    for bad in [
        Duration::ZERO,
        Duration::from_millis(1500),
        Duration::from_secs(86_401),
    ] {
        assert_eq!(
            fields(ScaleSetSpec::parse(RawScaleSetSpec {
                bootstrap_timeout: Some(bad),
                ..raw("linux")
            })),
            ["bootstrap_timeout"],
            "{bad:?}"
        );
    }
}

#[test]
fn labels_are_checked_each_and_against_each_other() {
    let problems = ScaleSetSpec::parse(RawScaleSetSpec {
        labels: vec![
            "gpu".into(),
            " x".into(),
            "GPU".into(),
            "a\nb".into(),
            "scaleset-owner-1".into(),
        ],
        ..raw("linux")
    })
    .unwrap_err();
    let got: Vec<&str> = problems.iter().map(|p| p.field.as_str()).collect();
    assert_eq!(got, ["labels[1]", "labels[2]", "labels[3]", "labels[4]"]);
    let too_many = ScaleSetSpec::parse(RawScaleSetSpec {
        labels: (0..=LABELS_MAX).map(|i| format!("l{i}")).collect(),
        ..raw("linux")
    });
    assert_eq!(fields(too_many), ["labels"]);
}

#[test]
fn a_stored_spec_parses_back_to_itself() {
    let spec = ScaleSetSpec::parse(RawScaleSetSpec {
        labels: vec!["gpu".into()],
        max_runners: Some(3),
        runner_prefix: Some("ci".into()),
        ..raw("linux")
    })
    .unwrap();
    assert_eq!(
        ScaleSetSpec::parse(RawScaleSetSpec::from(&spec)).unwrap(),
        spec
    );
}

#[test]
fn an_unknown_provider_names_the_configured_ones() {
    let spec = ScaleSetSpec::parse(raw("linux")).unwrap();
    assert!(spec.unknown_provider(["fake", "lxd"]).is_none());
    let problem = spec.unknown_provider(["lxd"]).unwrap();
    assert_eq!(problem.field, "provider");
    assert!(problem.message.contains("configured: lxd"), "{problem}");
    let none = spec.unknown_provider([]).unwrap();
    assert!(none.message.contains("none is configured"), "{none}");
}

#[test]
fn the_shared_bad_specs_are_refused() {
    // bad_specs() asserts each case's fields itself; here its count is pinned.
    assert_eq!(crate::test_util::bad_specs().len(), 12);
}

fn api(base: &str) -> String {
    Endpoint::parse(base, None, None).unwrap().api_base_url
}

#[test]
fn the_api_base_url_is_derived_for_github_com_ghe_com_and_ghes() {
    assert_eq!(api("https://github.com"), "https://api.github.com");
    assert_eq!(api("https://github.com/"), "https://api.github.com");
    assert_eq!(api("https://www.github.com"), "https://api.github.com");
    assert_eq!(api("https://GitHub.com"), "https://api.github.com");
    assert_eq!(
        api("http://github.localhost"),
        "http://api.github.localhost"
    );
    assert_eq!(api("https://acme.ghe.com"), "https://api.acme.ghe.com");
    assert_eq!(
        api("https://ghes.example.com/"),
        "https://ghes.example.com/api/v3"
    );
    assert_eq!(api("http://127.0.0.1:8080"), "http://127.0.0.1:8080/api/v3");
    assert_eq!(
        Endpoint::parse("https://github.com", None, None).unwrap(),
        Endpoint::github_com()
    );
}

#[test]
fn a_given_api_base_url_wins_and_bad_urls_are_refused() {
    let e = Endpoint::parse(
        "https://acme.ghe.com",
        Some("https://proxy.example/api/"),
        None,
    )
    .unwrap();
    assert_eq!(e.api_base_url, "https://proxy.example/api");
    let problems = Endpoint::parse("ftp://x", Some("nonsense"), None).unwrap_err();
    let got: Vec<&str> = problems.iter().map(|p| p.field.as_str()).collect();
    assert_eq!(got, ["base_url", "api_base_url"]);
    assert!(Endpoint::parse("https://u:p@x", None, None).is_err());
    assert!(Endpoint::parse("https://x?q=1", None, None).is_err());
}

#[test]
fn a_ghe_com_endpoint_stored_with_the_old_derivation_reads_as_the_derived_one() {
    let old = Endpoint::from_stored(
        "https://acme.ghe.com".into(),
        "https://acme.ghe.com/api/v3".into(),
        None,
        false,
    );
    assert_eq!(old.api_base_url, "https://api.acme.ghe.com");
    let ghes = Endpoint::from_stored(
        "https://ghes.example.com".into(),
        "https://ghes.example.com/api/v3".into(),
        None,
        false,
    );
    assert_eq!(ghes.api_base_url, "https://ghes.example.com/api/v3");
    let chosen = Endpoint::from_stored(
        "https://acme.ghe.com".into(),
        "https://proxy.example/api".into(),
        None,
        false,
    );
    assert_eq!(chosen.api_base_url, "https://proxy.example/api");
}

/// Issue 30 item 4: the defaults of the runner names and the bootstrap timeout are the
/// spec's, in one place: a parsed spec's runner prefix is its name until one is written, and
/// its bootstrap timeout is the default until one is written; only a row from before the
/// timeout was required (zero) takes the worker's fallback.
#[test]
fn runner_prefix_and_bootstrap_timeout_defaults_live_on_the_spec() {
    let parse = |prefix: Option<&str>, timeout: Option<Duration>| {
        ScaleSetSpec::parse(RawScaleSetSpec {
            name: Some("linux".into()),
            provider: Some("lxd".into()),
            runner_prefix: prefix.map(str::to_owned),
            bootstrap_timeout: timeout,
            ..RawScaleSetSpec::default()
        })
        .unwrap()
    };
    let fallback = Duration::from_secs(42);
    let defaulted = parse(None, None);
    assert_eq!(defaulted.runner_prefix(), "linux");
    assert_eq!(
        defaulted.bootstrap_timeout_or(fallback),
        DEFAULT_BOOTSTRAP_TIMEOUT
    );
    let written = parse(Some("ci"), Some(Duration::from_secs(90)));
    assert_eq!(written.runner_prefix(), "ci");
    assert_eq!(
        written.bootstrap_timeout_or(fallback),
        Duration::from_secs(90)
    );
    let old_row = ScaleSetSpec {
        bootstrap_timeout: Duration::ZERO,
        ..defaulted
    };
    assert_eq!(old_row.bootstrap_timeout_or(fallback), fallback);
}

#[test]
fn lifecycle_settings_are_whole_seconds_up_to_30_days_and_default_to_zero() {
    let spec = ScaleSetSpec::parse(raw("linux")).unwrap();
    assert_eq!(spec.scale_down_delay, Duration::ZERO);
    assert_eq!(spec.max_idle_lifetime, Duration::ZERO);
    assert_eq!(spec.max_lifetime, Duration::ZERO);
    let most = Duration::from_secs(LIFECYCLE_SECS_MAX);
    let good = ScaleSetSpec::parse(RawScaleSetSpec {
        scale_down_delay: Some(most),
        max_idle_lifetime: Some(Duration::ZERO),
        max_lifetime: Some(Duration::from_secs(60)),
        ..raw("linux")
    })
    .unwrap();
    assert_eq!(good.scale_down_delay, most);
    assert_eq!(good.max_lifetime, Duration::from_secs(60));
    // Round trip through the raw form an update parses again.
    assert_eq!(
        ScaleSetSpec::parse(RawScaleSetSpec::from(&good)).unwrap(),
        good
    );
    for bad in [Duration::from_millis(1500), most + Duration::from_secs(1)] {
        assert_eq!(
            fields(ScaleSetSpec::parse(RawScaleSetSpec {
                scale_down_delay: Some(bad),
                max_idle_lifetime: Some(bad),
                max_lifetime: Some(bad),
                ..raw("linux")
            })),
            ["scale_down_delay", "max_idle_lifetime", "max_lifetime"],
            "{bad:?}"
        );
    }
}

#[test]
fn os_type_and_arch_default_to_linux_amd64_and_take_garms_spellings_only() {
    let spec = ScaleSetSpec::parse(raw("linux")).unwrap();
    assert_eq!((spec.os_type, spec.os_arch), (OsType::Linux, OsArch::Amd64));
    let arm = ScaleSetSpec::parse(RawScaleSetSpec {
        os_type: Some("windows".into()),
        os_arch: Some("arm64".into()),
        ..raw("win")
    })
    .unwrap();
    assert_eq!((arm.os_type, arm.os_arch), (OsType::Windows, OsArch::Arm64));
    assert_eq!(
        ScaleSetSpec::parse(RawScaleSetSpec::from(&arm)).unwrap(),
        arm
    );
    assert_eq!(
        fields(ScaleSetSpec::parse(RawScaleSetSpec {
            os_type: Some("macos".into()),
            os_arch: Some("x64".into()),
            ..raw("mac")
        })),
        ["os_type", "os_arch"]
    );
}
