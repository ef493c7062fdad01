//! The configuration file's doors for a scale-set spec, fed the workspace's shared bad specs
//! (`scaleset_store::test_util::bad_specs`): the file itself, the `SCALESET_SCALE_SET__0__…`
//! environment overrides, and a fleet as plan/apply take it. Each must report exactly the
//! problems the one spec parser reports, under the door's own key (issue 29 item 9).

use std::collections::BTreeSet;

use scaleset_store::test_util::{BadSpec, bad_specs};

use super::{base_env, problems};
use crate::parse_fleet;

const HEAD: &str = r#"
controller_id = "3f2a9c1e-77b0-4d4e-9a55-0123456789ab"

[database]
url = "sqlite:///tmp/scaleset-config-test.db"

[encryption]
primary_key_id = "k1"

[[encryption.keys]]
id = "k1"
env = "TEST_KEY"

[[provider]]
name = "fake"
kind = "fake"

[fake]
allow = true

[[credentials]]
name = "gh"
token_env = "GH_TOKEN"
"#;

/// A `[[scale_set]]` table with the case's fields.
fn table(case: &BadSpec) -> String {
    let mut text = String::from("\n[[scale_set]]\ncredentials = \"gh\"\norganization = \"acme\"\n");
    for (key, value) in case.fields() {
        text.push_str(&format!("{key} = {value}\n"));
    }
    text
}

/// The problems the one parser reports, as this door keys them.
fn expected(case: &BadSpec) -> Vec<(String, String)> {
    case.problems
        .iter()
        .map(|p| (format!("scale_set[0].{}", p.field), p.message.clone()))
        .collect()
}

fn got(found: &[crate::Problem]) -> Vec<(String, String)> {
    found
        .iter()
        .map(|p| (p.key.clone(), p.message.clone()))
        .collect()
}

#[test]
fn the_config_file_refuses_every_bad_spec_as_the_parser_does() {
    for case in bad_specs() {
        let text = format!("{HEAD}{}", table(&case));
        assert_eq!(
            got(&problems(&text, &base_env())),
            expected(&case),
            "{}",
            case.what
        );
    }
}

