//! [`ScaleSetStore`] over diesel: the `scale_sets` table, generation-checked updates and
//! fenced cursor writes.

use std::time::Duration;

use async_trait::async_trait;
use diesel::prelude::*;

use super::event::append_in;
use super::lease::{check_fence, in_lock_order};
use super::schema::{leases, scale_set_health, scale_set_samples, scale_set_watch, scale_sets};
use super::{
    Context, DbConnection, DieselStore, count_from_db, enum_from_db, json_from_db, parse_uuid,
    secs_to_db, write_transaction,
};
use crate::clock::Timestamp;
use crate::error::{Error, Result};
use crate::event::{Event, ReasonCode};
use crate::id::{EntityId, ScaleSetId};
use crate::lease::Lease;
use crate::scale_set::{
    AdoptionPolicy, Creation, MODIFY_ATTEMPTS, NewScaleSet, Progress, Provenance, ProviderError,
    Revision, RunnerGroup, SAMPLE_WINDOW, Sample, ScaleSet, ScaleSetChanges, ScaleSetSpec,
    ScaleSetState, ScaleSetStore,
};
use scaleset_adopt::{Evidence, Refusal, Takeover};
use scaleset_domain::{ProviderName, RunnerPrefix, ScaleSetName};

const TABLE: &str = "scale_sets";

/// The most rows read by key in one statement (SQLite allows 32,766 parameters in a statement,
/// PostgreSQL 65,535).
const KEYS_PER_STATEMENT: usize = 1_000;

#[derive(Queryable, Selectable, Insertable)]
#[diesel(table_name = scale_sets)]
struct Row {
    id: String,
    entity_id: String,
    name: String,
    runner_group_name: String,
    runner_group_id: Option<i64>,
    labels: String,
    disable_update: bool,
    provider: String,
    image: String,
    flavor: String,
    min_idle: i64,
    max_runners: i64,
    bootstrap_timeout_secs: i64,
    runner_prefix: String,
    extra_specs: String,
    enabled: bool,
    adoption_policy: String,
    repair: bool,
    github_id: Option<i64>,
    provenance: Option<String>,
    evidence: String,
    state: String,
    state_reason: String,
    last_message_id: i64,
    session_id: Option<String>,
    desired_runners: i64,
    generation: i64,
    created_at: i64,
    updated_at: i64,
    last_message_at: Option<i64>,
    jobs_waiting: i64,
    refusal: Option<String>,
    scale_down_delay_secs: i64,
    max_idle_lifetime_secs: i64,
    max_lifetime_secs: i64,
    takeover: Option<String>,
    os_type: String,
    os_arch: String,
    runner_setup: String,
}

/// A `scale_set_health` row: what needs attention beyond the state.
#[derive(Queryable, Selectable)]
#[diesel(table_name = scale_set_health)]
struct Health {
    scale_set_id: String,
    jobs_waiting_since: Option<i64>,
    provider_error: Option<String>,
    provider_error_at: Option<i64>,
    retry_requested_at: Option<i64>,
}

/// The health rows of `keys` (all when `None`), by scale set id.
fn health(
    conn: &mut DbConnection,
    keys: Option<&[String]>,
) -> Result<std::collections::HashMap<String, Health>> {
    let mut query = scale_set_health::table
        .select(Health::as_select())
        .into_boxed();
    if let Some(keys) = keys {
        query = query.filter(scale_set_health::scale_set_id.eq_any(keys));
    }
    Ok(query
        .load::<Health>(conn)
        .map_err(Error::backend("read scale set health"))?
        .into_iter()
        .map(|h| (h.scale_set_id.clone(), h))
        .collect())
}

/// The last revision the store handed out (the SQLite counter's row, the PostgreSQL sequence's
/// last value; 0 before the first).
fn revision_counter(conn: &mut DbConnection) -> Result<i64> {
    #[derive(QueryableByName)]
    struct Counter {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        value: i64,
    }
    let read = match conn {
        DbConnection::Sqlite(conn) => {
            diesel::sql_query("SELECT value FROM scale_set_revision").get_result::<Counter>(conn)
        }
        // `last_value` is 1 before the first `nextval`, with `is_called` false.
        DbConnection::Postgres(conn) => diesel::sql_query(
            "SELECT CASE WHEN is_called THEN last_value ELSE last_value - 1 END AS value \
             FROM scale_set_revision",
        )
        .get_result::<Counter>(conn),
    };
    Ok(read
        .map_err(Error::backend("read the scale sets' revision"))?
        .value)
}

/// Makes sure the scale set has a health row to update.
fn ensure_health(conn: &mut DbConnection, id: &str) -> QueryResult<()> {
    let exists = scale_set_health::table
        .find(id)
        .select(scale_set_health::scale_set_id)
        .get_result::<String>(conn)
        .optional()?
        .is_some();
    if !exists {
        diesel::insert_into(scale_set_health::table)
            .values(scale_set_health::scale_set_id.eq(id))
            .execute(conn)?;
    }
    Ok(())
}

fn to_json(field: &'static str, value: &impl serde::Serialize) -> Result<String> {
    serde_json::to_string(value).map_err(|e| Error::Invalid {
        field,
        reason: format!("cannot be written as JSON: {e}"),
    })
}

