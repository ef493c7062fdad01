//! The GitHub App form of `[[credentials]]`.

use super::*;
use scaleset_store::{AppIdentity, Auth, ClientId, ExposeSecret as _};

const APP_KEY: &str = include_str!("../../../github/tests/client/data/test-app-key.pem");
/// `openssl rsa -in test-app-key.pem -pubout -outform DER | openssl sha256 -binary | base64`.
const FINGERPRINT: &str = "SHA256:d4kpash3BGWCAk7zXJIcGLg0QDg9Q6tGGTkrCHMgQ3A=";

fn app_file(credentials: &str) -> String {
    GOOD.replace(
        "[[credentials]]\nname = \"gh\"\ntoken_env = \"GH_TOKEN\"",
        &format!("[[credentials]]\nname = \"gh\"\n{credentials}"),
    )
}

fn app_of(config: &Config) -> (i64, i64, String) {
    match app_by(config) {
        (AppIdentity::Id(id), installation_id, key) => (id, installation_id, key),
        other => panic!("expected an App ID, got {other:?}"),
    }
}

fn app_by(config: &Config) -> (AppIdentity, i64, String) {
    match &config.fleet.credentials[0].auth {
        Auth::App {
            app,
            installation_id,
            private_key,
        } => (
            app.clone(),
            *installation_id,
            private_key.expose_secret().to_owned(),
        ),
        other => panic!("expected App credentials, got {other:?}"),
    }
}

#[test]
fn app_credentials_read_the_key_from_a_file_or_the_environment() {
    let dir = tempfile::tempdir().expect("temp dir");
    let key = dir.path().join("app.pem");
    std::fs::write(&key, APP_KEY).expect("key");
    let text = app_file(&format!(
        "app_id = 12345\ninstallation_id = 678\nprivate_key_file = \"{}\"",
        key.display()
    ));
    let config = Config::parse("test.toml", &text, &base_env()).expect("valid");
    assert_eq!(app_of(&config), (12345, 678, APP_KEY.to_owned()));
    let said = describe_credentials(&config.fleet.credentials[0]);
    assert_eq!(
        said,
        format!(
            "credentials \"gh\": GitHub App 12345, installation 678, private key {FINGERPRINT}, for https://api.github.com"
        )
    );
    assert!(!said.contains("PRIVATE KEY"));

    let text = app_file("app_id = 12345\ninstallation_id = 678\nprivate_key_env = \"APP_PEM\"");
    let mut with_key = base_env();
    with_key.insert("APP_PEM".to_owned(), APP_KEY.to_owned());
    let config = Config::parse("test.toml", &text, &with_key).expect("valid");
    assert_eq!(app_of(&config), (12345, 678, APP_KEY.to_owned()));
    // The PAT form is described too.
    let pat = Config::parse("test.toml", GOOD, &base_env()).expect("valid");
    assert_eq!(
        describe_credentials(&pat.fleet.credentials[0]),
        "credentials \"gh\": personal access token for https://api.github.com"
    );
}

#[test]
fn every_app_problem_is_named_at_once() {
    let text = app_file(
        "token_env = \"GH_TOKEN\"\napp_id = 0\nprivate_key_file = \"/nonexistent/app.pem\"",
    );
    let found = problems(&text, &base_env());
    assert_eq!(
        keys(&found),
        [
            "credentials[0]",
            "credentials[0].app_id",
            "credentials[0].installation_id",
            "credentials[0].private_key_file",
        ],
        "{found:?}"
    );
    assert!(found[0].message.contains("keep one form"), "{found:?}");

    let text = app_file("app_id = 1\ninstallation_id = 2");
    let found = problems(&text, &base_env());
    assert_eq!(keys(&found), ["credentials[0]"]);
    assert!(
        found[0].message.contains("never the key inline"),
        "{found:?}"
    );

    let text = app_file(
        "app_id = 1\ninstallation_id = 2\nprivate_key_file = \"a.pem\"\nprivate_key_env = \"APP_PEM\"",
    );
    assert_eq!(keys(&problems(&text, &base_env())), ["credentials[0]"]);

    // An inline key is an unknown key, never read as a secret.
    let text = app_file("app_id = 1\ninstallation_id = 2\nprivate_key = \"-----BEGIN\"");
    assert_eq!(keys(&problems(&text, &base_env())), ["private_key"]);
}

