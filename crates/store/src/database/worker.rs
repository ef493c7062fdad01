//! [`WorkerStore`] over diesel: the `workers` table, one row per worker name with the expiry
//! its last heartbeat set. Rows are never read by anything but liveness, so an expired row is
//! simply ignored (and overwritten by the same name's next heartbeat).

use std::time::Duration;

use async_trait::async_trait;
use diesel::prelude::*;
use diesel::upsert::excluded;

use super::schema::workers;
use super::{DbConnection, DieselStore};
use crate::error::{Error, Result};
use crate::worker::WorkerStore;

#[async_trait]
impl WorkerStore for DieselStore {
    async fn heartbeat_worker(&self, name: &str, ttl: Duration) -> Result<()> {
        let name = name.to_owned();
        self.run("heartbeat worker", move |conn, ctx| {
            let now = ctx.now();
            let insert = diesel::insert_into(workers::table).values((
                workers::name.eq(&name),
                workers::expires_at.eq(now.saturating_add(ttl).unix_millis()),
                workers::heartbeat_at.eq(now.unix_millis()),
            ));
            // One statement, so two heartbeats of the same name cannot race into a conflict;
            // the diesel DSL offers the upsert per backend only.
            let set = (
                workers::expires_at.eq(excluded(workers::expires_at)),
                workers::heartbeat_at.eq(excluded(workers::heartbeat_at)),
            );
            match conn {
                DbConnection::Postgres(c) => insert
                    .on_conflict(workers::name)
                    .do_update()
                    .set(set)
                    .execute(c),
                DbConnection::Sqlite(c) => insert
                    .on_conflict(workers::name)
                    .do_update()
                    .set(set)
                    .execute(c),
            }
            .map(|_| ())
            .map_err(Error::backend("heartbeat worker"))
        })
        .await
    }

    async fn live_workers(&self) -> Result<Vec<String>> {
        self.run("list live workers", move |conn, ctx| {
            workers::table
                .filter(workers::expires_at.gt(ctx.now().unix_millis()))
                .select(workers::name)
                .order(workers::name.asc())
                .load(conn)
                .map_err(Error::backend("list live workers"))
        })
        .await
    }

    async fn drain_worker(&self, name: &str) -> Result<bool> {
        let name = name.to_owned();
        self.run("drain worker", move |conn, ctx| {
            diesel::update(
                workers::table
                    .filter(workers::name.eq(&name))
                    .filter(workers::expires_at.gt(ctx.now().unix_millis())),
            )
            .set(workers::draining.eq(true))
            .execute(conn)
            .map(|rows| rows > 0)
            .map_err(Error::backend("drain worker"))
        })
        .await
    }

    async fn draining_workers(&self) -> Result<Vec<String>> {
        self.run("list draining workers", move |conn, ctx| {
            workers::table
                .filter(workers::expires_at.gt(ctx.now().unix_millis()))
                .filter(workers::draining.eq(true))
                .select(workers::name)
                .order(workers::name.asc())
                .load(conn)
                .map_err(Error::backend("list draining workers"))
        })
        .await
    }

    async fn remove_worker(&self, name: &str) -> Result<()> {
        let name = name.to_owned();
        self.run("remove worker", move |conn, _| {
            diesel::delete(workers::table.find(&name))
                .execute(conn)
                .map(|_| ())
                .map_err(Error::backend("remove worker"))
        })
        .await
    }
}
