//! [`EventStore`] over diesel: the `events` table, trimmed on append to the newest
//! `event_retention` rows per scale set; a repeat of a scale set's newest row is counted on it.

use async_trait::async_trait;
use diesel::prelude::*;

use super::schema::events;
use super::{Context, DbConnection, DieselStore, parse_uuid, write_transaction};
use crate::clock::Timestamp;
use crate::error::{Error, Result};
use crate::event::{Event, EventFilter, EventKind, EventStore, ReasonCode};
use crate::id::ScaleSetId;

#[derive(Queryable, Selectable)]
#[diesel(table_name = events)]
struct Row {
    id: i64,
    scale_set_id: String,
    kind: String,
    code: String,
    reason: String,
    at: i64,
    count: i64,
    last_at: i64,
}

fn from_row(row: Row) -> Result<Event> {
    let key = row.id.to_string();
    Ok(Event {
        id: row.id,
        scale_set_id: ScaleSetId(parse_uuid(
            "events",
            &key,
            "scale_set_id",
            &row.scale_set_id,
        )?),
        // A name this build does not know (an older row, a newer version's) reads as the
        // fallback, never as an error: the trail is for reading.
        kind: EventKind::from_stored(&row.kind),
        code: ReasonCode::from_stored(&row.code),
        reason: row.reason,
        at: Timestamp::from_unix_millis(row.at),
        // Written as 1 and only ever incremented: a value below 1 is a hand-edited row, shown
        // as one occurrence rather than refused.
        count: u64::try_from(row.count).unwrap_or(1).max(1),
        last_at: Timestamp::from_unix_millis(row.last_at.max(row.at)),
    })
}

#[async_trait]
impl EventStore for DieselStore {
    async fn append_event(
        &self,
        scale_set_id: ScaleSetId,
        code: ReasonCode,
        detail: &str,
    ) -> Result<Event> {
        let detail = detail.to_owned();
        self.run("append event", move |conn, ctx| {
            write_transaction(conn, "append event", |conn| {
                append_in(conn, ctx, scale_set_id, code, &detail)
            })
        })
        .await
    }

    async fn list_events(&self, scale_set_id: ScaleSetId, limit: u32) -> Result<Vec<Event>> {
        self.run("list events", move |conn, _| {
            events::table
                .filter(events::scale_set_id.eq(scale_set_id.to_string()))
                .order(events::id.desc())
                .limit(i64::from(limit))
                .select(Row::as_select())
                .load(conn)
                .map_err(Error::backend("list events"))?
                .into_iter()
                .map(from_row)
                .collect()
        })
        .await
    }

    async fn list_recent_events(&self, filter: EventFilter) -> Result<Vec<Event>> {
        self.run("list recent events", move |conn, _| {
            let mut query = events::table.into_boxed();
            if let Some(id) = filter.scale_set_id {
                query = query.filter(events::scale_set_id.eq(id.to_string()));
            }
            if let Some(since) = filter.since {
                query = query.filter(events::last_at.ge(since.unix_millis()));
            }
            if let Some(after) = filter.after {
                query = query.filter(events::id.gt(after));
            }
            let mut rows: Vec<Event> = query
                .order(events::id.desc())
                .limit(i64::from(filter.limit))
                .select(Row::as_select())
                .load(conn)
                .map_err(Error::backend("list recent events"))?
                .into_iter()
                .map(from_row)
                .collect::<Result<_>>()?;
            rows.reverse();
            Ok(rows)
        })
        .await
    }
}

/// [`EventStore::append_event`] inside the caller's transaction.
pub(super) fn append_in(
    conn: &mut DbConnection,
    ctx: &Context,
    scale_set_id: ScaleSetId,
    code: ReasonCode,
    reason: &str,
) -> Result<Event> {
    let key = scale_set_id.to_string();
    let kind = code.kind().as_str();
    let at = ctx.now().unix_millis();
    let newest: Option<Row> = events::table
        .filter(events::scale_set_id.eq(&key))
        .order(events::id.desc())
        .select(Row::as_select())
        .first(conn)
        .optional()
        .map_err(Error::backend("read the newest event"))?;
    if let Some(newest) = newest
        && newest.kind == kind
        && newest.code == code.as_str()
    {
        // A repeat, not a change: counted on the entry it repeats, whose detail becomes the
        // newest (its counters, its next try).
        diesel::update(events::table.find(newest.id))
            .set((
                events::count.eq(events::count + 1),
                events::last_at.eq(at.max(newest.at)),
                events::reason.eq(reason),
            ))
            .execute(conn)
            .map_err(Error::write("event", "count a repeated event"))?;
        let repeated: Row = events::table
            .find(newest.id)
            .select(Row::as_select())
            .get_result(conn)
            .map_err(Error::backend("read the repeated event"))?;
        return from_row(repeated);
    }
    diesel::insert_into(events::table)
        .values((
            events::scale_set_id.eq(&key),
            events::kind.eq(kind),
            events::code.eq(code.as_str()),
            events::reason.eq(reason),
            events::at.eq(at),
            events::count.eq(1),
            events::last_at.eq(at),
        ))
        .execute(conn)
        .map_err(|e| match Error::write("event", "append event")(e) {
            Error::Conflict { .. } => Error::NotFound {
                entity: "scale set",
                key: key.clone(),
            },
            other => other,
        })?;
    let newest: Vec<Row> = events::table
        .filter(events::scale_set_id.eq(&key))
        .order(events::id.desc())
        .limit(1)
        .select(Row::as_select())
        .load(conn)
        .map_err(Error::backend("read event"))?;
    let event = newest.into_iter().next().ok_or_else(|| Error::NotFound {
        entity: "event",
        key: key.clone(),
    })?;
    // The oldest id to keep; everything older goes.
    let keep_from: Option<i64> = events::table
        .filter(events::scale_set_id.eq(&key))
        .order(events::id.desc())
        .offset(i64::from(ctx.event_retention) - 1)
        .limit(1)
        .select(events::id)
        .first(conn)
        .optional()
        .map_err(Error::backend("trim events"))?;
    if let Some(keep_from) = keep_from {
        diesel::delete(
            events::table
                .filter(events::scale_set_id.eq(&key))
                .filter(events::id.lt(keep_from)),
        )
        .execute(conn)
        .map_err(Error::backend("trim events"))?;
    }
    from_row(event)
}
