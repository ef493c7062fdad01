//! `scaleset-server token create|list|revoke`: API tokens straight in the store (migrations
//! run on open). A created token is printed once, on stdout alone, so scripts can capture it.

use anyhow::{Context as _, Result, bail};
use scaleset_app::{errln, outln};
use scaleset_store::ExposeSecret as _;
use scaleset_store::{ApiScope, Store};

use crate::cli::TokenCommand;

pub(crate) async fn run(store: &dyn Store, command: TokenCommand) -> Result<()> {
    match command {
        TokenCommand::Create { name, scope } => {
            let Some(scope) = ApiScope::parse(&scope) else {
                bail!("the scope {scope:?} is not one of read, operate, admin");
            };
            if name.trim().is_empty() || name.len() > 64 || name.chars().any(char::is_control) {
                bail!(
                    "the token name {name:?} must have 1–64 characters and no control characters"
                );
            }
            let (record, secret) = store.create_scoped_api_token(&name, scope).await.map_err(|e| {
                if e.is_conflict() {
                    anyhow::anyhow!("a token named {name:?} exists already; pick another name or revoke it first")
                } else {
                    anyhow::Error::new(e).context("creating the token")
                }
            })?;
            errln!(
                "created API token {:?} ({}, scope {}); it is shown once and stored only as a hash:",
                record.name,
                record.id,
                record.scope
            );
            outln!("{}", secret.expose_secret());
        }
        TokenCommand::List => {
            // Tab-separated for scripts, under a header that names each column.
            outln!("NAME\tID\tCREATED (unix ms)\tSCOPE");
            for token in store.list_api_tokens().await.context("listing tokens")? {
                outln!(
                    "{}\t{}\t{}\t{}",
                    token.name,
                    token.id,
                    token.created_at.unix_millis(),
                    token.scope
                );
            }
        }
        TokenCommand::Revoke { name } => {
            let tokens = store.list_api_tokens().await.context("listing tokens")?;
            let Some(token) = tokens.iter().find(|t| t.name == name) else {
                bail!("no token named {name:?} (see `scaleset-server token list`)");
            };
            store
                .revoke_api_token(token.id)
                .await
                .context("revoking the token")?;
            errln!("revoked API token {name:?}");
        }
    }
    Ok(())
}
