//! `scalesetctl import garm`: reads a running GARM's REST API (GETs only, plus the login when
//! a password is given) and writes the fleet file `garm::import` maps it to.

use std::path::Path;
use std::time::Duration;

use anyhow::{Context as _, Result, bail};
use http::Method;
use serde::de::DeserializeOwned;

use crate::cli::{Connection, ImportGarm};
use crate::client::Api;
use crate::commands::{print, print_err};
use crate::exit::Outcome;
use crate::garm::{self, Snapshot};
use crate::output::{Format, Output};
use crate::settings::{Settings, Token, parse_duration, parse_url};

/// The per-request timeout when --timeout is not given.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

fn read_secret(path: &Path, what: &str) -> Result<Token> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read {what} from {}", path.display()))?;
    let token = Token::new(&text);
    if token.expose().is_empty() {
        bail!("{what} in {} is empty", path.display());
    }
    Ok(token)
}

/// `import garm`.
pub(crate) async fn garm(
    connection: &Connection,
    args: ImportGarm,
    out: &Output,
) -> Result<Outcome> {
    let (url, token_file, ca_bundle, timeout) = connection.typed();
    let Some(url) = url else {
        bail!("give GARM's URL with --url (for example http://garm.internal:9997)");
    };
    let url = parse_url(url).context("GARM's --url")?;
    let timeout = match timeout {
        Some(text) => parse_duration(text)
            .with_context(|| format!("--timeout {text:?} is not a duration such as 30s or 2m"))?,
        None => DEFAULT_TIMEOUT,
    };
    let ca_bundle = ca_bundle
        .map(|path| {
            std::fs::read(path)
                .with_context(|| format!("cannot read the CA bundle {}", path.display()))
        })
        .transpose()?;
    let mut settings = Settings {
        url: url.clone(),
        url_source: "--url".to_owned(),
        token: None,
        token_source: None,
        ca_bundle,
        timeout,
        config_file: None,
    };
    match (token_file, &args.username, &args.password_file) {
        (Some(file), None, _) => {
            settings.token = Some(read_secret(file, "GARM's token")?);
            settings.token_source = Some(format!("--token-file {}", file.display()));
        }
        (None, Some(username), Some(password_file)) => {
            let password = read_secret(password_file, "the GARM password")?;
            let api = Api::new(&settings)?;
            #[derive(serde::Deserialize)]
            struct Login {
                token: String,
            }
            let body = serde_json::json!({"username": username, "password": password.expose()});
            let login: Login = api
                .send(Method::POST, api.url(&["auth", "login"], &[]), Some(&body))
                .await
                .with_context(|| format!("logging in to GARM at {url} as {username:?}"))?;
            settings.token = Some(Token::new(&login.token));
            settings.token_source = Some(format!("GARM's login as {username:?}"));
        }
        _ => bail!(
            "give GARM's token with --token-file FILE (the JWT garm-cli keeps in its config, or \
             POST /api/v1/auth/login's token), or --username with --password-file"
        ),
    }
    let api = Api::new(&settings)?;
    let snapshot = Snapshot {
        controller: get(&api, &["controller-info"]).await?,
        credentials: get(&api, &["github", "credentials"]).await?,
        organizations: get(&api, &["organizations"]).await?,
        repositories: get(&api, &["repositories"]).await?,
        enterprises: get(&api, &["enterprises"]).await?,
        scale_sets: get(&api, &["scalesets"]).await?,
        pools: get(&api, &["pools"]).await?,
        providers: get(&api, &["providers"]).await?,
        instances: get(&api, &["instances"]).await?,
    };
    if snapshot.controller.controller_id.is_empty() {
        bail!(
            "GARM at {url} answered controller-info without a controller_id; is it initialised \
             (garm-cli init)?"
        );
    }
    let import = garm::import(&snapshot);
    if let Some(path) = &args.output_file {
        std::fs::write(path, &import.fleet)
            .with_context(|| format!("cannot write the fleet file {}", path.display()))?;
    }
    let report = serde_json::json!({
        "garm_controller_id": snapshot.controller.controller_id,
        "output_file": args.output_file,
        "scale_sets": import.scale_sets.iter()
            .map(|(name, id)| serde_json::json!({"name": name, "github_id": id}))
            .collect::<Vec<_>>(),
        "must_supply": import.must_supply,
        "not_carried": import.not_carried,
        "fleet": if args.output_file.is_none() { Some(&import.fleet) } else { None },
    });
    match out.format {
        Format::Json => print(&Output::json(&report)),
        Format::Table => {
            let mut lines = vec![format!(
                "imported {} scale set(s) from GARM controller {}{}",
                import.scale_sets.len(),
                snapshot.controller.controller_id,
                args.output_file
                    .as_ref()
                    .map(|p| format!(" into {}", p.display()))
                    .unwrap_or_default()
            )];
            lines.push(
                "GARM's API never returns secrets: supply them as below. Stop GARM before \
                 applying the file (it deletes what it does not know in its scale sets)."
                    .to_owned(),
            );
            lines.push("the operator must supply:".to_owned());
            lines.extend(import.must_supply.iter().map(|m| format!("  - {m}")));
            lines.push("not carried:".to_owned());
            if import.not_carried.is_empty() {
                lines.push("  (nothing)".to_owned());
            }
            lines.extend(import.not_carried.iter().map(|m| format!("  - {m}")));
            lines.push(
                "next: review with `scalesetctl plan -f FILE` (each set shows adopt (imported \
                 from GARM …)), stop GARM, then `scalesetctl apply -f FILE`"
                    .to_owned(),
            );
            if args.output_file.is_none() {
                // The fleet is the output; the notes go beside it, not into it.
                print(&import.fleet);
                for line in lines {
                    print_err(&line);
                }
            } else {
                print(&(lines.join("\n") + "\n"));
            }
        }
    }
    Ok(Outcome::Done)
}

/// One GET of GARM's `/api/v1/…`, its failure naming what was read.
async fn get<T: DeserializeOwned>(api: &Api, segments: &[&str]) -> Result<T> {
    api.get(segments).await.with_context(|| {
        format!(
            "reading GARM's /api/v1/{} (is --url GARM's API and --token-file a GARM token?)",
            segments.join("/")
        )
    })
}
