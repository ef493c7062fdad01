//! Issue 31 item 4: the trust roots and the GHES endpoint of `[[credentials]]`.

use super::*;

fn with(lines: &str) -> String {
    GOOD.replace(
        "token_env = \"GH_TOKEN\"",
        &format!("token_env = \"GH_TOKEN\"\n{lines}"),
    )
}

#[test]
fn trust_roots_choose_the_built_in_or_the_system_store() {
    let endpoint = |text: &str| {
        Config::parse("test.toml", text, &base_env())
            .expect("valid")
            .fleet
            .credentials[0]
            .endpoint
            .clone()
    };
    assert!(!endpoint(GOOD).system_trust, "built-in by default");
    assert!(!endpoint(&with("trust_roots = \"builtin\"")).system_trust);
    let system = endpoint(&with("trust_roots = \"system\""));
    assert!(system.system_trust);
    assert_eq!(system.ca_bundle, None);
}

#[test]
fn trust_roots_refuse_an_unknown_choice_and_a_ca_bundle_beside_them() {
    let found = problems(&with("trust_roots = \"os\""), &base_env());
    assert_eq!(keys(&found), ["credentials[0].trust_roots"], "{found:?}");
    assert!(
        found[0].message.contains("\"os\" is not a choice")
            && found[0].message.contains("\"builtin\"")
            && found[0].message.contains("\"system\""),
        "{found:?}"
    );

    let dir = tempfile::tempdir().expect("temp dir");
    let bundle = dir.path().join("ca.pem");
    std::fs::write(&bundle, super::door_values::ca_certificate()).expect("bundle");
    let both = with(&format!(
        "trust_roots = \"system\"\nca_bundle_file = \"{}\"",
        bundle.display()
    ));
    let found = problems(&both, &base_env());
    assert_eq!(keys(&found), ["credentials[0].trust_roots"], "{found:?}");
    assert!(found[0].message.contains("not both"), "{found:?}");
    // A bundle alone is still the GHES form it was.
    let alone = with(&format!("ca_bundle_file = \"{}\"", bundle.display()));
    let config = Config::parse("test.toml", &alone, &base_env()).expect("valid");
    let endpoint = &config.fleet.credentials[0].endpoint;
    assert!(endpoint.ca_bundle.is_some() && !endpoint.system_trust);
}

#[test]
fn a_ghes_endpoint_is_its_base_url_and_an_optional_api_base_url() {
    let endpoint = |lines: &str| {
        Config::parse("test.toml", &with(lines), &base_env())
            .expect("valid")
            .fleet
            .credentials[0]
            .endpoint
            .clone()
    };
    let ghes = endpoint("base_url = \"https://ghes.example.com/\"");
    assert_eq!(ghes.base_url, "https://ghes.example.com");
    assert_eq!(ghes.api_base_url, "https://ghes.example.com/api/v3");
    let ghe_com = endpoint("base_url = \"https://acme.ghe.com\"");
    assert_eq!(ghe_com.api_base_url, "https://api.acme.ghe.com");
    let chosen = endpoint(
        "base_url = \"https://ghes.example.com\"\napi_base_url = \"https://gw.example.com/gh/api\"",
    );
    assert_eq!(chosen.api_base_url, "https://gw.example.com/gh/api");
    let found = problems(&with("api_base_url = \"ftp://x\""), &base_env());
    assert_eq!(keys(&found), ["credentials[0].api_base_url"], "{found:?}");
}