#[test]
fn a_key_the_client_cannot_sign_with_is_named_without_showing_it() {
    let text = app_file("app_id = 1\ninstallation_id = 2\nprivate_key_env = \"APP_PEM\"");
    let secret = "-----BEGIN CERTIFICATE-----\nc2VjcmV0LXRleHQ=\n-----END CERTIFICATE-----\n";
    let mut env = base_env();
    env.insert("APP_PEM".to_owned(), secret.to_owned());
    let found = problems(&text, &env);
    assert_eq!(keys(&found), ["credentials[0].private_key_env"]);
    assert!(found[0].message.contains("private key"), "{found:?}");
    assert!(!found[0].message.contains("c2VjcmV0"), "{found:?}");
    // An unset variable is named.
    let found = problems(&text, &base_env());
    assert_eq!(keys(&found), ["credentials[0].private_key_env"]);
    assert!(found[0].message.contains("APP_PEM"), "{found:?}");
}

#[test]
fn app_keys_take_environment_overrides() {
    let text = app_file("app_id = 12345\ninstallation_id = 678\nprivate_key_env = \"APP_PEM\"");
    let mut env = base_env();
    env.insert("OTHER_PEM".to_owned(), APP_KEY.to_owned());
    env.insert(
        "SCALESET_CREDENTIALS__0__APP_ID".to_owned(),
        "999".to_owned(),
    );
    env.insert(
        "SCALESET_CREDENTIALS__0__INSTALLATION_ID".to_owned(),
        "4242".to_owned(),
    );
    env.insert(
        "SCALESET_CREDENTIALS__0__PRIVATE_KEY_ENV".to_owned(),
        "OTHER_PEM".to_owned(),
    );
    let config = Config::parse("test.toml", &text, &env).expect("valid");
    assert_eq!(app_of(&config), (999, 4242, APP_KEY.to_owned()));
}

#[test]
fn a_fleet_sent_over_the_api_still_refuses_app_credentials() {
    let text = "[[credentials]]\nname = \"gh\"\napp_id = 1\ninstallation_id = 2\nprivate_key_env = \"APP_PEM\"\n";
    let err = parse_fleet(
        "request",
        text,
        None,
        &std::collections::BTreeSet::new(),
        None,
    )
    .expect_err("credentials over the API");
    assert_eq!(keys(&err.problems), ["credentials[0]"]);
    assert!(
        err.problems[0]
            .message
            .contains("cannot declare credentials"),
        "{err}"
    );
}

/// Issue 31 item 3: the secrets in files are kept with where they came from, so a rotation
/// (the file replaced) is read again; a secret from the environment is not watched.
#[test]
fn secrets_in_files_are_kept_for_rotation_and_environment_ones_are_not() {
    let dir = tempfile::tempdir().expect("temp dir");
    let key = dir.path().join("app.pem");
    std::fs::write(&key, APP_KEY).expect("key");
    let text = app_file(&format!(
        "app_id = 12345\ninstallation_id = 678\nprivate_key_file = \"{}\"",
        key.display()
    ));
    let config = Config::parse("test.toml", &text, &base_env()).expect("valid");
    assert_eq!(
        config.secret_files,
        [SecretFile {
            credentials: "gh".to_owned(),
            path: key.clone(),
            form: SecretForm::AppKey {
                app: AppIdentity::Id(12345),
                installation_id: 678,
            },
        }]
    );
    assert_eq!(
        config.secret_files[0].read().expect("readable"),
        config.fleet.credentials[0].auth
    );

    let token = dir.path().join("token");
    std::fs::write(&token, "ghp_file\n").expect("token");
    let text = GOOD.replace(
        "token_env = \"GH_TOKEN\"",
        &format!("token_file = \"{}\"", token.display()),
    );
    let config = Config::parse("test.toml", &text, &base_env()).expect("valid");
    assert_eq!(config.secret_files.len(), 1);
    assert_eq!(config.secret_files[0].form, SecretForm::Pat);
    assert_eq!(config.secret_files[0].path, token);

    let config = Config::parse("test.toml", GOOD, &base_env()).expect("valid");
    assert!(config.secret_files.is_empty(), "token_env is not a file");
}

