//! `scalesetctl token …`: list and revoke API tokens (made on the server's host only).

use anyhow::Result;
use comfy_table::Cell;
use scaleset_api::v1::{Token, TokenList, TokenScope};

use super::Ctx;
use crate::cli::TokenCommand;
use crate::exit::Outcome;
use crate::output::short_time;

/// Runs a `token` subcommand.
pub(crate) async fn run(ctx: &Ctx<'_>, command: TokenCommand) -> Result<Outcome> {
    match command {
        TokenCommand::List => {
            let all: TokenList = ctx.api.get_all(&["tokens"], &[]).await?;
            ctx.show(&all, || table(ctx, &all.items));
        }
        TokenCommand::Revoke { which } => {
            let revoked: Token = ctx.api.delete(&["tokens", &which], &[]).await?;
            ctx.done(
                &revoked,
                &format!("revoked API token {:?} ({})", revoked.name, revoked.id),
            );
        }
    }
    Ok(Outcome::Done)
}

fn table(ctx: &Ctx<'_>, items: &[Token]) -> String {
    let rows = items
        .iter()
        .map(|t| {
            vec![
                Cell::new(&t.name),
                Cell::new(t.id),
                Cell::new(short_time(&t.created_at)),
                Cell::new(scope(t.scope)),
            ]
        })
        .collect();
    ctx.out
        .table(&["NAME", "ID", "CREATED", "SCOPE"], rows, "no tokens")
}

/// A scope as `token create --scope` names it.
fn scope(scope: TokenScope) -> &'static str {
    match scope {
        TokenScope::Read => "read",
        TokenScope::Operate => "operate",
        TokenScope::Admin => "admin",
        _ => "a scope this scalesetctl does not know",
    }
}