fn from_row(row: Row, health: Option<Health>) -> Result<ScaleSet> {
    let key = row.id.as_str();
    let bootstrap_secs = u64::try_from(row.bootstrap_timeout_secs).map_err(|_| Error::Corrupt {
        table: TABLE,
        key: key.to_owned(),
        column: "bootstrap_timeout_secs",
        reason: format!("{} is negative", row.bootstrap_timeout_secs),
    })?;
    let provenance = row
        .provenance
        .as_deref()
        .map(|text| provenance_from_db(key, text, row.github_id))
        .transpose()?;
    // `null`: never ensured (rows before typed evidence stored the same JSON array).
    let evidence: Option<Vec<Evidence>> = json_from_db(TABLE, key, "evidence", &row.evidence)?;
    let refusal = row
        .refusal
        .as_deref()
        .map(|text| json_from_db::<Refusal>(TABLE, key, "refusal", text))
        .transpose()?;
    let takeover = row
        .takeover
        .as_deref()
        .map(|text| json_from_db::<Takeover>(TABLE, key, "takeover", text))
        .transpose()?;
    Ok(ScaleSet {
        id: ScaleSetId(parse_uuid(TABLE, key, "id", &row.id)?),
        entity_id: EntityId(parse_uuid(TABLE, key, "entity_id", &row.entity_id)?),
        spec: ScaleSetSpec {
            runner_group: RunnerGroup {
                name: row.runner_group_name,
                id: row.runner_group_id,
            },
            labels: json_from_db(TABLE, key, "labels", &row.labels)?,
            disable_update: row.disable_update,
            provider: name_from_db(key, "provider", &row.provider, ProviderName::parse)?,
            image: row.image,
            flavor: row.flavor,
            os_type: enum_from_db(TABLE, key, "os_type", &row.os_type, crate::OsType::parse)?,
            os_arch: enum_from_db(TABLE, key, "os_arch", &row.os_arch, crate::OsArch::parse)?,
            runner_setup: json_from_db(TABLE, key, "runner_setup", &row.runner_setup)?,
            min_idle: count_from_db(TABLE, key, "min_idle", row.min_idle)?,
            max_runners: count_from_db(TABLE, key, "max_runners", row.max_runners)?,
            bootstrap_timeout: Duration::from_secs(bootstrap_secs),
            runner_prefix: if row.runner_prefix.is_empty() {
                None
            } else {
                Some(name_from_db(
                    key,
                    "runner_prefix",
                    &row.runner_prefix,
                    RunnerPrefix::parse,
                )?)
            },
            // Null is "none" as older versions stored it; the spec holds a table.
            extra_specs: match json_from_db(TABLE, key, "extra_specs", &row.extra_specs)? {
                serde_json::Value::Null => serde_json::Value::Object(Default::default()),
                value => value,
            },
            enabled: row.enabled,
            adoption_policy: enum_from_db(
                TABLE,
                key,
                "adoption_policy",
                &row.adoption_policy,
                AdoptionPolicy::from_stored,
            )?,
            repair: row.repair,
            scale_down_delay: secs_from_db(
                key,
                "scale_down_delay_secs",
                row.scale_down_delay_secs,
            )?,
            max_idle_lifetime: secs_from_db(
                key,
                "max_idle_lifetime_secs",
                row.max_idle_lifetime_secs,
            )?,
            max_lifetime: secs_from_db(key, "max_lifetime_secs", row.max_lifetime_secs)?,
            name: name_from_db(key, "name", &row.name, ScaleSetName::parse)?,
        },
        github_id: row.github_id,
        provenance,
        evidence: evidence.unwrap_or_default(),
        refusal,
        takeover,
        state: enum_from_db(TABLE, key, "state", &row.state, ScaleSetState::from_stored)?,
        state_reason: row.state_reason,
        last_message_id: row.last_message_id,
        session_id: row.session_id,
        desired_runners: count_from_db(TABLE, key, "desired_runners", row.desired_runners)?,
        generation: row.generation,
        created_at: Timestamp::from_unix_millis(row.created_at),
        updated_at: Timestamp::from_unix_millis(row.updated_at),
        last_message_at: row.last_message_at.map(Timestamp::from_unix_millis),
        jobs_waiting: count_from_db(TABLE, key, "jobs_waiting", row.jobs_waiting)?,
        jobs_waiting_since: health
            .as_ref()
            .and_then(|h| h.jobs_waiting_since)
            .map(Timestamp::from_unix_millis),
        retry_requested_at: health
            .as_ref()
            .and_then(|h| h.retry_requested_at)
            .map(Timestamp::from_unix_millis),
        provider_error: health.and_then(|h| match (h.provider_error, h.provider_error_at) {
            (Some(message), Some(at)) => Some(ProviderError {
                message,
                at: Timestamp::from_unix_millis(at),
            }),
            _ => None,
        }),
    })
}

/// A name column read through its domain type: a row the store wrote holds a parsed one, so
/// one that does not parse was written by hand or by a version before the rule.
fn name_from_db<T, E: std::fmt::Display>(
    key: &str,
    column: &'static str,
    text: &str,
    parse: impl FnOnce(&str) -> std::result::Result<T, E>,
) -> Result<T> {
    parse(text).map_err(|error| Error::Corrupt {
        table: TABLE,
        key: key.to_owned(),
        column,
        reason: error.to_string(),
    })
}

