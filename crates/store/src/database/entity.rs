//! [`EntityStore`] over diesel: the `entities` table.

use async_trait::async_trait;
use diesel::prelude::*;

use super::schema::entities;
use super::{DieselStore, enum_from_db, parse_uuid};
use crate::clock::Timestamp;
use crate::entity::{Entity, EntityKind, EntityStore, NewEntity};
use crate::error::{Error, Result};
use crate::id::{CredentialsId, EntityId};

#[derive(Queryable, Selectable, Insertable)]
#[diesel(table_name = entities)]
struct Row {
    id: String,
    credentials_id: String,
    kind: String,
    path: String,
    created_at: i64,
}

fn from_row(row: Row) -> Result<Entity> {
    let id = EntityId(parse_uuid("entities", &row.id, "id", &row.id)?);
    let credentials_id = CredentialsId(parse_uuid(
        "entities",
        &row.id,
        "credentials_id",
        &row.credentials_id,
    )?);
    let kind = match EntityKind::from_stored(&row.kind, &row.path) {
        Some(kind) => kind,
        // A known kind with a path it cannot have (a repository path must be owner/name).
        None if EntityKind::from_stored(&row.kind, "owner/name").is_some() => {
            return Err(Error::Corrupt {
                table: "entities",
                key: row.id,
                column: "path",
                reason: format!("{:?} is not a valid {} path", row.path, row.kind),
            });
        }
        None => enum_from_db("entities", &row.id, "kind", &row.kind, |_| None)?,
    };
    Ok(Entity {
        id,
        kind,
        credentials_id,
        created_at: Timestamp::from_unix_millis(row.created_at),
    })
}

#[async_trait]
impl EntityStore for DieselStore {
    async fn create_entity(&self, new: NewEntity) -> Result<Entity> {
        self.run("create entity", move |conn, ctx| {
            let row = Row {
                id: EntityId::generate().to_string(),
                credentials_id: new.credentials_id.to_string(),
                kind: new.kind.kind_str().to_owned(),
                path: new.kind.path(),
                created_at: ctx.now().unix_millis(),
            };
            diesel::insert_into(entities::table)
                .values(&row)
                .execute(conn)
                .map_err(Error::write("entity", "create entity"))?;
            from_row(row)
        })
        .await
    }

    async fn get_entity(&self, id: EntityId) -> Result<Entity> {
        self.run("read entity", move |conn, _| {
            let row = entities::table
                .find(id.to_string())
                .select(Row::as_select())
                .get_result(conn)
                .optional()
                .map_err(Error::backend("read entity"))?
                .ok_or_else(|| Error::NotFound {
                    entity: "entity",
                    key: id.to_string(),
                })?;
            from_row(row)
        })
        .await
    }

    async fn list_entities(&self) -> Result<Vec<Entity>> {
        self.run("list entities", |conn, _| {
            entities::table
                .order((entities::kind, entities::path, entities::id))
                .select(Row::as_select())
                .load(conn)
                .map_err(Error::backend("list entities"))?
                .into_iter()
                .map(from_row)
                .collect()
        })
        .await
    }

    async fn delete_entity(&self, id: EntityId) -> Result<()> {
        self.run("delete entity", move |conn, _| {
            let deleted = diesel::delete(entities::table.find(id.to_string()))
                .execute(conn)
                .map_err(Error::write("entity", "delete entity"))?;
            if deleted == 0 {
                return Err(Error::NotFound {
                    entity: "entity",
                    key: id.to_string(),
                });
            }
            Ok(())
        })
        .await
    }
}
