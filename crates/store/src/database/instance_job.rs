//! The job a busy instance runs (`instance_jobs`, one row per instance, removed with it):
//! display only, so a start for an instance that is gone is dropped rather than refused.

use diesel::prelude::*;
use diesel::upsert::excluded;

use super::lease::check_fence;
use super::schema::{instance_jobs, instances};
use super::{DbConnection, write_transaction};
use crate::error::{Error, Result};
use crate::id::ScaleSetId;
use crate::instance::JobShown;
use crate::lease::Lease;

/// Upserts the job of `name` if it is an instance of the lease's scale set; `false` when not.
pub(super) fn record(
    conn: &mut DbConnection,
    lease: &Lease,
    now: i64,
    name: &str,
    job: &JobShown,
) -> Result<bool> {
    write_transaction(conn, "record instance job", |conn| {
        check_fence(conn, lease)?;
        let ours = instances::table
            .find(name)
            .filter(instances::scale_set_id.eq(lease.scale_set_id.to_string()))
            .count()
            .get_result::<i64>(conn)
            .map_err(Error::backend("record instance job"))?;
        if ours == 0 {
            return Ok(false);
        }
        let insert = diesel::insert_into(instance_jobs::table).values((
            instance_jobs::instance_name.eq(name),
            instance_jobs::repository.eq(job.repository.as_deref()),
            instance_jobs::workflow.eq(job.workflow.as_deref()),
            instance_jobs::started_at.eq(now),
        ));
        let set = (
            instance_jobs::repository.eq(excluded(instance_jobs::repository)),
            instance_jobs::workflow.eq(excluded(instance_jobs::workflow)),
            instance_jobs::started_at.eq(excluded(instance_jobs::started_at)),
        );
        match conn {
            DbConnection::Postgres(c) => insert
                .on_conflict(instance_jobs::instance_name)
                .do_update()
                .set(set)
                .execute(c),
            DbConnection::Sqlite(c) => insert
                .on_conflict(instance_jobs::instance_name)
                .do_update()
                .set(set)
                .execute(c),
        }
        .map_err(Error::write("instance job", "record instance job"))?;
        Ok(true)
    })
}

/// The recorded jobs of the instances of `scale_set_id`, in one query.
pub(super) fn list(
    conn: &mut DbConnection,
    scale_set_id: ScaleSetId,
) -> Result<Vec<(String, JobShown)>> {
    let rows = instance_jobs::table
        .inner_join(instances::table)
        .filter(instances::scale_set_id.eq(scale_set_id.to_string()))
        .select((
            instance_jobs::instance_name,
            instance_jobs::repository,
            instance_jobs::workflow,
        ))
        .load::<(String, Option<String>, Option<String>)>(conn)
        .map_err(Error::backend("list instance jobs"))?;
    Ok(rows
        .into_iter()
        .map(|(name, repository, workflow)| {
            (
                name,
                JobShown {
                    repository,
                    workflow,
                },
            )
        })
        .collect())
}