/// The stored provenance text; `created` is the creation of the row's GitHub scale set, so a
/// row saying `created` without a GitHub id is corrupt.
fn secs_from_db(key: &str, column: &'static str, secs: i64) -> Result<Duration> {
    u64::try_from(secs)
        .map(Duration::from_secs)
        .map_err(|_| Error::Corrupt {
            table: TABLE,
            key: key.to_owned(),
            column,
            reason: format!("{secs} is negative"),
        })
}

fn provenance_from_db(key: &str, text: &str, github_id: Option<i64>) -> Result<Provenance> {
    let corrupt = |reason: String| Error::Corrupt {
        table: TABLE,
        key: key.to_owned(),
        column: "provenance",
        reason,
    };
    match text {
        "created" => github_id
            .map(|id| Provenance::Created(Creation::stored(id)))
            .ok_or_else(|| corrupt("created, but no GitHub id is stored".to_owned())),
        "known" => Ok(Provenance::Known),
        "adopted" => Ok(Provenance::Adopted),
        other => Err(corrupt(format!("unknown value {other:?}"))),
    }
}

fn load(conn: &mut DbConnection, id: ScaleSetId) -> Result<ScaleSet> {
    let row = scale_sets::table
        .find(id.to_string())
        .select(Row::as_select())
        .get_result(conn)
        .optional()
        .map_err(Error::backend("read scale set"))?
        .ok_or_else(|| Error::NotFound {
            entity: "scale set",
            key: id.to_string(),
        })?;
    let key = [row.id.clone()];
    let found = health(conn, Some(&key))?.remove(&key[0]);
    from_row(row, found)
}

fn new_row(ctx: &Context, new: &NewScaleSet) -> Result<Row> {
    let now = ctx.now().unix_millis();
    let spec = &new.spec;
    Ok(Row {
        id: ScaleSetId::generate().to_string(),
        entity_id: new.entity_id.to_string(),
        name: spec.name.as_str().to_owned(),
        runner_group_name: spec.runner_group.name.clone(),
        runner_group_id: spec.runner_group.id,
        labels: to_json("labels", &spec.labels)?,
        disable_update: spec.disable_update,
        provider: spec.provider.as_str().to_owned(),
        image: spec.image.clone(),
        flavor: spec.flavor.clone(),
        min_idle: i64::from(spec.min_idle),
        max_runners: i64::from(spec.max_runners),
        bootstrap_timeout_secs: secs_to_db("bootstrap_timeout", spec.bootstrap_timeout)?,
        runner_prefix: spec
            .runner_prefix
            .as_ref()
            .map(|p| p.as_str().to_owned())
            .unwrap_or_default(),
        extra_specs: to_json("extra_specs", &spec.extra_specs)?,
        enabled: spec.enabled,
        adoption_policy: spec.adoption_policy.as_str().to_owned(),
        repair: spec.repair,
        scale_down_delay_secs: secs_to_db("scale_down_delay", spec.scale_down_delay)?,
        max_idle_lifetime_secs: secs_to_db("max_idle_lifetime", spec.max_idle_lifetime)?,
        max_lifetime_secs: secs_to_db("max_lifetime", spec.max_lifetime)?,
        os_type: spec.os_type.as_str().to_owned(),
        os_arch: spec.os_arch.as_str().to_owned(),
        runner_setup: to_json("runner_setup", &spec.runner_setup)?,
        github_id: None,
        provenance: None,
        evidence: "null".to_owned(),
        state: ScaleSetState::Pending.as_str().to_owned(),
        state_reason: String::new(),
        last_message_id: 0,
        session_id: None,
        desired_runners: 0,
        generation: 1,
        created_at: now,
        updated_at: now,
        last_message_at: None,
        jobs_waiting: 0,
        refusal: None,
        takeover: None,
    })
}

/// Runs a fenced single-column write on the lease's scale set.
fn fenced_update<F>(
    conn: &mut DbConnection,
    lease: &Lease,
    operation: &'static str,
    write: F,
) -> Result<()>
where
    F: FnOnce(&mut DbConnection, String) -> QueryResult<usize>,
{
    write_transaction(conn, operation, |conn| {
        check_fence(conn, lease)?;
        let updated =
            write(conn, lease.scale_set_id.to_string()).map_err(Error::backend(operation))?;
        if updated == 0 {
            return Err(Error::NotFound {
                entity: "scale set",
                key: lease.scale_set_id.to_string(),
            });
        }
        Ok(())
    })
}

