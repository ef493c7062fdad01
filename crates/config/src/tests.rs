use std::collections::BTreeMap;

use super::*;

mod app;
mod door_values;
mod doors;
mod endpoint;
mod takeover;

const KEY: &str = "AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE=";

fn env(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

fn base_env() -> BTreeMap<String, String> {
    env(&[("TEST_KEY", KEY), ("GH_TOKEN", "ghp_x")])
}

const GOOD: &str = r#"
controller_id = "3f2a9c1e-77b0-4d4e-9a55-0123456789ab"

[database]
url = "sqlite:///tmp/scaleset-config-test.db"

[encryption]
primary_key_id = "k1"

[[encryption.keys]]
id = "k1"
env = "TEST_KEY"

[worker]
name = "w1"
lease_ttl = "30s"

[[provider]]
name = "fake"
kind = "fake"

[fake]
allow = true

[[credentials]]
name = "gh"
token_env = "GH_TOKEN"

[[scale_set]]
name = "linux"
credentials = "gh"
organization = "acme"
provider = "fake"
max_runners = 4
"#;

fn problems(text: &str, env: &BTreeMap<String, String>) -> Vec<Problem> {
    match Config::parse("test.toml", text, env) {
        Ok(_) => panic!("expected the configuration to be refused"),
        Err(e) => e.problems,
    }
}

fn keys(problems: &[Problem]) -> Vec<&str> {
    problems.iter().map(|p| p.key.as_str()).collect()
}

#[test]
fn the_provider_back_off_start_bounds_and_takeover_recheck_are_configuration_keys() {
    let defaults = scaleset_settings::Settings::default();
    let config = Config::parse("test.toml", GOOD, &base_env()).unwrap();
    assert_eq!(
        config.settings.provider_backoff_base,
        defaults.provider_backoff_base
    );
    assert_eq!(
        config.settings.provider_backoff_max,
        defaults.provider_backoff_max
    );
    assert_eq!(
        config.settings.max_concurrent_starts,
        defaults.max_concurrent_starts
    );
    assert_eq!(
        config.settings.max_concurrent_recoveries,
        defaults.max_concurrent_recoveries
    );
    let tuned = GOOD.replace(
        "lease_ttl = \"30s\"",
        "lease_ttl = \"30s\"\nprovider_backoff_base = \"2s\"\nprovider_backoff_max = \"20s\"\n\
         max_concurrent_starts = 16\nmax_concurrent_recoveries = 2\n\
         takeover_session_recheck = \"3s\"\nbootstrap_backoff_base = \"1s\"\n\
         bootstrap_backoff_max = \"8s\"",
    );
    let config = Config::parse("test.toml", &tuned, &base_env()).unwrap();
    assert_eq!(
        config.settings.provider_backoff_base,
        Duration::from_secs(2)
    );
    assert_eq!(
        config.settings.provider_backoff_max,
        Duration::from_secs(20)
    );
    assert_eq!(config.settings.max_concurrent_starts, 16);
    assert_eq!(
        (
            config.settings.bootstrap_backoff_base,
            config.settings.bootstrap_backoff_max
        ),
        (Duration::from_secs(1), Duration::from_secs(8))
    );
    assert_eq!(config.settings.max_concurrent_recoveries, 2);
    assert_eq!(
        config.settings.takeover_session_recheck,
        Duration::from_secs(3)
    );
    // A base above the default max raises the default max with it.
    let long = GOOD.replace(
        "lease_ttl = \"30s\"",
        "lease_ttl = \"30s\"\nprovider_backoff_base = \"10m\"",
    );
    let config = Config::parse("test.toml", &long, &base_env()).unwrap();
    assert_eq!(
        config.settings.provider_backoff_max,
        Duration::from_secs(600)
    );
    let bad = GOOD.replace(
        "lease_ttl = \"30s\"",
        "lease_ttl = \"30s\"\nprovider_backoff_base = \"1m\"\nprovider_backoff_max = \"10s\"\n\
         bootstrap_backoff_base = \"1m\"\nbootstrap_backoff_max = \"10s\"\n\
         max_concurrent_starts = 0\nmax_concurrent_recoveries = -1",
    );
    let found = problems(&bad, &base_env());
    assert_eq!(
        keys(&found),
        [
            "worker.provider_backoff_max",
            "worker.bootstrap_backoff_max",
            "worker.max_concurrent_starts",
            "worker.max_concurrent_recoveries"
        ],
        "{found:?}"
    );
}

#[test]
fn a_good_file_validates_to_typed_values() {
    let config = Config::parse("test.toml", GOOD, &base_env()).unwrap();
    assert_eq!(
        config.controller_id,
        Some(Uuid::parse_str("3f2a9c1e-77b0-4d4e-9a55-0123456789ab").unwrap())
    );
    assert_eq!(config.settings.worker, "w1");
    assert_eq!(config.settings.lease_ttl, Duration::from_secs(30));
    assert_eq!(config.fleet.scale_sets.len(), 1);
    assert_eq!(config.fleet.scale_sets[0].spec.max_runners(), 4);
    assert_eq!(
        config.fleet.scale_sets[0].spec.runner_group().name,
        "Default"
    );
    assert_eq!(
        config.fleet.credentials[0].endpoint.api_base_url,
        "https://api.github.com"
    );
}

#[test]
fn environment_overrides_every_kind_of_key() {
    let mut env = base_env();
    env.insert(
        "SCALESET_DATABASE__URL".into(),
        "sqlite:///tmp/other.db".into(),
    );
    env.insert("SCALESET_WORKER__NAME".into(), "w2".into());
    env.insert("SCALESET_SCALE_SET__0__MAX_RUNNERS".into(), "7".into());
    env.insert(
        "SCALESET_CONTROLLER_ID".into(),
        "00000000-0000-0000-0000-000000000001".into(),
    );
    // Unrelated SCALESET_ variables without `__` are left alone.
    env.insert("SCALESET_KEY_2026_01".into(), KEY.into());
    let config = Config::parse("test.toml", GOOD, &env).unwrap();
    assert_eq!(config.store.url().redacted(), "sqlite:///tmp/other.db");
    assert_eq!(config.settings.worker, "w2");
    assert_eq!(config.fleet.scale_sets[0].spec.max_runners(), 7);
    assert_eq!(config.controller_id, Some(Uuid::from_u128(1)));
}

#[test]
fn sqlite_synchronous_defaults_to_normal_and_a_bad_value_is_named() {
    let env = base_env();
    let config = Config::parse("test.toml", GOOD, &env).unwrap();
    assert_eq!(
        config.store.sqlite_sync(),
        scaleset_store::SqliteSync::Normal
    );
    let text = GOOD.replace("[database]", "[database]\nsqlite_synchronous = \"full\"");
    let config = Config::parse("test.toml", &text, &env).unwrap();
    assert_eq!(config.store.sqlite_sync(), scaleset_store::SqliteSync::Full);
    let text = GOOD.replace("[database]", "[database]\nsqlite_synchronous = \"off\"");
    let found = problems(&text, &env);
    assert_eq!(keys(&found), ["database.sqlite_synchronous"], "{found:?}");
}

#[test]
fn an_unknown_key_is_named() {
    let text = GOOD.replace("[database]", "[database]\npool_szie = 3");
    let found = problems(&text, &base_env());
    assert_eq!(keys(&found), ["pool_szie"], "{found:?}");
    let text = format!("colour = \"blue\"\n{GOOD}");
    assert_eq!(keys(&problems(&text, &base_env())), ["colour"]);
}

#[test]
fn an_unknown_environment_override_is_named() {
    let mut env = base_env();
    env.insert("SCALESET_DATABSE__URL".into(), "x".into());
    let found = problems(GOOD, &env);
    assert_eq!(keys(&found), ["SCALESET_DATABSE__URL"]);
    let mut env = base_env();
    env.insert("SCALESET_DATABASE__UR".into(), "x".into());
    let found = problems(GOOD, &env);
    assert_eq!(keys(&found), ["UR".to_ascii_lowercase().as_str()]);
    assert!(
        found[0].message.contains("SCALESET_DATABASE__UR"),
        "{found:?}"
    );
}

#[test]
fn bad_values_are_each_named() {
    let text = GOOD
        .replace("3f2a9c1e-77b0-4d4e-9a55-0123456789ab", "not-a-uuid")
        .replace("sqlite:///tmp/scaleset-config-test.db", "mysql://x")
        .replace(
            "lease_ttl = \"30s\"",
            "lease_ttl = \"soon\"\nlisten = \"nowhere\"",
        )
        .replace(
            "token_env = \"GH_TOKEN\"",
            "token_env = \"GH_TOKEN\"\nbase_url = \"ftp:x\"",
        )
        .replace("max_runners = 4", "max_runners = -1");
    let found = problems(&text, &base_env());
    assert_eq!(
        keys(&found),
        [
            "controller_id",
            "database.url",
            "worker.listen",
            "worker.lease_ttl",
            "credentials[0].base_url",
            "scale_set[0].max_runners",
        ],
        "{found:#?}"
    );
}

#[test]
fn a_missing_encryption_key_is_named() {
    let found = problems(GOOD, &env(&[("GH_TOKEN", "t")]));
    assert_eq!(keys(&found), ["encryption.keys[0].env"]);
    assert!(found[0].message.contains("TEST_KEY"));
    let text = GOOD.replace("primary_key_id = \"k1\"", "");
    assert_eq!(
        keys(&problems(&text, &base_env())),
        ["encryption.primary_key_id"]
    );
    let text = GOOD.replace("primary_key_id = \"k1\"", "primary_key_id = \"k2\"");
    assert_eq!(
        keys(&problems(&text, &base_env())),
        ["encryption.primary_key_id"]
    );
}

#[test]
fn references_must_resolve() {
    let text = GOOD
        .replace("credentials = \"gh\"", "credentials = \"other\"")
        .replace("provider = \"fake\"\nmax", "provider = \"cloud\"\nmax");
    let found = problems(&text, &base_env());
    assert_eq!(
        keys(&found),
        ["scale_set[0].credentials", "scale_set[0].provider"],
        "{found:?}"
    );
}

#[test]
fn a_fake_provider_is_refused_unless_the_file_says_it_is_meant() {
    let unmeant = GOOD.replace("[fake]\nallow = true\n", "");
    let found = problems(&unmeant, &base_env());
    assert_eq!(keys(&found), ["provider \"fake\".kind"], "{found:?}");
    let message = &found[0].message;
    for part in [
        "starts no machine",
        "kind = \"external\"",
        "[fake] allow = true",
    ] {
        assert!(message.contains(part), "{part:?} not in {message}");
    }
    let refused_too = GOOD.replace("allow = true", "allow = false");
    assert_eq!(
        keys(&problems(&refused_too, &base_env())),
        ["provider \"fake\".kind"]
    );

    // The environment may say it for a file that does not, as for any key.
    let mut env = base_env();
    env.insert("SCALESET_FAKE__ALLOW".to_owned(), "true".to_owned());
    assert!(Config::parse("test.toml", &unmeant, &env).is_ok());
    // A file with no fake provider needs no opt-in.
    let external_only = unmeant
        .replace("name = \"fake\"\nkind = \"fake\"", "name = \"fake\"\nkind = \"external\"\nexecutable = \"/opt/p\"\nconfig_file = \"/etc/p.toml\"")
        .replace("[worker]\n", "[worker]\ninstance_api_url = \"https://scaleset.example.com\"\n");
    let config = Config::parse("test.toml", &external_only, &base_env());
    assert!(config.is_ok(), "{config:?}");
}

#[test]
fn a_missing_token_is_named_and_secrets_never_show() {
    let found = problems(GOOD, &env(&[("TEST_KEY", KEY)]));
    assert_eq!(keys(&found), ["credentials[0].token_env"]);
    let config = Config::parse("test.toml", GOOD, &base_env()).unwrap();
    let shown = format!("{config:?}");
    assert!(!shown.contains("ghp_x") && !shown.contains(KEY), "{shown}");
}

#[test]
fn durations_read_as_written() {
    assert_eq!(parse_duration("1m30s"), Ok(Duration::from_secs(90)));
    assert_eq!(parse_duration("7d"), Ok(Duration::from_secs(7 * 86_400)));
    assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
    assert!(parse_duration("5 fortnights").is_err());
    assert!(parse_duration("").is_err());
}

#[test]
fn the_documented_example_loads() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/examples/worker.toml");
    let env = env(&[("SCALESET_KEY", KEY), ("GITHUB_TOKEN", "ghp_example")]);
    let config = Config::load(&path, &env).unwrap_or_else(|e| panic!("{e}"));
    assert!(config.controller_id.is_some());
    assert!(!config.fleet.scale_sets.is_empty());
}

