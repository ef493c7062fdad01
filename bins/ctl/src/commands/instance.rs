//! `scalesetctl instance …`: the provider instances running ephemeral runners.

use std::collections::BTreeMap;

use anyhow::Result;
use comfy_table::Cell;
use scaleset_api::v1::{Instance, InstanceList, InstanceStatus, ScaleSetList};
use uuid::Uuid;

use super::{Ctx, scale_set};
use crate::cli::InstanceCommand;
use crate::exit::Outcome;
use crate::output::{Format, Tone, short_time};

/// Runs an `instance` subcommand.
pub(crate) async fn run(ctx: &Ctx<'_>, command: InstanceCommand) -> Result<Outcome> {
    match command {
        InstanceCommand::List { scale_set } => {
            let all: InstanceList = match scale_set {
                Some(wanted) => {
                    let id = scale_set::resolve(ctx, &wanted).await?.to_string();
                    ctx.api
                        .get_all(&["scale-sets", &id, "instances"], &[])
                        .await?
                }
                None => ctx.api.get_all(&["instances"], &[]).await?,
            };
            let names = if ctx.out.format == Format::Table {
                scale_set_names(ctx).await?
            } else {
                BTreeMap::new()
            };
            ctx.show(&all, || table(ctx, &all.items, &names));
            Ok(Outcome::Done)
        }
        InstanceCommand::Show { name } => {
            let found: Instance = ctx.api.get(&["instances", &name]).await?;
            let names = scale_set_names(ctx).await?;
            ctx.show(&found, || details(ctx, &found, &names));
            Ok(Outcome::Done)
        }
        InstanceCommand::Delete { name } => {
            let found: serde_json::Value = ctx.api.delete(&["instances", &name], &[]).await?;
            ctx.done(
                &found,
                &format!(
                    "removal of instance {name} requested: the worker retires it when it next \
                     plans (within a minute; a busy runner finishes its job first)"
                ),
            );
            Ok(Outcome::Done)
        }
    }
}

async fn scale_set_names(ctx: &Ctx<'_>) -> Result<BTreeMap<Uuid, String>> {
    let all: ScaleSetList = ctx.api.get_all(&["scale-sets"], &[]).await?;
    Ok(all.items.into_iter().map(|s| (s.id, s.spec.name)).collect())
}

fn status_text(status: InstanceStatus) -> (&'static str, Tone) {
    match status {
        InstanceStatus::Pending => ("pending", Tone::Warn),
        InstanceStatus::Creating => ("creating", Tone::Warn),
        InstanceStatus::Running => ("running", Tone::Good),
        InstanceStatus::Busy => ("busy", Tone::Good),
        InstanceStatus::Deleting => ("deleting", Tone::Warn),
        InstanceStatus::Deleted => ("deleted", Tone::Plain),
        InstanceStatus::Failed => ("failed", Tone::Bad),
        _ => ("unknown", Tone::Warn),
    }
}

fn owner(names: &BTreeMap<Uuid, String>, id: Uuid) -> String {
    names.get(&id).cloned().unwrap_or_else(|| id.to_string())
}

fn table(ctx: &Ctx<'_>, items: &[Instance], names: &BTreeMap<Uuid, String>) -> String {
    let rows = items
        .iter()
        .map(|i| {
            let (status, tone) = status_text(i.status);
            vec![
                Cell::new(&i.name),
                Cell::new(owner(names, i.scale_set_id)),
                ctx.out.toned(status, tone),
                Cell::new(
                    i.github_runner_id
                        .map_or_else(|| "-".to_owned(), |id| id.to_string()),
                ),
                Cell::new(short_time(&i.created_at)),
            ]
        })
        .collect();
    ctx.out.table(
        &["NAME", "SCALE SET", "STATUS", "RUNNER", "CREATED"],
        rows,
        "no instances",
    )
}

fn details(ctx: &Ctx<'_>, i: &Instance, names: &BTreeMap<Uuid, String>) -> String {
    let (status, tone) = status_text(i.status);
    ctx.out.details(vec![
        ("name", Cell::new(&i.name)),
        (
            "scale set",
            Cell::new(format!(
                "{} ({})",
                owner(names, i.scale_set_id),
                i.scale_set_id
            )),
        ),
        ("status", ctx.out.toned(status, tone)),
        (
            "provider id",
            Cell::new(i.provider_id.as_deref().unwrap_or("-")),
        ),
        (
            "runner id",
            Cell::new(
                i.github_runner_id
                    .map_or_else(|| "-".to_owned(), |id| id.to_string()),
            ),
        ),
        ("pool key", Cell::new(&i.pool_key)),
        (
            "bootstrap by",
            Cell::new(i.bootstrap_deadline.as_deref().unwrap_or("-")),
        ),
        (
            "bootstrap",
            Cell::new(i.bootstrap.as_ref().map_or_else(
                || "-".to_owned(),
                |b| match &b.message {
                    Some(message) => format!("{}: {message}", b.status),
                    None => b.status.clone(),
                },
            )),
        ),
        (
            "removal",
            Cell::new(
                i.removal_requested_at
                    .as_deref()
                    .map_or_else(|| "-".to_owned(), |at| format!("requested {at}")),
            ),
        ),
        ("created", Cell::new(&i.created_at)),
        ("updated", Cell::new(&i.updated_at)),
    ])
}