/// Stores `sample` of the lease's scale set inside the caller's write transaction, fenced by
/// `lease` (nothing is written when it was taken over), and prunes the set's samples older than
/// [`SAMPLE_WINDOW`] before it, all but the newest of them (its figures hold into the window).
fn write_sample(conn: &mut DbConnection, lease: &Lease, sample: &Sample) -> Result<()> {
    const OPERATION: &str = "record sample";
    check_fence(conn, lease)?;
    let id = lease.scale_set_id.to_string();
    let at = sample.at.unix_millis();
    let window = i64::try_from(SAMPLE_WINDOW.as_millis()).unwrap_or(i64::MAX);
    let latency = sample
        .start_latency
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
    let newest_before_the_window: Option<i64> = scale_set_samples::table
        .filter(scale_set_samples::scale_set_id.eq(&id))
        .filter(scale_set_samples::at.lt(at.saturating_sub(window)))
        .select(diesel::dsl::max(scale_set_samples::at))
        .get_result(conn)
        .map_err(Error::backend(OPERATION))?;
    diesel::delete(
        scale_set_samples::table
            .filter(scale_set_samples::scale_set_id.eq(&id))
            .filter(
                scale_set_samples::at
                    .lt(newest_before_the_window.unwrap_or(i64::MIN))
                    .or(scale_set_samples::at.eq(at)),
            ),
    )
    .execute(conn)
    .map_err(Error::backend(OPERATION))?;
    diesel::insert_into(scale_set_samples::table)
        .values((
            scale_set_samples::scale_set_id.eq(&id),
            scale_set_samples::at.eq(at),
            scale_set_samples::jobs_waiting.eq(i64::from(sample.jobs_waiting)),
            scale_set_samples::idle.eq(i64::from(sample.idle)),
            scale_set_samples::busy.eq(i64::from(sample.busy)),
            scale_set_samples::starting.eq(i64::from(sample.starting)),
            scale_set_samples::start_latency_ms.eq(latency),
        ))
        .execute(conn)
        .map_err(Error::backend(OPERATION))?;
    Ok(())
}

/// The columns a [`Progress`] writes (`None` leaves a column as it is).
#[derive(AsChangeset)]
#[diesel(table_name = scale_sets)]
struct ProgressChanges {
    last_message_id: Option<i64>,
    last_message_at: Option<Option<i64>>,
    desired_runners: Option<i64>,
    jobs_waiting: Option<i64>,
    updated_at: Option<i64>,
}

#[async_trait]
impl ScaleSetStore for DieselStore {
    async fn create_scale_set(&self, new: NewScaleSet) -> Result<ScaleSet> {
        self.run("create scale set", move |conn, ctx| {
            let row = new_row(ctx, &new)?;
            diesel::insert_into(scale_sets::table)
                .values(&row)
                .execute(conn)
                .map_err(Error::write("scale set", "create scale set"))?;
            from_row(row, None)
        })
        .await
    }

    async fn get_scale_set(&self, id: ScaleSetId) -> Result<ScaleSet> {
        self.run("read scale set", move |conn, _| load(conn, id))
            .await
    }

    async fn find_scale_set(
        &self,
        entity_id: EntityId,
        runner_group: &str,
        name: &str,
    ) -> Result<Option<ScaleSet>> {
        let (runner_group, name) = (runner_group.to_owned(), name.to_owned());
        self.run("find scale set", move |conn, _| {
            scale_sets::table
                .filter(scale_sets::entity_id.eq(entity_id.to_string()))
                .filter(scale_sets::runner_group_name.eq(&runner_group))
                .filter(scale_sets::name.eq(&name))
                .select(Row::as_select())
                .get_result(conn)
                .optional()
                .map_err(Error::backend("find scale set"))?
                .map(|row| {
                    let key = [row.id.clone()];
                    let found = health(conn, Some(&key))?.remove(&key[0]);
                    from_row(row, found)
                })
                .transpose()
        })
        .await
    }

    async fn list_scale_sets(&self, entity_id: Option<EntityId>) -> Result<Vec<ScaleSet>> {
        self.run("list scale sets", move |conn, _| {
            let mut query = scale_sets::table
                .order((
                    scale_sets::name,
                    scale_sets::runner_group_name,
                    scale_sets::id,
                ))
                .select(Row::as_select())
                .into_boxed();
            if let Some(entity_id) = entity_id {
                query = query.filter(scale_sets::entity_id.eq(entity_id.to_string()));
            }
            let rows: Vec<Row> = query
                .load(conn)
                .map_err(Error::backend("list scale sets"))?;
            // One read of every health row: fewer than the scale sets, and no list of ids to
            // bind (thousands of scale sets would exceed a backend's parameter limit).
            let mut healths = health(conn, None)?;
            rows.into_iter()
                .map(|row| {
                    let found = healths.remove(&row.id);
                    from_row(row, found)
                })
                .collect()
        })
        .await
    }

