//! Unit tests of the bootstrap JSON shape.

use super::*;

fn sample_bootstrap(name: &str) -> BootstrapInstance {
    BootstrapInstance {
        name: name.into(),
        tools: vec![RunnerTool {
            os: Some("linux".into()),
            architecture: Some("x64".into()),
            download_url: Some("https://example.invalid/runner.tar.gz".into()),
            filename: Some("runner.tar.gz".into()),
            temp_download_token: None,
            sha256_checksum: Some("abc".into()),
        }],
        repo_url: "https://github.com/acme".into(),
        callback_url: "https://scaleset.example/api/v1/callbacks".into(),
        metadata_url: "https://scaleset.example/api/v1/metadata".into(),
        instance_token: SecretString::from("instance-token-secret"),
        ssh_keys: vec![],
        extra_specs: Some(serde_json::json!({"disk_size": 40})),
        github_runner_group: "default".into(),
        ca_cert_bundle: None,
        arch: OsArch::Amd64,
        os_type: OsType::Linux,
        flavor: "m1.small".into(),
        image: "ubuntu:22.04".into(),
        labels: vec!["self-hosted".into()],
        pool_id: PoolKey::parse("c0ffee00-0000-4000-8000-000000000001_7").unwrap(),
        user_data_options: UserDataOptions::default(),
        jit_config_enabled: true,
        proxy_config: None,
    }
}

#[test]
fn bootstrap_json_uses_garm_field_names() {
    let json = serde_json::to_value(sample_bootstrap("runner-1")).unwrap();
    let object = json.as_object().unwrap();
    let mut keys: Vec<&str> = object.keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        [
            "arch",
            "ca-cert-bundle",
            "callback-url",
            "extra_specs",
            "flavor",
            "github-runner-group",
            "image",
            "instance-token",
            "jit_config_enabled",
            "labels",
            "metadata-url",
            "name",
            "os_type",
            "pool_id",
            "proxy_config",
            "repo_url",
            "ssh-keys",
            "tools",
            "user_data_options",
        ]
    );
    assert_eq!(json["arch"], "amd64");
    assert_eq!(json["os_type"], "linux");
    assert_eq!(json["instance-token"], "instance-token-secret");
    // What GARM sends when a set has none of these (the captured stdin).
    assert_eq!(json["ca-cert-bundle"], "");
    assert_eq!(json["ssh-keys"], serde_json::Value::Null);
    assert_eq!(
        json["user_data_options"],
        serde_json::json!({"disable_updates_on_boot": false, "extra_packages": null, "enable_boot_debug": false})
    );
    assert_eq!(
        json["proxy_config"],
        serde_json::json!({"http_proxy": "", "https_proxy": "", "no_proxy": ""})
    );
    let tool = &json["tools"][0];
    assert_eq!(tool["os"], "linux");
    assert_eq!(tool["architecture"], "x64");
    assert!(tool.get("temp_download_token").is_none());
}

#[test]
fn ca_bundle_is_base64_and_proxy_config_has_garms_three_keys() {
    let mut bootstrap = sample_bootstrap("runner-1");
    bootstrap.ca_cert_bundle = Some(b"-----BEGIN CERTIFICATE-----".to_vec());
    bootstrap.proxy_config = Some(ProxyConfig {
        https_proxy: Some("http://proxy:3128".into()),
        ..ProxyConfig::default()
    });
    let json = serde_json::to_value(bootstrap).unwrap();
    assert_eq!(
        json["ca-cert-bundle"],
        "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0t"
    );
    assert_eq!(
        json["proxy_config"],
        serde_json::json!({"http_proxy": "", "https_proxy": "http://proxy:3128", "no_proxy": ""})
    );
}

#[test]
fn debug_never_shows_secrets() {
    let mut bootstrap = sample_bootstrap("runner-1");
    bootstrap.tools[0].temp_download_token = Some(SecretString::from("download-secret"));
    let request = CreateRequest {
        bootstrap,
        jit_config: Some(SecretString::from("jit-secret")),
        bootstrap_timeout: None,
    };
    let shown = format!("{request:?}");
    assert!(!shown.contains("instance-token-secret"), "{shown}");
    assert!(!shown.contains("download-secret"), "{shown}");
    assert!(!shown.contains("jit-secret"), "{shown}");
    assert!(shown.contains("[REDACTED]"), "{shown}");
}

/// The bootstrap JSON is where secrets are written out on purpose: a download token set on a
/// tool is sent as itself (the instance token is checked in the field-names test).
#[test]
fn a_download_token_is_serialized_as_itself() {
    let mut bootstrap = sample_bootstrap("runner-1");
    bootstrap.tools[0].temp_download_token = Some(SecretString::from("download-secret"));
    let json = serde_json::to_value(bootstrap).unwrap();
    assert_eq!(json["tools"][0]["temp_download_token"], "download-secret");
}