#[test]
fn the_server_section_has_defaults_and_overrides() {
    let config = Config::parse("test.toml", GOOD, &base_env()).unwrap();
    assert_eq!(
        config.server.listen,
        SocketAddr::from(([127, 0, 0, 1], 8080))
    );
    assert_eq!(config.server.tls, None);
    assert_eq!(config.server.max_body_size, 256 * 1024);

    let mut env = base_env();
    env.insert("SCALESET_SERVER__LISTEN".into(), "0.0.0.0:9000".into());
    env.insert("SCALESET_SERVER__MAX_BODY_SIZE".into(), "4096".into());
    let config = Config::parse("test.toml", GOOD, &env).unwrap();
    assert_eq!(config.server.listen, SocketAddr::from(([0, 0, 0, 0], 9000)));
    assert_eq!(config.server.max_body_size, 4096);
}

#[test]
fn the_server_connection_limits_have_defaults_and_are_each_checked() {
    let config = Config::parse("test.toml", GOOD, &base_env()).unwrap();
    assert_eq!(config.server.header_read_timeout, Duration::from_secs(10));
    assert_eq!(config.server.idle_timeout, Duration::from_secs(60));
    assert_eq!(config.server.max_connections, 1024);
    assert_eq!(config.server.http2_max_concurrent_streams, 100);
    assert_eq!(config.server.http2_max_header_list_size, 65536);
    assert!(!config.server.behind_tls_proxy);
    assert!(!config.server.https());

    let text = format!(
        "{GOOD}\n[server]\nheader_read_timeout = \"2s\"\nidle_timeout = \"30s\"\n\
         max_connections = 8\nhttp2_max_concurrent_streams = 4\n\
         http2_max_header_list_size = 8192\nbehind_tls_proxy = true\n"
    );
    let config = Config::parse("test.toml", &text, &base_env()).unwrap();
    assert_eq!(config.server.header_read_timeout, Duration::from_secs(2));
    assert_eq!(config.server.idle_timeout, Duration::from_secs(30));
    assert_eq!(config.server.max_connections, 8);
    assert_eq!(config.server.http2_max_concurrent_streams, 4);
    assert_eq!(config.server.http2_max_header_list_size, 8192);
    assert!(config.server.https());

    let text = format!(
        "{GOOD}\n[server]\nheader_read_timeout = \"0s\"\nidle_timeout = \"soon\"\n\
         max_connections = 0\nhttp2_max_concurrent_streams = -1\n\
         http2_max_header_list_size = 10\n"
    );
    let found = problems(&text, &base_env());
    let named = keys(&found);
    for key in [
        "server.header_read_timeout",
        "server.idle_timeout",
        "server.max_connections",
        "server.http2_max_concurrent_streams",
        "server.http2_max_header_list_size",
    ] {
        assert!(named.contains(&key), "{key}: {found:?}");
    }
}

