//! [`RunnerDownloadStore`] over diesel: the `runner_downloads` table, one row per entity,
//! written by one statement (an upsert) per read so two workers reading the same entity
//! cannot race into a conflict.

use async_trait::async_trait;
use diesel::prelude::*;
use diesel::upsert::excluded;

use super::schema::runner_downloads;
use super::{DbConnection, DieselStore};
use crate::clock::Timestamp;
use crate::error::{Error, Result};
use crate::id::EntityId;
use crate::runner_downloads::{RunnerDownloadStore, RunnerDownloads, ToolDownload};

#[derive(Queryable, Selectable)]
#[diesel(table_name = runner_downloads)]
struct Row {
    entity_id: String,
    downloads: Option<String>,
    read_at: Option<i64>,
    failure: Option<String>,
    failed_at: Option<i64>,
}

fn from_row(entity: EntityId, row: Row) -> Result<RunnerDownloads> {
    let corrupt = |column: &'static str, reason: String| Error::Corrupt {
        table: "runner_downloads",
        key: row.entity_id.clone(),
        column,
        reason,
    };
    let read = match (&row.downloads, row.read_at) {
        (Some(json), Some(at)) => {
            let list: Vec<ToolDownload> = serde_json::from_str(json)
                .map_err(|e| corrupt("downloads", format!("not a list of downloads: {e}")))?;
            Some((list, Timestamp::from_unix_millis(at)))
        }
        (None, None) => None,
        _ => {
            return Err(corrupt(
                "read_at",
                "downloads and read_at must be both set or both NULL".to_owned(),
            ));
        }
    };
    let failure = match (&row.failure, row.failed_at) {
        (Some(failure), Some(at)) => Some((failure.clone(), Timestamp::from_unix_millis(at))),
        (None, None) => None,
        _ => {
            return Err(corrupt(
                "failed_at",
                "failure and failed_at must be both set or both NULL".to_owned(),
            ));
        }
    };
    Ok(RunnerDownloads {
        entity_id: entity,
        read,
        failure,
    })
}

#[async_trait]
impl RunnerDownloadStore for DieselStore {
    async fn record_runner_downloads(&self, entity: EntityId, list: &[ToolDownload]) -> Result<()> {
        let json = serde_json::to_string(list).map_err(|e| Error::Config {
            reason: format!("cannot encode the runner downloads of entity {entity}: {e}"),
        })?;
        self.run("record runner downloads", move |conn, ctx| {
            let now = ctx.now().unix_millis();
            let insert = diesel::insert_into(runner_downloads::table).values((
                runner_downloads::entity_id.eq(entity.to_string()),
                runner_downloads::downloads.eq(Some(&json)),
                runner_downloads::read_at.eq(Some(now)),
                runner_downloads::failure.eq(None::<String>),
                runner_downloads::failed_at.eq(None::<i64>),
            ));
            let set = (
                runner_downloads::downloads.eq(excluded(runner_downloads::downloads)),
                runner_downloads::read_at.eq(excluded(runner_downloads::read_at)),
                runner_downloads::failure.eq(excluded(runner_downloads::failure)),
                runner_downloads::failed_at.eq(excluded(runner_downloads::failed_at)),
            );
            match conn {
                DbConnection::Postgres(c) => insert
                    .on_conflict(runner_downloads::entity_id)
                    .do_update()
                    .set(set)
                    .execute(c),
                DbConnection::Sqlite(c) => insert
                    .on_conflict(runner_downloads::entity_id)
                    .do_update()
                    .set(set)
                    .execute(c),
            }
            .map(|_| ())
            .map_err(Error::write("runner downloads", "record runner downloads"))
        })
        .await
    }

    async fn record_runner_downloads_failure(&self, entity: EntityId, failure: &str) -> Result<()> {
        let failure = failure.to_owned();
        self.run("record a runner downloads failure", move |conn, ctx| {
            let now = ctx.now().unix_millis();
            let insert = diesel::insert_into(runner_downloads::table).values((
                runner_downloads::entity_id.eq(entity.to_string()),
                runner_downloads::downloads.eq(None::<String>),
                runner_downloads::read_at.eq(None::<i64>),
                runner_downloads::failure.eq(Some(&failure)),
                runner_downloads::failed_at.eq(Some(now)),
            ));
            // The list read before stays: only the failure columns change.
            let set = (
                runner_downloads::failure.eq(excluded(runner_downloads::failure)),
                runner_downloads::failed_at.eq(excluded(runner_downloads::failed_at)),
            );
            match conn {
                DbConnection::Postgres(c) => insert
                    .on_conflict(runner_downloads::entity_id)
                    .do_update()
                    .set(set)
                    .execute(c),
                DbConnection::Sqlite(c) => insert
                    .on_conflict(runner_downloads::entity_id)
                    .do_update()
                    .set(set)
                    .execute(c),
            }
            .map(|_| ())
            .map_err(Error::write(
                "runner downloads",
                "record a runner downloads failure",
            ))
        })
        .await
    }

    async fn runner_downloads(&self, entity: EntityId) -> Result<Option<RunnerDownloads>> {
        self.run("read runner downloads", move |conn, _| {
            runner_downloads::table
                .find(entity.to_string())
                .select(Row::as_select())
                .get_result(conn)
                .optional()
                .map_err(Error::backend("read runner downloads"))?
                .map(|row| from_row(entity, row))
                .transpose()
        })
        .await
    }
}
