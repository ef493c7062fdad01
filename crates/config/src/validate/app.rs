//! The GitHub App form of `[[credentials]]`: `app_id` or `client_id` (exactly one: either names
//! the App as its JWT's issuer), `installation_id` and the private key by
//! reference (`private_key_file` or `private_key_env`, never inline). The key is parsed here,
//! by the GitHub client's own parser, so a key the client could not sign with is a
//! configuration error naming its key, not a failure at the first token fetch.

use std::collections::BTreeMap;

use scaleset_store::{AppIdentity, Auth, ClientId, NewCredentials, SecretString};

use super::Problems;
use crate::raw::RawCredentials;

/// Whether the table declares an App (any App key is present).
pub(super) fn declared(c: &RawCredentials) -> bool {
    c.app_id.is_some()
        || c.client_id.is_some()
        || c.installation_id.is_some()
        || c.private_key_file.is_some()
        || c.private_key_env.is_some()
}

/// The App credentials of table `at`, every problem reported.
pub(super) fn auth(
    p: &mut Problems,
    at: &str,
    c: &RawCredentials,
    env: &BTreeMap<String, String>,
) -> Option<Auth> {
    if c.token_env.is_some() || c.token_file.is_some() {
        p.add(
            at,
            "declares both a PAT (token_env/token_file) and a GitHub App (app_id or \
             client_id, installation_id, private_key_file/private_key_env): keep one form",
        );
    }
    let app = identity(p, at, c);
    let installation_id = positive_id(
        p,
        &format!("{at}.installation_id"),
        c.installation_id,
        "the installation's id (the number at the end of the installation's settings URL)",
    );
    let pem = match (&c.private_key_file, &c.private_key_env) {
        (Some(file), None) => match std::fs::read_to_string(file) {
            Ok(text) => Some((format!("{at}.private_key_file"), text)),
            Err(e) => {
                p.add(
                    format!("{at}.private_key_file"),
                    format!("cannot read {}: {e}", file.display()),
                );
                None
            }
        },
        (None, Some(var)) => {
            match env.get(var) {
                Some(text) if !text.trim().is_empty() => {
                    Some((format!("{at}.private_key_env"), text.clone()))
                }
                _ => {
                    p.add(
                    format!("{at}.private_key_env"),
                    format!("the environment variable {var} holding the App's private key is not set"),
                );
                    None
                }
            }
        }
        _ => {
            p.add(
                at,
                "a GitHub App needs exactly one of `private_key_file` or `private_key_env` \
                 (never the key inline)",
            );
            None
        }
    };
    let private_key = pem.and_then(|(key, text)| {
        let secret = SecretString::from(text);
        match scaleset_github::app_key_fingerprint(&secret) {
            Ok(_) => Some(secret),
            Err(e) => {
                p.add(
                    key,
                    format!(
                        "{e}; give the PEM private key GitHub generated for the App \
                         (BEGIN RSA PRIVATE KEY or BEGIN PRIVATE KEY)"
                    ),
                );
                None
            }
        }
    });
    Some(Auth::App {
        app: app?,
        installation_id: installation_id?,
        private_key: private_key?,
    })
}

/// The App the table names: exactly one of `app_id` (the numeric App ID) or `client_id`
/// (`Iv23li…`); both or neither is a problem saying which to keep.
fn identity(p: &mut Problems, at: &str, c: &RawCredentials) -> Option<AppIdentity> {
    const WHAT: &str = "the App's id (its settings page shows it)";
    match (c.app_id, &c.client_id) {
        (Some(_), Some(_)) => {
            p.add(
                format!("{at}.client_id"),
                "given with app_id: both name the App, give one (keep client_id = \"Iv…\" \
                 or app_id = <App ID>, and delete the other)",
            );
            None
        }
        (app_id @ Some(_), None) => {
            positive_id(p, &format!("{at}.app_id"), app_id, WHAT).map(AppIdentity::Id)
        }
        (None, Some(text)) => match ClientId::parse(text) {
            Ok(client_id) => Some(AppIdentity::ClientId(client_id)),
            Err(e) => {
                p.add(format!("{at}.client_id"), e.to_string());
                None
            }
        },
        (None, None) => {
            p.add(
                format!("{at}.app_id"),
                "missing; give the App's client id as client_id = \"Iv…\" or its numeric \
                 App ID as app_id (its settings page shows both)",
            );
            None
        }
    }
}

fn positive_id(p: &mut Problems, key: &str, value: Option<i64>, what: &str) -> Option<i64> {
    match value {
        Some(id) if id > 0 => Some(id),
        Some(id) => {
            p.add(key, format!("{id} is not an id; give {what}"));
            None
        }
        None => {
            p.add(key, format!("missing; give {what}"));
            None
        }
    }
}

/// One line saying what declared credentials are, for `--check`: the form, the endpoint, and
/// for an App its id, installation and the fingerprint of its key (the one GitHub shows beside
/// the key on the App's settings page), without calling GitHub and without the secret.
pub fn describe_credentials(c: &NewCredentials) -> String {
    let api = &c.endpoint.api_base_url;
    // Not a `match`: `Auth` may gain forms, which describe themselves as their kind alone.
    let Auth::App {
        app,
        installation_id,
        private_key,
    } = &c.auth
    else {
        let kind = if matches!(c.auth, Auth::Pat { .. }) {
            "personal access token"
        } else {
            "GitHub credentials"
        };
        return format!("credentials {:?}: {kind} for {api}", c.name);
    };
    let key = scaleset_github::app_key_fingerprint(private_key)
        .unwrap_or_else(|e| format!("unusable ({e})"));
    format!(
        "credentials {:?}: GitHub App {app}, installation {installation_id}, \
         private key {key}, for {api}",
        c.name
    )
}
