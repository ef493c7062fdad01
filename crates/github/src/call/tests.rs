//! Unit tests of URL building and query encoding.

use super::*;

fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn service_paths_join_with_collapsed_slashes() {
    let base = Url::parse("http://h/tenant/123/").unwrap();
    let url = service_url(&base, "/_apis/runtime/runnerscalesets", &[]);
    assert_eq!(
        url.as_str(),
        "http://h/tenant/123/_apis/runtime/runnerscalesets?api-version=6.0-preview"
    );
    let base = Url::parse("https://broker.example/rest").unwrap();
    let url = service_url(
        &base,
        "_apis/runtime/runnergroups/",
        &pairs(&[("groupName", "a b")]),
    );
    assert_eq!(
        url.as_str(),
        "https://broker.example/rest/_apis/runtime/runnergroups/?api-version=6.0-preview&groupName=a+b"
    );
}

#[test]
fn queries_merge_sorted_and_keep_an_existing_api_version() {
    let base = Url::parse("http://h/t/?zeta=1&api-version=7.0").unwrap();
    let url = service_url(&base, "x", &pairs(&[("alpha", "2")]));
    assert_eq!(url.query(), Some("alpha=2&api-version=7.0&zeta=1"));
}

#[test]
fn names_are_percent_encoded() {
    let base = Url::parse("http://h/").unwrap();
    for (name, encoded) in [
        ("example+garm&123", "example%2Bgarm%26123"),
        ("a b", "a+b"),
        ("x#y", "x%23y"),
        ("50%", "50%25"),
        ("a;b", "a%3Bb"),
        ("grüße", "gr%C3%BC%C3%9Fe"),
    ] {
        let url = service_url(&base, "p", &pairs(&[("name", name)]));
        assert_eq!(
            url.query(),
            Some(format!("api-version=6.0-preview&name={encoded}").as_str())
        );
        let decoded: Vec<(String, String)> = url
            .query_pairs()
            .map(|(k, v)| (k.into(), v.into()))
            .collect();
        assert!(decoded.contains(&("name".to_owned(), name.to_owned())));
    }
}
