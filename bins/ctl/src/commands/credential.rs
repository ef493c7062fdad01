//! `scalesetctl credential …`: GitHub credentials. Secrets go in (from a file, stdin or an
//! environment variable, never the command line) and never come out.

use std::io::Read as _;
use std::path::Path;

use anyhow::{Context as _, Result, bail};
use comfy_table::Cell;
use scaleset_api::v1::{
    AuthInput, AuthKind, CreateCredentials, Credentials, CredentialsList, EndpointInput,
};
use uuid::Uuid;

use super::Ctx;
use super::pick::{Candidate, full_id, pick};
use crate::cli::{CreateCredential, CredentialCommand};
use crate::exit::Outcome;
use crate::output::{short_id, short_time};

/// Runs a `credential` subcommand.
pub(crate) async fn run(ctx: &Ctx<'_>, command: CredentialCommand) -> Result<Outcome> {
    match command {
        CredentialCommand::List => list(ctx).await,
        CredentialCommand::Show { credential } => {
            let id = resolve(ctx, &credential).await?;
            let found: Credentials = ctx.api.get(&["credentials", &id.to_string()]).await?;
            ctx.show(&found, || details(ctx, &found));
            Ok(Outcome::Done)
        }
        CredentialCommand::Create(args) => create(ctx, args).await,
        CredentialCommand::Delete { credential } => {
            let id = resolve(ctx, &credential).await?;
            let _: serde::de::IgnoredAny = ctx
                .api
                .delete(&["credentials", &id.to_string()], &[])
                .await?;
            ctx.done(
                &serde_json::json!({ "id": id, "deleted": true }),
                &format!("deleted credentials {id}"),
            );
            Ok(Outcome::Done)
        }
    }
}

/// The id of the credentials `wanted` names.
pub(crate) async fn resolve(ctx: &Ctx<'_>, wanted: &str) -> Result<Uuid> {
    if let Some(id) = full_id(wanted) {
        return Ok(id);
    }
    let all: CredentialsList = ctx.api.get_all(&["credentials"], &[]).await?;
    let candidates: Vec<Candidate> = all
        .items
        .iter()
        .map(|c| Candidate {
            id: c.id,
            name: c.name.clone(),
            describe: c.endpoint.base_url.clone(),
        })
        .collect();
    pick(
        "credential",
        "scalesetctl credential list",
        wanted,
        &candidates,
    )
}

fn kind(kind: AuthKind) -> &'static str {
    match kind {
        AuthKind::Pat => "pat",
        AuthKind::App => "app",
        _ => "other",
    }
}

async fn list(ctx: &Ctx<'_>) -> Result<Outcome> {
    let all: CredentialsList = ctx.api.get_all(&["credentials"], &[]).await?;
    ctx.show(&all, || {
        let rows = all
            .items
            .iter()
            .map(|c| {
                vec![
                    Cell::new(short_id(&c.id)),
                    Cell::new(&c.name),
                    Cell::new(kind(c.kind)),
                    Cell::new(&c.endpoint.base_url),
                    Cell::new(short_time(&c.updated_at)),
                ]
            })
            .collect();
        ctx.out.table(
            &["ID", "NAME", "KIND", "ENDPOINT", "UPDATED"],
            rows,
            "no credentials (create some with `scalesetctl credential create`)",
        )
    });
    Ok(Outcome::Done)
}

fn details(ctx: &Ctx<'_>, c: &Credentials) -> String {
    let mut pairs = vec![
        ("id", Cell::new(c.id)),
        ("name", Cell::new(&c.name)),
        ("kind", Cell::new(kind(c.kind))),
    ];
    if let Some(app) = c.app_id {
        pairs.push(("app id", Cell::new(app)));
    }
    if let Some(client_id) = &c.client_id {
        pairs.push(("client id", Cell::new(client_id)));
    }
    if let Some(installation) = c.installation_id {
        pairs.push(("installation id", Cell::new(installation)));
    }
    pairs.push(("base url", Cell::new(&c.endpoint.base_url)));
    pairs.push(("api base url", Cell::new(&c.endpoint.api_base_url)));
    pairs.push((
        "ca bundle",
        Cell::new(match &c.endpoint.ca_bundle {
            Some(pem) => format!(
                "{} certificate(s)",
                pem.matches("BEGIN CERTIFICATE").count()
            ),
            None => "none".to_owned(),
        }),
    ));
    pairs.push(("created", Cell::new(&c.created_at)));
    pairs.push(("updated", Cell::new(&c.updated_at)));
    ctx.out.details(pairs)
}

/// Reads a secret from a file, or from stdin for `-`.
fn read_secret(path: &Path, what: &str) -> Result<String> {
    let text = if path == Path::new("-") {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .with_context(|| format!("cannot read the {what} from stdin"))?;
        text
    } else {
        std::fs::read_to_string(path)
            .with_context(|| format!("cannot read the {what} from {}", path.display()))?
    };
    Ok(text)
}

async fn create(ctx: &Ctx<'_>, args: CreateCredential) -> Result<Outcome> {
    let app = args.app_id.is_some() || args.client_id.is_some();
    if !app && (args.installation_id.is_some() || args.private_key_file.is_some()) {
        bail!(
            "--installation-id and --private-key-file are for a GitHub App: give --app-id or \
             --client-id with them"
        );
    }
    let auth = match (&args.pat_file, &args.pat_env) {
        (Some(path), _) => AuthInput::Pat {
            token: read_secret(path, "token")?.trim().to_owned(),
        },
        (_, Some(var)) => match ctx.env.get(var) {
            Some(token) if !token.trim().is_empty() => AuthInput::Pat {
                token: token.trim().to_owned(),
            },
            _ => bail!("the environment variable {var} (--pat-env) is not set or empty"),
        },
        _ if app => {
            let (Some(installation_id), Some(key)) = (args.installation_id, &args.private_key_file)
            else {
                bail!("a GitHub App needs --installation-id and --private-key-file");
            };
            // The server checks the App's name (exactly one of the two, a plausible client
            // id), as it does for every client.
            AuthInput::App {
                app_id: args.app_id,
                client_id: args.client_id.clone(),
                installation_id,
                private_key: read_secret(key, "private key")?,
            }
        }
        _ => bail!(
            "give the secret: --pat-file FILE (\"-\" for stdin), --pat-env VAR, or --app-id \
             (or --client-id) with --installation-id and --private-key-file"
        ),
    };
    let endpoint = match &args.base_url {
        Some(base_url) => Some(EndpointInput {
            base_url: base_url.clone(),
            api_base_url: args.api_base_url.clone(),
            ca_bundle: match &args.github_ca_bundle {
                Some(path) => Some(
                    std::fs::read_to_string(path)
                        .with_context(|| format!("cannot read the CA bundle {}", path.display()))?,
                ),
                None => None,
            },
        }),
        None => None,
    };
    let body = CreateCredentials {
        name: args.name,
        auth,
        endpoint,
    };
    let created: Credentials = ctx.api.post(&["credentials"], &body).await?;
    ctx.show(&created, || details(ctx, &created));
    Ok(Outcome::Done)
}