    async fn scale_sets_changed_since(&self, since: Option<Revision>) -> Result<ScaleSetChanges> {
        self.run("read changed scale sets", move |conn, _| {
            // The database, the deletions and the revision before the rows: a write between the reads is
            // then either in `changed` or above `revision` (read again next time), never lost.
            let (incarnation, deletions): (String, i64) = scale_set_watch::table
                .select((scale_set_watch::incarnation, scale_set_watch::deletions))
                .get_result(conn)
                .map_err(Error::backend("read the scale sets' deletions"))?;
            // The counter, not the highest revision of a row: deleting the newest-written row
            // would lower that, which a reader takes for another database.
            let revision = Revision::new(revision_counter(conn)?);
            // Two index range scans, not one query with an OR across the tables: PostgreSQL
            // plans that as a scan of every row (220 ms at 100,000 scale sets).
            let mut query = scale_sets::table.select(Row::as_select()).into_boxed();
            if let Some(since) = since {
                query = query.filter(scale_sets::revision.gt(since.get()));
            }
            let mut rows: Vec<Row> = query
                .load(conn)
                .map_err(Error::backend("read changed scale sets"))?;
            if let Some(since) = since {
                let read: std::collections::HashSet<String> =
                    rows.iter().map(|row| row.id.clone()).collect();
                let health_written: Vec<String> = scale_set_health::table
                    .filter(scale_set_health::revision.gt(since.get()))
                    .select(scale_set_health::scale_set_id)
                    .load(conn)
                    .map_err(Error::backend("read changed scale set health"))?;
                let more: Vec<String> = health_written
                    .into_iter()
                    .filter(|id| !read.contains(id))
                    .collect();
                for keys in more.chunks(KEYS_PER_STATEMENT) {
                    rows.extend(
                        scale_sets::table
                            .filter(scale_sets::id.eq_any(keys))
                            .select(Row::as_select())
                            .load(conn)
                            .map_err(Error::backend("read changed scale sets"))?,
                    );
                }
            }
            // Their health rows by key when few (a backend limits the parameters of one
            // statement), else every health row in one read.
            let mut healths = if rows.len() <= KEYS_PER_STATEMENT {
                let keys: Vec<String> = rows.iter().map(|row| row.id.clone()).collect();
                health(conn, Some(&keys))?
            } else {
                health(conn, None)?
            };
            let changed = rows
                .into_iter()
                .map(|row| {
                    let found = healths.remove(&row.id);
                    from_row(row, found)
                })
                .collect::<Result<Vec<ScaleSet>>>()?;
            Ok(ScaleSetChanges {
                changed,
                incarnation,
                deletions: u64::try_from(deletions).map_err(|_| Error::Corrupt {
                    table: "scale_set_watch",
                    key: "1".to_owned(),
                    column: "deletions",
                    reason: format!("{deletions} is not a count"),
                })?,
                revision,
            })
        })
        .await
    }

    async fn list_scale_set_ids(&self) -> Result<Vec<ScaleSetId>> {
        self.run("list scale set ids", move |conn, _| {
            let ids: Vec<String> = scale_sets::table
                .select(scale_sets::id)
                .load(conn)
                .map_err(Error::backend("list scale set ids"))?;
            // Sorted here, not by the database's collation of the text.
            let mut ids = ids
                .iter()
                .map(|id| Ok(ScaleSetId(parse_uuid(TABLE, id, "id", id)?)))
                .collect::<Result<Vec<ScaleSetId>>>()?;
            ids.sort_unstable();
            Ok(ids)
        })
        .await
    }

    async fn update_scale_set(&self, scale_set: &ScaleSet) -> Result<ScaleSet> {
        let wanted = scale_set.clone();
        self.run("update scale set", move |conn, ctx| {
            write_transaction(conn, "update scale set", |conn| {
                update_in(conn, ctx, &wanted)
            })
        })
        .await
    }