#[test]
fn bad_server_values_are_each_named() {
    let text = format!(
        "{GOOD}\n[server]\nlisten = \"nowhere\"\ntls_cert_file = \"/nonexistent/cert.pem\"\nmax_body_size = 1\n"
    );
    let found = problems(&text, &base_env());
    let named = keys(&found);
    assert!(named.contains(&"server.listen"), "{found:?}");
    assert!(named.contains(&"server.tls_key_file"), "{found:?}");
    assert!(named.contains(&"server.max_body_size"), "{found:?}");

    let dir = tempfile::tempdir().unwrap();
    let cert = dir.path().join("cert.pem");
    std::fs::write(&cert, "x").unwrap();
    let text = format!(
        "{GOOD}\n[server]\ntls_cert_file = \"{}\"\ntls_key_file = \"{}\"\n",
        cert.display(),
        dir.path().join("missing.pem").display()
    );
    let found = problems(&text, &base_env());
    assert_eq!(keys(&found), vec!["server.tls_key_file"], "{found:?}");
}

#[test]
fn the_instance_api_url_is_read_and_checked() {
    let config = Config::parse("test.toml", GOOD, &base_env()).unwrap();
    assert_eq!(config.settings.instance_api_url, None);
    let with = |value: &str| {
        GOOD.replace(
            "lease_ttl = \"30s\"",
            &format!("lease_ttl = \"30s\"\ninstance_api_url = \"{value}\""),
        )
    };
    let config = Config::parse(
        "test.toml",
        &with("https://scaleset.example.com"),
        &base_env(),
    )
    .unwrap();
    assert_eq!(
        config.settings.instance_api_url.map(String::from),
        Some("https://scaleset.example.com/".to_owned())
    );
    for bad in ["ftp://x", "not a url", "https://x/?a=b"] {
        let found = problems(&with(bad), &base_env());
        assert_eq!(
            keys(&found),
            ["worker.instance_api_url"],
            "{bad}: {found:#?}"
        );
    }
}

