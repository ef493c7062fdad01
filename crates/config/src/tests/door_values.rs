//! Values every door checks by the one rule the process later depends on: a CA bundle the
//! GitHub client can trust, a token it can send in a header, a host DNS can name, a worker
//! name of printable characters, and a pointer for a GARM provider table.

use super::*;

/// A real self-signed CA certificate (PEM).
pub(super) fn ca_certificate() -> String {
    let key = rcgen::KeyPair::generate().expect("key");
    let mut params =
        rcgen::CertificateParams::new(vec!["ghes.example".to_owned()]).expect("params");
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    params.self_signed(&key).expect("certificate").pem()
}

fn with_credentials_line(line: &str) -> String {
    GOOD.replace(
        "token_env = \"GH_TOKEN\"",
        &format!("token_env = \"GH_TOKEN\"\n{line}"),
    )
}

#[test]
fn a_ca_bundle_file_of_garbage_in_pem_framing_is_refused_naming_its_key() {
    let dir = tempfile::tempdir().expect("temp dir");
    let bundle = dir.path().join("ca.pem");
    std::fs::write(
        &bundle,
        "-----BEGIN CERTIFICATE-----\nZZZZ\n-----END CERTIFICATE-----\n",
    )
    .expect("bundle");
    let text = with_credentials_line(&format!("ca_bundle_file = \"{}\"", bundle.display()));
    let found = problems(&text, &base_env());
    assert_eq!(keys(&found), ["credentials[0].ca_bundle_file"], "{found:?}");
    assert!(found[0].message.contains("certificate 1"), "{found:?}");

    std::fs::write(&bundle, ca_certificate()).expect("bundle");
    let config = Config::parse("test.toml", &text, &base_env()).expect("a real CA is taken");
    assert!(config.fleet.credentials[0].endpoint.ca_bundle.is_some());
}

#[test]
fn a_token_that_cannot_be_sent_in_a_header_is_refused_from_the_environment_and_a_file() {
    let mut env = base_env();
    env.insert("GH_TOKEN".to_owned(), "ghp_a\r\nX-Evil: 1".to_owned());
    let found = problems(GOOD, &env);
    assert_eq!(keys(&found), ["credentials[0].token_env"], "{found:?}");
    assert!(found[0].message.contains("line break"), "{found:?}");
    assert!(
        !found[0].message.contains("ghp_a"),
        "the token is quoted: {found:?}"
    );

    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("token");
    std::fs::write(&file, "ghp_one\nghp_two\n").expect("token");
    let text = GOOD.replace(
        "token_env = \"GH_TOKEN\"",
        &format!("token_file = \"{}\"", file.display()),
    );
    let found = problems(&text, &base_env());
    assert_eq!(keys(&found), ["credentials[0].token_file"], "{found:?}");
    assert!(
        !found[0].message.contains("ghp_"),
        "the token is quoted: {found:?}"
    );
    // One token with its trailing newline is what a file usually holds.
    std::fs::write(&file, "ghp_one\n").expect("token");
    assert!(Config::parse("test.toml", &text, &base_env()).is_ok());
}

#[test]
fn a_base_url_host_longer_than_dns_allows_is_refused() {
    let long_label = format!("https://{}.example.com", "a".repeat(64));
    let found = problems(
        &with_credentials_line(&format!("base_url = \"{long_label}\"")),
        &base_env(),
    );
    assert_eq!(keys(&found), ["credentials[0].base_url"], "{found:?}");
    assert!(found[0].message.contains("label"), "{found:?}");

    let huge = format!("https://{}.com", "a.".repeat(2500));
    let found = problems(
        &with_credentials_line(&format!("base_url = \"{huge}\"")),
        &base_env(),
    );
    assert_eq!(keys(&found), ["credentials[0].base_url"], "{found:?}");
    assert!(found[0].message.len() < 400, "{found:?}");

    let longest = format!("https://{}.example.com", "a".repeat(63));
    assert!(
        Config::parse(
            "test.toml",
            &with_credentials_line(&format!("base_url = \"{longest}\"")),
            &base_env()
        )
        .is_ok()
    );
}

#[test]
fn a_worker_name_with_a_control_character_is_refused() {
    let found = problems(
        &GOOD.replace("name = \"w1\"", "name = \"w1\\u001b[31m\""),
        &base_env(),
    );
    assert_eq!(keys(&found), ["worker.name"], "{found:?}");
    assert!(found[0].message.contains("control character"), "{found:?}");
    let mut env = base_env();
    env.insert("SCALESET_WORKER__NAME".to_owned(), "w1\nw2".to_owned());
    assert_eq!(keys(&problems(GOOD, &env)), ["worker.name"]);
}

#[test]
fn a_garm_provider_table_points_to_moving_from_garm() {
    let garm = GOOD.replace(
        "[[provider]]\nname = \"fake\"\nkind = \"fake\"",
        "[[provider]]\nname = \"fake\"\nkind = \"fake\"\n\n[[provider]]\nname = \"lxd\"\n\
         [provider.external]\nprovider_executable = \"/opt/garm/garm-provider-lxd\"\n\
         config_file = \"/etc/garm/lxd.toml\"",
    );
    let found = problems(&garm, &base_env());
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].message.contains("unknown field `external`"),
        "{found:?}"
    );
    assert!(
        found[0]
            .message
            .contains("docs/providers.md, \"Moving from GARM\""),
        "{found:?}"
    );
    // Another unknown key gets no such pointer.
    let other = problems(
        &GOOD.replace("[worker]", "[worker]\nnmae = \"x\""),
        &base_env(),
    );
    assert!(!other[0].message.contains("GARM"), "{other:?}");
}

#[test]
fn an_app_client_id_given_as_app_id_says_which_number_to_give() {
    let text = GOOD.replace(
        "token_env = \"GH_TOKEN\"",
        "app_id = \"Iv23liABCDEF\"\ninstallation_id = 7\nprivate_key_env = \"KEY\"",
    );
    let found = problems(&text, &base_env());
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].message.contains("Iv23liABCDEF"), "{found:?}");
    assert!(found[0].message.contains("numeric \"App ID\""), "{found:?}");
    // And where the client id goes instead.
    assert!(found[0].message.contains("client_id = \"Iv"), "{found:?}");
}