    async fn modify_scale_set_with_event(
        &self,
        id: ScaleSetId,
        change: &mut (dyn for<'s> FnMut(&'s mut ScaleSet) + Send),
        code: ReasonCode,
        detail: &str,
    ) -> Result<(ScaleSet, Event)> {
        self.modify_with_event(id, None, change, code, detail).await
    }

    async fn modify_leased_scale_set_with_event(
        &self,
        lease: &Lease,
        change: &mut (dyn for<'s> FnMut(&'s mut ScaleSet) + Send),
        code: ReasonCode,
        detail: &str,
    ) -> Result<(ScaleSet, Event)> {
        self.modify_with_event(lease.scale_set_id, Some(lease), change, code, detail)
            .await
    }

    async fn record_progress(&self, lease: &Lease, progress: Progress) -> Result<()> {
        if progress == Progress::default() {
            return Ok(());
        }
        let lease = lease.clone();
        self.run("record progress", move |conn, ctx| {
            let now = ctx.now().unix_millis();
            let changes = ProgressChanges {
                last_message_id: progress.last_message_id,
                // A reset (0, after a new GitHub id) handled no message.
                last_message_at: progress.last_message_id.map(|id| (id > 0).then_some(now)),
                desired_runners: progress.desired_runners.map(i64::from),
                jobs_waiting: progress.jobs_waiting.map(i64::from),
                // The jobs-waiting figure alone is for display and does not date the row.
                updated_at: (progress.last_message_id.is_some()
                    || progress.desired_runners.is_some())
                .then_some(now),
            };
            let waiting = progress.jobs_waiting;
            fenced_update(conn, &lease, "record progress", |conn, id| {
                let updated = diesel::update(scale_sets::table.find(&id))
                    .set(&changes)
                    .execute(conn)?;
                // Since when jobs have waited without a break: dated when the figure leaves
                // 0, kept while it stays above, cleared at 0.
                match waiting {
                    Some(0) => diesel::update(scale_set_health::table.find(&id))
                        .set(scale_set_health::jobs_waiting_since.eq(None::<i64>))
                        .execute(conn)?,
                    Some(_) => {
                        ensure_health(conn, &id)?;
                        diesel::update(
                            scale_set_health::table
                                .find(&id)
                                .filter(scale_set_health::jobs_waiting_since.is_null()),
                        )
                        .set(scale_set_health::jobs_waiting_since.eq(Some(now)))
                        .execute(conn)?
                    }
                    None => 0,
                };
                Ok(updated)
            })
        })
        .await
    }

    async fn set_message_session(&self, lease: &Lease, session_id: Option<&str>) -> Result<()> {
        let lease = lease.clone();
        let session_id = session_id.map(str::to_owned);
        self.run("set message session", move |conn, ctx| {
            let now = ctx.now().unix_millis();
            fenced_update(conn, &lease, "set message session", |conn, id| {
                diesel::update(scale_sets::table.find(id))
                    .set((
                        scale_sets::session_id.eq(session_id),
                        scale_sets::updated_at.eq(now),
                    ))
                    .execute(conn)
            })
        })
        .await
    }

    async fn set_provider_error(&self, lease: &Lease, message: Option<&str>) -> Result<()> {
        let lease = lease.clone();
        let message = message.map(str::to_owned);
        self.run("set provider error", move |conn, ctx| {
            let now = ctx.now().unix_millis();
            fenced_update(conn, &lease, "set provider error", |conn, id| {
                let exists = scale_sets::table
                    .find(&id)
                    .select(scale_sets::id)
                    .get_result::<String>(conn)
                    .optional()?
                    .is_some();
                if !exists {
                    return Ok(0);
                }
                let Some(message) = message else {
                    diesel::update(scale_set_health::table.find(&id))
                        .set((
                            scale_set_health::provider_error.eq(None::<String>),
                            scale_set_health::provider_error_at.eq(None::<i64>),
                        ))
                        .execute(conn)?;
                    return Ok(1);
                };
                ensure_health(conn, &id)?;
                diesel::update(scale_set_health::table.find(&id))
                    .set(scale_set_health::provider_error.eq(Some(message)))
                    .execute(conn)?;
                // The first failure of a run keeps its time.
                diesel::update(
                    scale_set_health::table
                        .find(&id)
                        .filter(scale_set_health::provider_error_at.is_null()),
                )
                .set(scale_set_health::provider_error_at.eq(Some(now)))
                .execute(conn)?;
                Ok(1)
            })
        })
        .await
    }

    async fn record_sample(&self, lease: &Lease, sample: &Sample) -> Result<()> {
        let lease = lease.clone();
        let sample = *sample;
        self.run("record sample", move |conn, _| {
            write_transaction(conn, "record sample", |conn| {
                write_sample(conn, &lease, &sample)
            })
        })
        .await
    }

    async fn record_samples(&self, samples: &[(Lease, Sample)]) -> Result<Vec<Result<()>>> {
        let samples = samples.to_vec();
        self.run("record samples", move |conn, _| {
            write_transaction(conn, "record samples", |conn| {
                let mut answers: Vec<Result<()>> = samples.iter().map(|_| Ok(())).collect();
                for at in in_lock_order(samples.iter().map(|(lease, _)| lease)) {
                    let (lease, sample) = &samples[at];
                    match write_sample(conn, lease, sample) {
                        // A lost lease is that sample's answer; a backend error ends the batch.
                        Err(e) if !e.is_lease_lost() => return Err(e),
                        answer => answers[at] = answer,
                    }
                }
                Ok(answers)
            })
        })
        .await
    }

    async fn list_samples(
        &self,
        ids: &[ScaleSetId],
        since: Timestamp,
    ) -> Result<Vec<(ScaleSetId, Sample)>> {
        let keys: Vec<String> = ids.iter().map(ToString::to_string).collect();
        self.run("list samples", move |conn, _| {
            type SampleRow = (String, i64, i64, i64, i64, i64, Option<i64>);
            let columns = (
                scale_set_samples::scale_set_id,
                scale_set_samples::at,
                scale_set_samples::jobs_waiting,
                scale_set_samples::idle,
                scale_set_samples::busy,
                scale_set_samples::starting,
                scale_set_samples::start_latency_ms,
            );
            let in_the_window: Vec<SampleRow> = scale_set_samples::table
                .filter(scale_set_samples::scale_set_id.eq_any(&keys))
                .filter(scale_set_samples::at.ge(since.unix_millis()))
                .order((scale_set_samples::scale_set_id, scale_set_samples::at))
                .select(columns)
                .load(conn)
                .map_err(Error::backend("list samples"))?;
            // Before `since`, the prune leaves a set at most the samples of the hour before its
            // last write: the newest of them is the one whose figures hold into the window.
            let before: Vec<SampleRow> = scale_set_samples::table
                .filter(scale_set_samples::scale_set_id.eq_any(&keys))
                .filter(scale_set_samples::at.lt(since.unix_millis()))
                .order((
                    scale_set_samples::scale_set_id,
                    scale_set_samples::at.desc(),
                ))
                .select(columns)
                .load(conn)
                .map_err(Error::backend("list samples"))?;
            let mut held: std::collections::HashMap<String, SampleRow> =
                std::collections::HashMap::new();
            for row in before {
                held.entry(row.0.clone()).or_insert(row);
            }
            let mut rows = Vec::with_capacity(in_the_window.len() + held.len());
            for row in in_the_window {
                if let Some(carried) = held.remove(&row.0) {
                    rows.push(carried);
                }
                rows.push(row);
            }
            let mut only_held: Vec<SampleRow> = held.into_values().collect();
            only_held.sort_by(|a, b| a.0.cmp(&b.0));
            rows.extend(only_held);
            const SAMPLES: &str = "scale_set_samples";
            rows.into_iter()
                .map(|(id, at, waiting, idle, busy, starting, latency)| {
                    let key = format!("{id}@{at}");
                    let count = |column, value| count_from_db(SAMPLES, &key, column, value);
                    Ok((
                        ScaleSetId(parse_uuid(SAMPLES, &key, "scale_set_id", &id)?),
                        Sample {
                            at: Timestamp::from_unix_millis(at),
                            jobs_waiting: count("jobs_waiting", waiting)?,
                            idle: count("idle", idle)?,
                            busy: count("busy", busy)?,
                            starting: count("starting", starting)?,
                            start_latency: latency
                                .and_then(|ms| u64::try_from(ms).ok())
                                .map(Duration::from_millis),
                        },
                    ))
                })
                .collect()
        })
        .await
    }

    async fn request_retry(&self, id: ScaleSetId) -> Result<Timestamp> {
        const OPERATION: &str = "request a retry";
        self.run(OPERATION, move |conn, ctx| {
            let now = ctx.now().unix_millis();
            write_transaction(conn, OPERATION, |conn| {
                let key = id.to_string();
                let exists = scale_sets::table
                    .find(&key)
                    .select(scale_sets::id)
                    .get_result::<String>(conn)
                    .optional()
                    .map_err(Error::backend(OPERATION))?
                    .is_some();
                if !exists {
                    return Err(Error::NotFound {
                        entity: "scale set",
                        key,
                    });
                }
                ensure_health(conn, &key).map_err(Error::backend(OPERATION))?;
                let before: Option<i64> = scale_set_health::table
                    .find(&key)
                    .select(scale_set_health::retry_requested_at)
                    .get_result(conn)
                    .map_err(Error::backend(OPERATION))?;
                // Strictly later than the last request: the worker acts on a change.
                let at = before.map_or(now, |before| now.max(before.saturating_add(1)));
                diesel::update(scale_set_health::table.find(&key))
                    .set(scale_set_health::retry_requested_at.eq(Some(at)))
                    .execute(conn)
                    .map_err(Error::backend(OPERATION))?;
                Ok(Timestamp::from_unix_millis(at))
            })
        })
        .await
    }

    async fn delete_scale_set(&self, id: ScaleSetId, generation: i64) -> Result<()> {
        self.run("delete scale set", move |conn, _| {
            write_transaction(conn, "delete scale set", |conn| {
                let key = id.to_string();
                // Lock the lease row first, as fenced writes do: deleting the scale set row
                // first and then cascading to its lease would take the two locks in the
                // opposite order and deadlock (PostgreSQL) against a fenced write in flight.
                diesel::update(leases::table.find(&key))
                    .set(leases::token.eq(leases::token))
                    .execute(conn)
                    .map_err(Error::backend("lock lease"))?;
                let deleted = diesel::delete(
                    scale_sets::table
                        .find(&key)
                        .filter(scale_sets::generation.eq(generation)),
                )
                .execute(conn)
                .map_err(Error::write("scale set", "delete scale set"))?;
                if deleted == 1 {
                    return Ok(());
                }
                let exists = scale_sets::table
                    .find(&key)
                    .select(scale_sets::id)
                    .get_result::<String>(conn)
                    .optional()
                    .map_err(Error::backend("read scale set"))?
                    .is_some();
                Err(if exists {
                    Error::Stale {
                        id: key,
                        expected: generation,
                    }
                } else {
                    Error::NotFound {
                        entity: "scale set",
                        key,
                    }
                })
            })
        })
        .await
    }
}

