//! [`InstanceStore`] over diesel: the `instances` table; every write is fenced by the scale
//! set's lease and status moves are checked against the transition table.

use async_trait::async_trait;
use diesel::prelude::*;

use super::lease::check_fence;
use super::schema::instances;
use super::{DbConnection, DieselStore, enum_from_db, parse_uuid, write_transaction};
use crate::clock::Timestamp;
use crate::error::{Error, Result};
use crate::id::ScaleSetId;
use crate::instance::{
    Instance, InstanceAdvance, InstanceStatus, InstanceStore, JobShown, NewInstance,
};
use crate::lease::Lease;

const TABLE: &str = "instances";

#[derive(Queryable, Selectable, Insertable)]
#[diesel(table_name = instances)]
struct Row {
    name: String,
    scale_set_id: String,
    provider_id: Option<String>,
    github_runner_id: Option<i64>,
    pool_key: String,
    status: String,
    bootstrap_deadline: Option<i64>,
    created_at: i64,
    updated_at: i64,
    removal_requested_at: Option<i64>,
}

fn from_row(row: Row) -> Result<Instance> {
    let key = row.name.as_str();
    Ok(Instance {
        scale_set_id: ScaleSetId(parse_uuid(TABLE, key, "scale_set_id", &row.scale_set_id)?),
        status: enum_from_db(
            TABLE,
            key,
            "status",
            &row.status,
            InstanceStatus::from_stored,
        )?,
        provider_id: row.provider_id,
        github_runner_id: row.github_runner_id,
        pool_key: row.pool_key,
        bootstrap_deadline: row.bootstrap_deadline.map(Timestamp::from_unix_millis),
        created_at: Timestamp::from_unix_millis(row.created_at),
        updated_at: Timestamp::from_unix_millis(row.updated_at),
        removal_requested_at: row.removal_requested_at.map(Timestamp::from_unix_millis),
        name: row.name,
    })
}

/// Reads instance `name`; with `fence`, only an instance of that scale set (another scale
/// set's instance is not found: the caller's lease does not cover it).
fn load(
    conn: &mut DbConnection,
    name: &str,
    fence: Option<ScaleSetId>,
    during: &'static str,
) -> Result<Instance> {
    let mut query = instances::table
        .find(name)
        .select(Row::as_select())
        .into_boxed();
    if let Some(scale_set_id) = fence {
        query = query.filter(instances::scale_set_id.eq(scale_set_id.to_string()));
    }
    let row = query
        .get_result(conn)
        .optional()
        .map_err(Error::backend(during))?
        .ok_or_else(|| Error::NotFound {
            entity: "instance",
            key: name.to_owned(),
        })?;
    from_row(row)
}

/// Moves instance `name` of the lease's scale set to `to` (checked against the transition
/// table; `None` keeps the status) and records the ids given (`None` keeps a value), inside
/// the caller's fenced transaction. Moving to the current status with no ids writes nothing.
fn advance_row(
    conn: &mut DbConnection,
    lease: &Lease,
    now: Timestamp,
    name: String,
    to: Option<InstanceStatus>,
    (provider_id, github_runner_id): (Option<String>, Option<i64>),
    operation: &'static str,
) -> Result<Instance> {
    let current = load(conn, &name, Some(lease.scale_set_id), "read instance")?;
    let status = match to {
        Some(to) if !current.status.can_move_to(to) => {
            return Err(Error::InvalidTransition {
                instance: name,
                from: current.status,
                to,
            });
        }
        Some(to) => to,
        None => current.status,
    };
    if to.is_some()
        && status == current.status
        && provider_id.is_none()
        && github_runner_id.is_none()
    {
        return Ok(current);
    }
    let updated = Instance {
        status,
        provider_id: provider_id.or(current.provider_id),
        github_runner_id: github_runner_id.or(current.github_runner_id),
        updated_at: now,
        ..current
    };
    diesel::update(instances::table.find(&name))
        .set((
            instances::status.eq(updated.status.as_str()),
            instances::provider_id.eq(&updated.provider_id),
            instances::github_runner_id.eq(updated.github_runner_id),
            instances::updated_at.eq(updated.updated_at.unix_millis()),
        ))
        .execute(conn)
        .map_err(Error::backend(operation))?;
    Ok(updated)
}

/// Inserts a new instance of the lease's scale set, inside the caller's fenced transaction.
fn insert_row(
    conn: &mut DbConnection,
    lease: &Lease,
    now: i64,
    new: NewInstance,
) -> Result<Instance> {
    let row = Row {
        name: new.name,
        scale_set_id: lease.scale_set_id.to_string(),
        provider_id: new.provider_id,
        github_runner_id: new.github_runner_id,
        pool_key: new.pool_key,
        status: new.status.as_str().to_owned(),
        bootstrap_deadline: new.bootstrap_deadline.map(Timestamp::unix_millis),
        created_at: now,
        updated_at: now,
        removal_requested_at: None,
    };
    diesel::insert_into(instances::table)
        .values(&row)
        .execute(conn)
        .map_err(Error::write("instance", "create instance"))?;
    from_row(row)
}

