//! [`ControllerStore`] over diesel: the single `controller` row.

use async_trait::async_trait;
use diesel::prelude::*;
use uuid::Uuid;

use super::schema::{api_tokens, controller};
use super::{DieselStore, parse_uuid, write_transaction};
use crate::controller::{ControllerBinding, ControllerStore};
use crate::error::{Error, Result};

fn read(conn: &mut super::DbConnection) -> Result<Option<Uuid>> {
    let stored: Option<String> = controller::table
        .select(controller::controller_id)
        .filter(controller::singleton.eq(1))
        .get_result(conn)
        .optional()
        .map_err(Error::backend("read controller id"))?;
    stored
        .map(|text| parse_uuid("controller", "1", "controller_id", &text))
        .transpose()
}

#[async_trait]
impl ControllerStore for DieselStore {
    async fn controller_id(&self) -> Result<Option<Uuid>> {
        self.run("read controller id", |conn, _| read(conn)).await
    }

    async fn check_writes(&self) -> Result<()> {
        if !self.ctx.writes_failing() {
            return Ok(());
        }
        const OPERATION: &str = "checks that it takes writes";
        self.run(OPERATION, |conn, ctx| {
            write_transaction(conn, OPERATION, |conn| {
                // A row no reader ever sees (it is gone when the transaction commits), large
                // enough to need pages of its own.
                let id = Uuid::new_v4().to_string();
                let filler = id.repeat(128).into_bytes();
                diesel::insert_into(api_tokens::table)
                    .values((
                        api_tokens::id.eq(&id),
                        api_tokens::name.eq(format!("scaleset write check {id}")),
                        api_tokens::token_hash.eq(filler),
                        api_tokens::created_at.eq(ctx.now().unix_millis()),
                    ))
                    .execute(conn)
                    .map_err(Error::backend(OPERATION))?;
                diesel::delete(api_tokens::table.find(&id))
                    .execute(conn)
                    .map_err(Error::backend(OPERATION))?;
                Ok(())
            })
        })
        .await?;
        self.ctx.writes_taken();
        Ok(())
    }

    async fn bind_controller(&self, configured: Option<Uuid>) -> Result<ControllerBinding> {
        self.run("bind controller id", move |conn, ctx| {
            if let Some(stored) = read(conn)? {
                return match configured {
                    Some(configured) if configured == stored => {
                        Ok(ControllerBinding::Matched(stored))
                    }
                    Some(configured) => Err(Error::ControllerMismatch { stored, configured }),
                    None => Ok(ControllerBinding::Stored(stored)),
                };
            }
            let candidate = configured.unwrap_or_else(Uuid::new_v4);
            let inserted = diesel::insert_into(controller::table)
                .values((
                    controller::singleton.eq(1),
                    controller::controller_id.eq(candidate.to_string()),
                    controller::created_at.eq(ctx.now().unix_millis()),
                ))
                .execute(conn);
            match inserted {
                Ok(_) => Ok(match configured {
                    Some(id) => ControllerBinding::Adopted(id),
                    None => ControllerBinding::Generated(candidate),
                }),
                // Another process bound the database first: judge against its id.
                Err(diesel::result::Error::DatabaseError(
                    diesel::result::DatabaseErrorKind::UniqueViolation,
                    _,
                )) => {
                    let stored = read(conn)?.ok_or_else(|| Error::NotFound {
                        entity: "controller",
                        key: "1".to_owned(),
                    })?;
                    match configured {
                        Some(configured) if configured == stored => {
                            Ok(ControllerBinding::Matched(stored))
                        }
                        Some(configured) => Err(Error::ControllerMismatch { stored, configured }),
                        None => Ok(ControllerBinding::Stored(stored)),
                    }
                }
                Err(source) => Err(Error::Backend {
                    operation: "bind controller id",
                    source,
                }),
            }
        })
        .await
    }
}