/// Writes `wanted` over its row if the row is still at `wanted.generation`
/// ([`ScaleSetStore::update_scale_set`]'s rules), inside the caller's transaction.
fn update_in(conn: &mut DbConnection, ctx: &Context, wanted: &ScaleSet) -> Result<ScaleSet> {
    let id = wanted.id.to_string();
    let stale = || Error::Stale {
        id: id.clone(),
        expected: wanted.generation,
    };
    let current: (Option<i64>, i64, Option<String>) = scale_sets::table
        .find(&id)
        .select((
            scale_sets::github_id,
            scale_sets::generation,
            scale_sets::provenance,
        ))
        .get_result(conn)
        .optional()
        .map_err(Error::backend("read scale set"))?
        .ok_or_else(|| Error::NotFound {
            entity: "scale set",
            key: id.clone(),
        })?;
    if current.1 != wanted.generation {
        return Err(stale());
    }
    let next_generation = wanted
        .generation
        .checked_add(1)
        .ok_or_else(|| Error::Corrupt {
            table: TABLE,
            key: id.clone(),
            column: "generation",
            reason: format!("{} cannot be incremented", wanted.generation),
        })?;
    let stored = current
        .2
        .as_deref()
        .map(|text| provenance_from_db(&id, text, current.0))
        .transpose()?;
    let provenance = Provenance::recorded(
        stored.as_ref(),
        current.0,
        wanted.provenance.clone(),
        wanted.github_id,
    );
    if let Some(Provenance::Created(creation)) = &provenance
        && Some(creation.github_id()) != wanted.github_id
    {
        return Err(Error::Invalid {
            field: "provenance",
            reason: format!(
                "the record of creation is for GitHub scale set {}, not {:?}",
                creation.github_id(),
                wanted.github_id
            ),
        });
    }
    let refusal = match &wanted.refusal {
        Some(refusal) if wanted.state.is_refusal() => Some(to_json("refusal", refusal)?),
        _ => None,
    };
    let takeover = wanted
        .takeover
        .as_ref()
        .map(|note| to_json("takeover", note))
        .transpose()?;
    let spec = &wanted.spec;
    let updated = diesel::update(
        scale_sets::table
            .find(&id)
            .filter(scale_sets::generation.eq(wanted.generation)),
    )
    .set((
        (
            scale_sets::name.eq(spec.name.as_str()),
            scale_sets::runner_group_name.eq(&spec.runner_group.name),
            scale_sets::runner_group_id.eq(spec.runner_group.id),
            scale_sets::labels.eq(to_json("labels", &spec.labels)?),
            scale_sets::disable_update.eq(spec.disable_update),
            scale_sets::provider.eq(spec.provider.as_str()),
            scale_sets::image.eq(&spec.image),
            scale_sets::flavor.eq(&spec.flavor),
            scale_sets::min_idle.eq(i64::from(spec.min_idle)),
            scale_sets::max_runners.eq(i64::from(spec.max_runners)),
            scale_sets::bootstrap_timeout_secs
                .eq(secs_to_db("bootstrap_timeout", spec.bootstrap_timeout)?),
            scale_sets::runner_prefix.eq(spec.runner_prefix.as_ref().map_or("", |p| p.as_str())),
            scale_sets::extra_specs.eq(to_json("extra_specs", &spec.extra_specs)?),
            scale_sets::enabled.eq(spec.enabled),
            scale_sets::adoption_policy.eq(spec.adoption_policy.as_str()),
            scale_sets::repair.eq(spec.repair),
        ),
        (
            scale_sets::scale_down_delay_secs
                .eq(secs_to_db("scale_down_delay", spec.scale_down_delay)?),
            scale_sets::max_idle_lifetime_secs
                .eq(secs_to_db("max_idle_lifetime", spec.max_idle_lifetime)?),
            scale_sets::max_lifetime_secs.eq(secs_to_db("max_lifetime", spec.max_lifetime)?),
            scale_sets::takeover.eq(takeover),
            scale_sets::os_type.eq(spec.os_type.as_str()),
            scale_sets::os_arch.eq(spec.os_arch.as_str()),
            scale_sets::runner_setup.eq(to_json("runner_setup", &spec.runner_setup)?),
        ),
        (
            scale_sets::github_id.eq(wanted.github_id),
            scale_sets::provenance.eq(provenance.as_ref().map(Provenance::as_str)),
            scale_sets::evidence.eq(to_json("evidence", &wanted.evidence)?),
            scale_sets::refusal.eq(refusal),
            scale_sets::state.eq(wanted.state.as_str()),
            scale_sets::state_reason.eq(&wanted.state_reason),
            scale_sets::generation.eq(next_generation),
            scale_sets::updated_at.eq(ctx.now().unix_millis()),
        ),
    ))
    .execute(conn)
    .map_err(Error::write("scale set", "update scale set"))?;
    if updated == 0 {
        return Err(stale());
    }
    if current.0 != wanted.github_id {
        // The cursor and session belonged to the previous GitHub scale set.
        diesel::update(scale_sets::table.find(&id))
            .set((
                scale_sets::last_message_id.eq(0_i64),
                scale_sets::session_id.eq(None::<String>),
            ))
            .execute(conn)
            .map_err(Error::backend("reset message cursor"))?;
    }
    load(conn, wanted.id)
}