impl DieselStore {
    /// One fenced commit that moves an instance to `to` (see [`advance_row`]).
    async fn advance(
        &self,
        lease: &Lease,
        name: &str,
        to: Option<InstanceStatus>,
        provider_id: Option<&str>,
        github_runner_id: Option<i64>,
        operation: &'static str,
    ) -> Result<Instance> {
        let lease = lease.clone();
        let name = name.to_owned();
        let provider_id = provider_id.map(str::to_owned);
        self.run(operation, move |conn, ctx| {
            write_transaction(conn, operation, |conn| {
                check_fence(conn, &lease)?;
                advance_row(
                    conn,
                    &lease,
                    ctx.now(),
                    name,
                    to,
                    (provider_id, github_runner_id),
                    operation,
                )
            })
        })
        .await
    }
}

#[async_trait]
impl InstanceStore for DieselStore {
    async fn create_instance(&self, lease: &Lease, new: NewInstance) -> Result<Instance> {
        let lease = lease.clone();
        self.run("create instance", move |conn, ctx| {
            write_transaction(conn, "create instance", |conn| {
                check_fence(conn, &lease)?;
                insert_row(conn, &lease, ctx.now().unix_millis(), new)
            })
        })
        .await
    }

    async fn create_instances(
        &self,
        lease: &Lease,
        new: Vec<NewInstance>,
    ) -> Result<Vec<Instance>> {
        if new.is_empty() {
            return Ok(Vec::new());
        }
        let lease = lease.clone();
        self.run("create instances", move |conn, ctx| {
            write_transaction(conn, "create instances", |conn| {
                check_fence(conn, &lease)?;
                let now = ctx.now().unix_millis();
                new.into_iter()
                    .map(|new| insert_row(conn, &lease, now, new))
                    .collect()
            })
        })
        .await
    }

    async fn get_instance(&self, name: &str) -> Result<Instance> {
        let name = name.to_owned();
        self.run("read instance", move |conn, _| {
            load(conn, &name, None, "read instance")
        })
        .await
    }

    async fn list_instances(&self, scale_set_id: ScaleSetId) -> Result<Vec<Instance>> {
        self.run("list instances", move |conn, _| {
            instances::table
                .filter(instances::scale_set_id.eq(scale_set_id.to_string()))
                .order(instances::name)
                .select(Row::as_select())
                .load(conn)
                .map_err(Error::backend("list instances"))?
                .into_iter()
                .map(from_row)
                .collect()
        })
        .await
    }

    async fn instances_claiming(&self, id: &str) -> Result<Vec<Instance>> {
        let id = id.to_owned();
        self.run("list instances claiming a provider id", move |conn, _| {
            instances::table
                .filter(instances::provider_id.eq(&id).or(instances::name.eq(&id)))
                .order(instances::name)
                .select(Row::as_select())
                .load(conn)
                .map_err(Error::backend("list instances claiming a provider id"))?
                .into_iter()
                .map(from_row)
                .collect()
        })
        .await
    }

    async fn count_instances_by_status(&self) -> Result<Vec<(InstanceStatus, u64)>> {
        self.run("count instances", move |conn, _| {
            let rows: Vec<(String, i64)> = instances::table
                .group_by(instances::status)
                .select((instances::status, diesel::dsl::count_star()))
                .load(conn)
                .map_err(Error::backend("count instances"))?;
            rows.into_iter()
                .map(|(status, count)| {
                    let status = enum_from_db(
                        TABLE,
                        &status,
                        "status",
                        &status,
                        InstanceStatus::from_stored,
                    )?;
                    Ok((status, u64::try_from(count).unwrap_or(0)))
                })
                .collect()
        })
        .await
    }

    async fn count_instances_by_scale_set(&self) -> Result<Vec<(ScaleSetId, InstanceStatus, u64)>> {
        self.run("count instances by scale set", move |conn, _| {
            let rows: Vec<(String, String, i64)> = instances::table
                .group_by((instances::scale_set_id, instances::status))
                .select((
                    instances::scale_set_id,
                    instances::status,
                    diesel::dsl::count_star(),
                ))
                .load(conn)
                .map_err(Error::backend("count instances by scale set"))?;
            rows.into_iter()
                .map(|(id, status, count)| {
                    let id = ScaleSetId(parse_uuid(TABLE, &id, "scale_set_id", &id)?);
                    let status = enum_from_db(
                        TABLE,
                        &status,
                        "status",
                        &status,
                        InstanceStatus::from_stored,
                    )?;
                    Ok((id, status, u64::try_from(count).unwrap_or(0)))
                })
                .collect()
        })
        .await
    }

