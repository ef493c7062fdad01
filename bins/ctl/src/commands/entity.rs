//! `scalesetctl entity …`: the repositories, organizations and enterprises scale sets belong to.

use anyhow::Result;
use comfy_table::Cell;
use scaleset_api::v1::{CreateEntity, Entity, EntityKind, EntityList};
use uuid::Uuid;

use super::Ctx;
use super::pick::{Candidate, full_id, pick};
use crate::cli::{EntityCommand, EntityKindArg};
use crate::exit::Outcome;
use crate::output::{short_id, short_time};

/// Runs an `entity` subcommand.
pub(crate) async fn run(ctx: &Ctx<'_>, command: EntityCommand) -> Result<Outcome> {
    match command {
        EntityCommand::List => {
            let all: EntityList = ctx.api.get_all(&["entities"], &[]).await?;
            ctx.show(&all, || table(ctx, &all.items));
            Ok(Outcome::Done)
        }
        EntityCommand::Show { entity } => {
            let id = resolve(ctx, &entity).await?;
            let found: Entity = ctx.api.get(&["entities", &id.to_string()]).await?;
            ctx.show(&found, || details(ctx, &found));
            Ok(Outcome::Done)
        }
        EntityCommand::Create {
            kind,
            name,
            credentials,
        } => {
            let body = CreateEntity {
                kind: match kind {
                    EntityKindArg::Repository => EntityKind::Repository,
                    EntityKindArg::Organization => EntityKind::Organization,
                    EntityKindArg::Enterprise => EntityKind::Enterprise,
                },
                name,
                credentials,
            };
            let created: Entity = ctx.api.post(&["entities"], &body).await?;
            ctx.show(&created, || details(ctx, &created));
            Ok(Outcome::Done)
        }
        EntityCommand::Delete { entity } => {
            let id = resolve(ctx, &entity).await?;
            let _: serde::de::IgnoredAny =
                ctx.api.delete(&["entities", &id.to_string()], &[]).await?;
            ctx.done(
                &serde_json::json!({ "id": id, "deleted": true }),
                &format!("deleted entity {id}"),
            );
            Ok(Outcome::Done)
        }
    }
}

/// The id of the entity `wanted` names.
pub(crate) async fn resolve(ctx: &Ctx<'_>, wanted: &str) -> Result<Uuid> {
    if let Some(id) = full_id(wanted) {
        return Ok(id);
    }
    let all: EntityList = ctx.api.get_all(&["entities"], &[]).await?;
    pick(
        "entity",
        "scalesetctl entity list",
        wanted,
        &candidates(&all.items),
    )
}

fn candidates(items: &[Entity]) -> Vec<Candidate> {
    items
        .iter()
        .map(|e| Candidate {
            id: e.id,
            name: e.name.clone(),
            describe: format!("{} via {}", e.kind.as_str(), e.credentials),
        })
        .collect()
}

fn table(ctx: &Ctx<'_>, items: &[Entity]) -> String {
    let rows = items
        .iter()
        .map(|e| {
            vec![
                Cell::new(short_id(&e.id)),
                Cell::new(e.kind.as_str()),
                Cell::new(&e.name),
                Cell::new(&e.credentials),
                Cell::new(short_time(&e.created_at)),
            ]
        })
        .collect();
    ctx.out.table(
        &["ID", "KIND", "NAME", "CREDENTIALS", "CREATED"],
        rows,
        "no entities (create one with `scalesetctl entity create`)",
    )
}

fn details(ctx: &Ctx<'_>, e: &Entity) -> String {
    ctx.out.details(vec![
        ("id", Cell::new(e.id)),
        ("kind", Cell::new(e.kind.as_str())),
        ("name", Cell::new(&e.name)),
        (
            "credentials",
            Cell::new(format!("{} ({})", e.credentials, e.credentials_id)),
        ),
        ("created", Cell::new(&e.created_at)),
    ])
}