impl DieselStore {
    /// [`ScaleSetStore::modify_scale_set_with_event`], fenced by `lease` when one is given:
    /// its check runs first in the write's transaction, so a taken-over lease writes neither
    /// the change nor the event.
    async fn modify_with_event(
        &self,
        id: ScaleSetId,
        lease: Option<&Lease>,
        change: &mut (dyn for<'s> FnMut(&'s mut ScaleSet) + Send),
        code: ReasonCode,
        detail: &str,
    ) -> Result<(ScaleSet, Event)> {
        // The change is made here, on the caller's side (it borrows the caller's state);
        // the write and the event then share one transaction, checked against the generation
        // read, and a stale one is read and changed again as `modify_scale_set` does.
        let mut attempt = 1;
        loop {
            let stored = self.get_scale_set(id).await?;
            let mut changed = stored.clone();
            change(&mut changed);
            let detail = detail.to_owned();
            let lease = lease.cloned();
            let written = self
                .run("update scale set with event", move |conn, ctx| {
                    write_transaction(conn, "update scale set with event", |conn| {
                        if let Some(lease) = &lease {
                            check_fence(conn, lease)?;
                        }
                        let row = if changed == stored {
                            stored
                        } else {
                            update_in(conn, ctx, &changed)?
                        };
                        let event = append_in(conn, ctx, id, code, &detail)?;
                        Ok((row, event))
                    })
                })
                .await;
            match written {
                Err(e) if e.is_stale() && attempt < MODIFY_ATTEMPTS => attempt += 1,
                written => return written,
            }
        }
    }
}