/// A GitHub App may be named by its client id (`Iv23li…`, which GitHub shows first and accepts
/// as the JWT issuer) instead of its numeric App ID; the client id is read as given and said
/// by `--check`.
#[test]
fn app_credentials_may_name_the_app_by_its_client_id() {
    let dir = tempfile::tempdir().expect("temp dir");
    let key = dir.path().join("app.pem");
    std::fs::write(&key, APP_KEY).expect("key");
    let text = app_file(&format!(
        "client_id = \"Iv23liABCDEF12345678\"\ninstallation_id = 678\nprivate_key_file = \"{}\"",
        key.display()
    ));
    let config = Config::parse("test.toml", &text, &base_env()).expect("valid");
    let client_id = AppIdentity::ClientId(ClientId::parse("Iv23liABCDEF12345678").unwrap());
    assert_eq!(
        app_by(&config),
        (client_id.clone(), 678, APP_KEY.to_owned())
    );
    assert_eq!(
        describe_credentials(&config.fleet.credentials[0]),
        format!(
            "credentials \"gh\": GitHub App client id Iv23liABCDEF12345678, installation 678, private key {FINGERPRINT}, for https://api.github.com"
        )
    );
    // The key file is watched for rotation with the App it belongs to.
    assert_eq!(
        config.secret_files[0].form,
        SecretForm::AppKey {
            app: client_id,
            installation_id: 678,
        }
    );
    assert_eq!(
        config.secret_files[0].read().expect("readable"),
        config.fleet.credentials[0].auth
    );
    // An older App's client id (`Iv1.` and hex) is a client id too: the prefix is not checked.
    let older = app_file(
        "client_id = \"Iv1.0123456789abcdef\"\ninstallation_id = 1\nprivate_key_env = \"APP_PEM\"",
    );
    let mut with_key = base_env();
    with_key.insert("APP_PEM".to_owned(), APP_KEY.to_owned());
    let config = Config::parse("test.toml", &older, &with_key).expect("valid");
    assert!(
        matches!(app_by(&config).0, AppIdentity::ClientId(c) if c.as_str() == "Iv1.0123456789abcdef")
    );
}

/// Exactly one of `app_id` and `client_id` names the App: both, neither, or a client id that
/// cannot be one is a problem naming the key and what to write.
#[test]
fn an_app_named_both_ways_or_not_at_all_or_by_a_bad_client_id_is_refused() {
    let mut env = base_env();
    env.insert("APP_PEM".to_owned(), APP_KEY.to_owned());
    let both = app_file(
        "app_id = 12345\nclient_id = \"Iv23liABCDEF\"\ninstallation_id = 2\nprivate_key_env = \"APP_PEM\"",
    );
    let found = problems(&both, &env);
    assert_eq!(keys(&found), ["credentials[0].client_id"], "{found:?}");
    assert!(found[0].message.contains("given with app_id"), "{found:?}");
    assert!(found[0].message.contains("delete the other"), "{found:?}");

    let neither = app_file("installation_id = 2\nprivate_key_env = \"APP_PEM\"");
    let found = problems(&neither, &env);
    assert_eq!(keys(&found), ["credentials[0].app_id"], "{found:?}");
    assert!(found[0].message.contains("client_id = \"Iv"), "{found:?}");

    for bad in ["", "Iv23li ABC", "Iv23li\\u00e9"] {
        let text = app_file(&format!(
            "client_id = \"{bad}\"\ninstallation_id = 2\nprivate_key_env = \"APP_PEM\""
        ));
        let found = problems(&text, &env);
        assert_eq!(
            keys(&found),
            ["credentials[0].client_id"],
            "{bad:?}: {found:?}"
        );
        assert!(found[0].message.contains("Client ID"), "{found:?}");
    }
    let long = app_file(&format!(
        "client_id = \"Iv23li{}\"\ninstallation_id = 2\nprivate_key_env = \"APP_PEM\"",
        "A".repeat(200)
    ));
    let found = problems(&long, &env);
    assert_eq!(keys(&found), ["credentials[0].client_id"], "{found:?}");
    assert!(found[0].message.contains("longer than"), "{found:?}");
}