#[test]
fn environment_overrides_refuse_every_bad_spec_as_the_parser_does() {
    let good = format!(
        "{HEAD}\n[[scale_set]]\nname = \"linux\"\ncredentials = \"gh\"\norganization = \"acme\"\nprovider = \"fake\"\nmax_runners = 4\n"
    );
    for case in bad_specs() {
        let mut env = base_env();
        for (key, value) in &case.overrides {
            let text = match value {
                serde_json::Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            env.insert(
                format!("SCALESET_SCALE_SET__0__{}", key.to_ascii_uppercase()),
                text,
            );
        }
        assert_eq!(
            got(&problems(&good, &env)),
            expected(&case),
            "{}",
            case.what
        );
    }
}

#[test]
fn a_fleet_for_plan_and_apply_refuses_every_bad_spec_as_the_parser_does() {
    let stored = BTreeSet::from(["gh".to_owned()]);
    for case in bad_specs() {
        let found = match parse_fleet("fleet", &table(&case), None, &stored, None) {
            Ok(_) => panic!("{}: the fleet was accepted", case.what),
            Err(e) => e.problems,
        };
        assert_eq!(got(&found), expected(&case), "{}", case.what);
    }
}

#[test]
fn a_ghe_com_endpoint_gets_the_api_host_not_api_v3() {
    let text = format!(
        "{}\n[[scale_set]]\nname = \"linux\"\ncredentials = \"gh\"\norganization = \"acme\"\nprovider = \"fake\"\n",
        HEAD.replace(
            "name = \"gh\"\n",
            "name = \"gh\"\nbase_url = \"https://acme.ghe.com/\"\n"
        )
    );
    let config = crate::Config::parse("test.toml", &text, &base_env()).unwrap();
    let endpoint = &config.fleet.credentials[0].endpoint;
    assert_eq!(endpoint.base_url, "https://acme.ghe.com");
    assert_eq!(endpoint.api_base_url, "https://api.acme.ghe.com");
    assert_eq!(
        endpoint,
        &scaleset_store::Endpoint::parse("https://acme.ghe.com", None, None).unwrap()
    );
}

/// Issue 30 item 4: the file's policy text is the store's one parser's: each policy's text
/// gives that policy, and text naming none gives the parser's problem under the file's key.
#[test]
fn the_config_file_reads_a_policy_as_the_one_parser_does() {
    let with_policy = |text: &str| {
        format!(
            "{HEAD}\n[[scale_set]]\nname = \"linux\"\ncredentials = \"gh\"\norganization = \"acme\"\nprovider = \"fake\"\nadoption_policy = \"{text}\"\n"
        )
    };
    for &policy in scaleset_store::AdoptionPolicy::ALL {
        let config =
            crate::Config::parse("test.toml", &with_policy(policy.as_str()), &base_env()).unwrap();
        assert_eq!(config.fleet.scale_sets[0].spec.adoption_policy(), policy);
    }
    let parser = scaleset_store::AdoptionPolicy::parse("sometimes").unwrap_err();
    assert_eq!(
        got(&problems(&with_policy("sometimes"), &base_env())),
        vec![(format!("scale_set[0].{}", parser.field), parser.message)]
    );
}

#[test]
fn a_fleet_sets_the_runners_os_and_arch_in_garms_spelling_only() {
    let stored = BTreeSet::from(["gh".to_owned()]);
    let set = |extra: &str| {
        format!(
            "\n[[scale_set]]\nname = \"arm\"\ncredentials = \"gh\"\norganization = \"acme\"\nprovider = \"fake\"\n{extra}"
        )
    };
    let fleet = parse_fleet(
        "fleet",
        &set("os_type = \"windows\"\nos_arch = \"arm64\"\n"),
        None,
        &stored,
        None,
    )
    .expect("a valid fleet");
    let spec = &fleet.scale_sets[0].spec;
    assert_eq!(
        (spec.os_type(), spec.os_arch()),
        (
            scaleset_store::OsType::Windows,
            scaleset_store::OsArch::Arm64
        )
    );
    let plain = parse_fleet("fleet", &set(""), None, &stored, None).expect("a valid fleet");
    assert_eq!(
        (
            plain.scale_sets[0].spec.os_type(),
            plain.scale_sets[0].spec.os_arch()
        ),
        (scaleset_store::OsType::Linux, scaleset_store::OsArch::Amd64)
    );
    let refused = match parse_fleet("fleet", &set("os_arch = \"x64\"\n"), None, &stored, None) {
        Ok(_) => panic!("GitHub's spelling was accepted"),
        Err(e) => e.problems,
    };
    let keys: Vec<&str> = refused.iter().map(|p| p.key.as_str()).collect();
    assert_eq!(keys, ["scale_set[0].os_arch"]);
}

#[test]
fn a_fleet_gives_the_runners_proxy_ssh_keys_and_boot_options() {
    let stored = BTreeSet::from(["gh".to_owned()]);
    let text = "\n[[scale_set]]\nname = \"behind-proxy\"\ncredentials = \"gh\"\norganization = \"acme\"\nprovider = \"fake\"\nhttps_proxy = \"http://proxy.internal:3128\"\nno_proxy = \".internal\"\nssh_keys = [\"ssh-ed25519 AAAA ops\"]\nextra_packages = [\"jq\"]\ndisable_updates_on_boot = true\n";
    let fleet = parse_fleet("fleet", text, None, &stored, None).expect("a valid fleet");
    let setup = fleet.scale_sets[0].spec.runner_setup();
    assert_eq!(
        setup.https_proxy.as_deref(),
        Some("http://proxy.internal:3128")
    );
    assert_eq!(setup.no_proxy.as_deref(), Some(".internal"));
    assert_eq!(setup.http_proxy, None);
    assert_eq!(setup.ssh_keys, ["ssh-ed25519 AAAA ops"]);
    assert_eq!(setup.extra_packages, ["jq"]);
    assert!(setup.disable_updates_on_boot && !setup.enable_boot_debug);
    let refused = match parse_fleet(
        "fleet",
        &text.replace("[\"jq\"]", "[\"jq curl\"]"),
        None,
        &stored,
        None,
    ) {
        Ok(_) => panic!("a spaced package name was accepted"),
        Err(e) => e.problems,
    };
    assert!(
        refused.iter().any(|p| p.key.contains("extra_packages[0]")),
        "{refused:?}"
    );
}
