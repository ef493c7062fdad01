//! Where GitHub's REST API lives for a web base URL: the one derivation of the API base URL,
//! used by the store's endpoint (what is stored and shown) and by the client's config URL
//! (what it talks to), so the two cannot drift apart.

/// Whether `host` is served by GitHub itself (github.com, `www.github.com`, GHE.com tenants
/// `<tenant>.ghe.com`, and `github.localhost` of GitHub's own development setup), whose REST
/// API is at `api.<host>`; any other host is a GitHub Enterprise Server (`<base>/api/v3`).
pub fn is_github_hosted(host: &str) -> bool {
    let host = host.to_ascii_lowercase();
    matches!(
        host.as_str(),
        "github.com" | "www.github.com" | "github.localhost"
    ) || host.ends_with(".ghe.com")
}

/// The REST API base URL of the web base URL `base` (with no trailing slash):
/// `<scheme>://api.<host>[:port]` for a GitHub-hosted host (`www.` dropped), else
/// `<base>/api/v3` (GitHub Enterprise Server).
///
/// ```
/// use scaleset_domain::api_base_url;
///
/// let api = |base: &str| api_base_url(&url::Url::parse(base).unwrap());
/// assert_eq!(api("https://github.com"), "https://api.github.com");
/// assert_eq!(api("https://acme.ghe.com/"), "https://api.acme.ghe.com");
/// assert_eq!(api("https://ghes.example.com"), "https://ghes.example.com/api/v3");
/// assert_eq!(api("http://127.0.0.1:8080"), "http://127.0.0.1:8080/api/v3");
/// ```
pub fn api_base_url(base: &url::Url) -> String {
    let host = base.host_str().unwrap_or_default().to_ascii_lowercase();
    if is_github_hosted(&host) {
        let api_host = host.strip_prefix("www.").unwrap_or(&host);
        let port = base.port().map(|p| format!(":{p}")).unwrap_or_default();
        format!("{}://api.{api_host}{port}", base.scheme())
    } else {
        enterprise_api_base_url(base)
    }
}

/// The REST API base URL of a GitHub Enterprise Server at `base`: `<base>/api/v3` (also what
/// a client forced to treat a hosted-looking host as a server uses).
pub fn enterprise_api_base_url(base: &url::Url) -> String {
    format!("{}/api/v3", base.as_str().trim_end_matches('/'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn api(base: &str) -> String {
        api_base_url(&url::Url::parse(base).unwrap())
    }

    #[test]
    fn hosted_github_serves_its_api_at_the_api_host() {
        assert_eq!(api("https://github.com"), "https://api.github.com");
        assert_eq!(api("https://www.github.com/"), "https://api.github.com");
        assert_eq!(api("https://ACME.ghe.com"), "https://api.acme.ghe.com");
        assert_eq!(
            api("http://github.localhost:8080"),
            "http://api.github.localhost:8080"
        );
    }

    #[test]
    fn any_other_host_is_an_enterprise_server_under_api_v3() {
        assert_eq!(
            api("https://ghes.example.com/"),
            "https://ghes.example.com/api/v3"
        );
        assert_eq!(api("http://127.0.0.1:8080"), "http://127.0.0.1:8080/api/v3");
        // A look-alike is no GHE.com tenant.
        assert_eq!(api("https://ghe.com.evil"), "https://ghe.com.evil/api/v3");
    }
}