/// Issue 29 item 16: an external provider needs a reachable scaleset-server.
#[test]
fn an_external_provider_needs_the_instance_api_url() {
    let external = GOOD.replacen(
        "[[provider]]",
        "[[provider]]\nname = \"lxd\"\nkind = \"external\"\nexecutable = \"/usr/local/bin/garm-provider-lxd\"\nconfig_file = \"/etc/scaleset/lxd.toml\"\n\n[[provider]]",
        1,
    );
    let found = problems(&external, &base_env());
    assert_eq!(keys(&found), ["worker.instance_api_url"], "{found:#?}");
    assert!(found[0].to_string().contains("\"lxd\""), "{found:#?}");
    let with_url = external.replace(
        "lease_ttl = \"30s\"",
        "lease_ttl = \"30s\"\ninstance_api_url = \"https://scaleset.example.com\"",
    );
    assert!(Config::parse("test.toml", &with_url, &base_env()).is_ok());
    // A malformed URL is one problem, not two.
    let bad = external.replace(
        "lease_ttl = \"30s\"",
        "lease_ttl = \"30s\"\ninstance_api_url = \"ftp://x\"",
    );
    assert_eq!(
        keys(&problems(&bad, &base_env())),
        ["worker.instance_api_url"]
    );
}

/// Issue 33: the warm pool's delay and the runner lifetimes are durations of a scale set,
/// default 0 (at once / off); a bad one is named with its key.
#[test]
fn lifecycle_settings_read_as_written_and_default_to_off() {
    let config = Config::parse("test.toml", GOOD, &base_env()).unwrap();
    let spec = &config.fleet.scale_sets[0].spec;
    assert_eq!(spec.scale_down_delay(), Duration::ZERO);
    assert_eq!(spec.max_idle_lifetime(), Duration::ZERO);
    assert_eq!(spec.max_lifetime(), Duration::ZERO);
    let text = GOOD.replace(
        "max_runners = 4",
        "max_runners = 4\nscale_down_delay = \"5m\"\nmax_idle_lifetime = \"2h\"\nmax_lifetime = \"1d\"",
    );
    let config = Config::parse("test.toml", &text, &base_env()).unwrap();
    let spec = &config.fleet.scale_sets[0].spec;
    assert_eq!(spec.scale_down_delay(), Duration::from_secs(300));
    assert_eq!(spec.max_idle_lifetime(), Duration::from_secs(7200));
    assert_eq!(spec.max_lifetime(), Duration::from_secs(86_400));
    let text = GOOD.replace(
        "max_runners = 4",
        "max_runners = 4\nscale_down_delay = \"soon\"\nmax_idle_lifetime = \"31d\"\nmax_lifetime = \"1.5s\"",
    );
    let found = problems(&text, &base_env());
    assert_eq!(
        keys(&found),
        [
            "scale_set[0].scale_down_delay",
            "scale_set[0].max_idle_lifetime",
            "scale_set[0].max_lifetime",
        ],
        "{found:#?}"
    );
}