    async fn scale_sets_with_instances(&self) -> Result<Vec<ScaleSetId>> {
        self.run("list scale sets with instances", move |conn, _| {
            let rows: Vec<String> = instances::table
                .select(instances::scale_set_id)
                .distinct()
                .load(conn)
                .map_err(Error::backend("list scale sets with instances"))?;
            rows.iter()
                .map(|id| Ok(ScaleSetId(parse_uuid(TABLE, id, "scale_set_id", id)?)))
                .collect()
        })
        .await
    }

    async fn scale_sets_with_removal_requests(&self) -> Result<Vec<ScaleSetId>> {
        self.run("list scale sets with removal requests", move |conn, _| {
            let rows: Vec<String> = instances::table
                .filter(instances::removal_requested_at.is_not_null())
                .select(instances::scale_set_id)
                .distinct()
                .load(conn)
                .map_err(Error::backend("list scale sets with removal requests"))?;
            rows.iter()
                .map(|id| Ok(ScaleSetId(parse_uuid(TABLE, id, "scale_set_id", id)?)))
                .collect()
        })
        .await
    }

    async fn instance_pool_keys(&self) -> Result<Vec<String>> {
        self.run("list the instances' pool keys", move |conn, _| {
            instances::table
                .select(instances::pool_key)
                .distinct()
                .load(conn)
                .map_err(Error::backend("list the instances' pool keys"))
        })
        .await
    }

    async fn transition_instance(
        &self,
        lease: &Lease,
        name: &str,
        to: InstanceStatus,
    ) -> Result<Instance> {
        self.advance(lease, name, Some(to), None, None, "transition instance")
            .await
    }

    async fn set_instance_ids(
        &self,
        lease: &Lease,
        name: &str,
        provider_id: Option<&str>,
        github_runner_id: Option<i64>,
    ) -> Result<Instance> {
        self.advance(
            lease,
            name,
            None,
            provider_id,
            github_runner_id,
            "set instance ids",
        )
        .await
    }

    async fn advance_instance(
        &self,
        lease: &Lease,
        name: &str,
        to: InstanceStatus,
        provider_id: Option<&str>,
        github_runner_id: Option<i64>,
    ) -> Result<Instance> {
        self.advance(
            lease,
            name,
            Some(to),
            provider_id,
            github_runner_id,
            "advance instance",
        )
        .await
    }

    async fn advance_instances(
        &self,
        lease: &Lease,
        moves: Vec<InstanceAdvance>,
    ) -> Result<Vec<Instance>> {
        if moves.is_empty() {
            return Ok(Vec::new());
        }
        let lease = lease.clone();
        self.run("advance instances", move |conn, ctx| {
            write_transaction(conn, "advance instances", |conn| {
                check_fence(conn, &lease)?;
                let now = ctx.now();
                moves
                    .into_iter()
                    .map(|m| {
                        advance_row(
                            conn,
                            &lease,
                            now,
                            m.name,
                            Some(m.to),
                            (m.provider_id, m.github_runner_id),
                            "advance instances",
                        )
                    })
                    .collect()
            })
        })
        .await
    }

    async fn delete_instance(&self, lease: &Lease, name: &str) -> Result<()> {
        let lease = lease.clone();
        let name = name.to_owned();
        self.run("delete instance", move |conn, _| {
            write_transaction(conn, "delete instance", |conn| {
                check_fence(conn, &lease)?;
                let deleted = diesel::delete(
                    instances::table
                        .find(&name)
                        .filter(instances::scale_set_id.eq(lease.scale_set_id.to_string())),
                )
                .execute(conn)
                .map_err(Error::backend("delete instance"))?;
                if deleted == 0 {
                    return Err(Error::NotFound {
                        entity: "instance",
                        key: name,
                    });
                }
                Ok(())
            })
        })
        .await
    }

    async fn request_instance_removal(&self, name: &str) -> Result<Instance> {
        let name = name.to_owned();
        self.run("request instance removal", move |conn, ctx| {
            write_transaction(conn, "request instance removal", |conn| {
                let current = load(conn, &name, None, "request instance removal")?;
                if current.removal_requested_at.is_some() {
                    return Ok(current);
                }
                let now = ctx.now();
                diesel::update(instances::table.find(&name))
                    .set(instances::removal_requested_at.eq(Some(now.unix_millis())))
                    .execute(conn)
                    .map_err(Error::backend("request instance removal"))?;
                Ok(Instance {
                    removal_requested_at: Some(now),
                    ..current
                })
            })
        })
        .await
    }

    async fn record_job(&self, lease: &Lease, name: &str, job: JobShown) -> Result<bool> {
        let lease = lease.clone();
        let name = name.to_owned();
        self.run("record instance job", move |conn, ctx| {
            super::instance_job::record(conn, &lease, ctx.now().unix_millis(), &name, &job)
        })
        .await
    }

    async fn list_instance_jobs(
        &self,
        scale_set_id: ScaleSetId,
    ) -> Result<Vec<(String, JobShown)>> {
        self.run("list instance jobs", move |conn, _| {
            super::instance_job::list(conn, scale_set_id)
        })
        .await
    }
}
