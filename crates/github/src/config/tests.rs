//! Unit tests of config URLs: the protocol §2 examples, scopes, hosted vs GHES, force-GHES, overrides.

use std::collections::HashMap;

use super::*;

fn api(url: &str) -> String {
    ConfigUrl::parse(url).unwrap().api_base(false).to_string()
}

#[test]
fn section_2_examples_derive_the_rest_base() {
    assert_eq!(
        api("https://github.com/org/repo"),
        "https://api.github.com/"
    );
    assert_eq!(
        api("http://github.localhost/org/repo"),
        "http://api.github.localhost/"
    );
    assert_eq!(api("http://localhost/org/repo"), "http://localhost/api/v3");
    assert_eq!(api("https://www.github.com/org"), "https://api.github.com/");
    assert_eq!(api("https://acme.ghe.com/org"), "https://api.acme.ghe.com/");
    assert_eq!(
        api("https://ghes.example.com/org"),
        "https://ghes.example.com/api/v3"
    );
    assert_eq!(
        api("http://127.0.0.1:8080/org"),
        "http://127.0.0.1:8080/api/v3"
    );
    assert_eq!(api("https://GitHub.com/org"), "https://api.github.com/");
}

#[test]
fn scopes_are_read_from_the_path() {
    let repo = ConfigUrl::parse("https://github.com/owner/repo/").unwrap();
    assert_eq!(
        repo.scope(),
        &Scope::Repository {
            owner: "owner".into(),
            repo: "repo".into()
        }
    );
    assert_eq!(repo.as_str(), "https://github.com/owner/repo");
    let org = ConfigUrl::parse("/https://github.com/org//").unwrap();
    assert_eq!(org.scope(), &Scope::Organization { org: "org".into() });
    let ent = ConfigUrl::parse("https://github.com/Enterprises/my-ent").unwrap();
    assert_eq!(
        ent.scope(),
        &Scope::Enterprise {
            enterprise: "my-ent".into()
        }
    );
    assert!(ent.is_hosted());
}

#[test]
fn zero_or_three_segments_are_invalid() {
    for bad in [
        "https://github.com",
        "https://github.com/a/b/c",
        "not a url",
        "ftp://github.com/org",
    ] {
        let err = ConfigUrl::parse(bad).unwrap_err();
        assert!(
            matches!(err, Error::InvalidConfigUrl { .. }),
            "{bad}: {err}"
        );
    }
    let err = ConfigUrl::parse("https://github.com/a/b/c").unwrap_err();
    assert!(err.to_string().contains("enterprise, org, or repository"));
}

#[test]
fn force_ghes_uses_api_v3_on_hosted_hosts() {
    let url = ConfigUrl::parse("https://github.com/org").unwrap();
    assert_eq!(url.api_base(true).as_str(), "https://github.com/api/v3");
    let config = ClientConfig::new(url.clone(), Credentials::pat("x")).with_force_ghes(true);
    assert_eq!(config.api_base().as_str(), "https://github.com/api/v3");
}

#[test]
fn force_ghes_is_read_from_an_environment_map() {
    let url = ConfigUrl::parse("https://github.com/org").unwrap();
    let empty: HashMap<String, String> = HashMap::new();
    let config =
        ClientConfig::new(url.clone(), Credentials::pat("x")).with_force_ghes_from_env(&empty);
    assert_eq!(config.api_base().as_str(), "https://api.github.com/");
    let set = HashMap::from([(FORCE_GHES_VAR.to_owned(), String::new())]);
    let config = ClientConfig::new(url, Credentials::pat("x")).with_force_ghes_from_env(&set);
    assert_eq!(config.api_base().as_str(), "https://github.com/api/v3");
}

#[test]
fn api_base_override_wins() {
    let url = ConfigUrl::parse("https://github.com/org").unwrap();
    let base = Url::parse("http://127.0.0.1:9/api/v3").unwrap();
    let config = ClientConfig::new(url, Credentials::pat("x")).with_api_base(base.clone());
    assert_eq!(config.api_base(), base);
}

#[test]
fn percent_encoded_segments_are_decoded() {
    let url = ConfigUrl::parse("https://ghes.local/my%20org").unwrap();
    assert_eq!(
        url.scope(),
        &Scope::Organization {
            org: "my org".into()
        }
    );
}

proptest::proptest! {
    #[test]
    fn parsing_never_panics(input in ".{0,80}") {
        if let Ok(url) = ConfigUrl::parse(&input) {
            let _ = url.api_base(false);
            let _ = url.api_base(true);
        }
    }

    #[test]
    fn org_urls_round_trip(org in "[A-Za-z0-9][A-Za-z0-9-]{0,20}") {
        let url = ConfigUrl::parse(&format!("https://ghes.example/{org}/")).unwrap();
        proptest::prop_assert_eq!(url.scope(), &Scope::Organization { org: org.clone() });
        proptest::prop_assert_eq!(url.as_str(), format!("https://ghes.example/{org}"));
    }
}