/// Runner install templates are named files: read into the settings by name, a relative path
/// or a bad name refused naming the key, and a missing file reported by `--check`.
#[test]
fn runner_install_templates_are_named_absolute_files_checked_by_check() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("kiosk.sh");
    std::fs::write(&file, "#!/bin/bash\n").unwrap();
    let with = |table: &str| {
        GOOD.replace(
            "lease_ttl = \"30s\"",
            &format!("lease_ttl = \"30s\"\nrunner_install_templates = {{ {table} }}"),
        )
    };
    let good = with(&format!("kiosk = \"{}\"", file.display()));
    let config = Config::parse("test.toml", &good, &base_env()).unwrap();
    assert_eq!(
        config.settings.runner_install_templates.get("kiosk"),
        Some(&file)
    );
    let found = problems(&with("kiosk = \"relative.sh\""), &base_env());
    assert_eq!(
        keys(&found),
        ["worker.runner_install_templates.kiosk"],
        "{found:#?}"
    );
    std::fs::remove_file(&file).unwrap();
    let config = Config::parse("test.toml", &good, &base_env()).unwrap();
    let missing = config.check_files("test.toml").expect_err("a missing file");
    assert!(
        missing
            .problems
            .iter()
            .any(|p| p.key == "worker.runner_install_templates.kiosk"),
        "{missing:?}"
    );
}
