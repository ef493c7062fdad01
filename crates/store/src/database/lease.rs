//! [`LeaseStore`] over diesel: the `leases` table, and [`check_fence`], which every fenced
//! write runs first inside its transaction.
//!
//! Acquisition runs in one write transaction: a conditional `UPDATE` (ours and unexpired, or
//! expired), else an `INSERT … ON CONFLICT DO NOTHING` for a scale set that never had a
//! lease. Of two racing holders exactly one changes the row: PostgreSQL re-checks the
//! `WHERE` of an `UPDATE` that waited on a concurrent one and holds the row lock until
//! commit, and SQLite runs one writer at a time.

use std::time::Duration;

use async_trait::async_trait;
use diesel::prelude::*;

use super::schema::leases;
use super::{DbConnection, DieselStore, parse_uuid, write_transaction};
use crate::clock::Timestamp;
use crate::error::{Error, Result};
use crate::id::ScaleSetId;
use crate::lease::{Acquisition, Lease, LeaseRecord, LeaseStore, LiveLease};

/// Fails with [`Error::LeaseLost`] unless `lease`'s token is still the current one. Run it
/// first inside the write's transaction: the no-op `UPDATE` locks the lease row (PostgreSQL)
/// so a take-over cannot commit between this check and the write.
pub(super) fn check_fence(conn: &mut DbConnection, lease: &Lease) -> Result<()> {
    let touched = diesel::update(
        leases::table
            .filter(leases::scale_set_id.eq(lease.scale_set_id.to_string()))
            .filter(leases::holder.eq(&lease.holder))
            .filter(leases::token.eq(lease.token)),
    )
    .set(leases::token.eq(leases::token))
    .execute(conn)
    .map_err(Error::backend("check lease"))?;
    if touched == 1 {
        Ok(())
    } else {
        Err(lost(lease))
    }
}

/// The positions of `leases` in the order a batch locks their rows: by scale set. Every batch
/// of writes to several lease rows takes them in this one order (PostgreSQL deadlocks two
/// transactions that lock the same rows in different orders, and a worker's sample batch and
/// renewal batch hold leases of the same scale sets).
pub(super) fn in_lock_order<'a>(leases: impl IntoIterator<Item = &'a Lease>) -> Vec<usize> {
    let mut order: Vec<(ScaleSetId, usize)> = leases
        .into_iter()
        .enumerate()
        .map(|(at, lease)| (lease.scale_set_id, at))
        .collect();
    order.sort_unstable();
    order.into_iter().map(|(_, at)| at).collect()
}

/// Extends `lease` to `expires_at` if it is still the stored one (holder and token).
fn renew(conn: &mut DbConnection, lease: Lease, expires_at: Timestamp) -> Result<Lease> {
    let renewed = diesel::update(
        leases::table
            .find(lease.scale_set_id.to_string())
            .filter(leases::holder.eq(&lease.holder))
            .filter(leases::token.eq(lease.token)),
    )
    .set(leases::expires_at.eq(expires_at.unix_millis()))
    .execute(conn)
    .map_err(Error::backend("renew lease"))?;
    if renewed == 1 {
        Ok(Lease {
            expires_at,
            ..lease
        })
    } else {
        Err(lost(&lease))
    }
}

fn lost(lease: &Lease) -> Error {
    Error::LeaseLost {
        scale_set: lease.scale_set_id.to_string(),
        holder: lease.holder.clone(),
        token: lease.token,
    }
}

fn read(conn: &mut DbConnection, scale_set_id: ScaleSetId) -> Result<Option<LeaseRecord>> {
    let row: Option<(String, i64, i64)> = leases::table
        .find(scale_set_id.to_string())
        .select((leases::holder, leases::token, leases::expires_at))
        .get_result(conn)
        .optional()
        .map_err(Error::backend("read lease"))?;
    Ok(row.map(|(holder, token, expires_at)| LeaseRecord {
        holder,
        token,
        expires_at: Timestamp::from_unix_millis(expires_at),
    }))
}

/// One acquisition attempt; `None` means the row appeared or changed under us: try again.
fn try_acquire(
    conn: &mut DbConnection,
    scale_set_id: ScaleSetId,
    holder: &str,
    now: Timestamp,
    expires_at: Timestamp,
) -> Result<Option<Acquisition>> {
    let key = scale_set_id.to_string();
    let acquired = |token| {
        Acquisition::Acquired(Lease {
            scale_set_id,
            holder: holder.to_owned(),
            token,
            expires_at,
        })
    };
    // Still ours and unexpired: extend, keep the token.
    let extended = diesel::update(
        leases::table
            .find(&key)
            .filter(leases::holder.eq(holder))
            .filter(leases::expires_at.gt(now.unix_millis())),
    )
    .set(leases::expires_at.eq(expires_at.unix_millis()))
    .execute(conn)
    .map_err(Error::backend("acquire lease"))?;
    if extended == 1 {
        return Ok(read(conn, scale_set_id)?.map(|r| acquired(r.token)));
    }
    // Free or expired: take it with the next token.
    let taken = diesel::update(
        leases::table
            .find(&key)
            .filter(leases::expires_at.le(now.unix_millis())),
    )
    .set((
        leases::holder.eq(holder),
        leases::token.eq(leases::token + 1),
        leases::expires_at.eq(expires_at.unix_millis()),
        leases::acquired_at.eq(now.unix_millis()),
    ))
    .execute(conn)
    .map_err(Error::backend("acquire lease"))?;
    if taken == 1 {
        return Ok(read(conn, scale_set_id)?.map(|r| acquired(r.token)));
    }
    match read(conn, scale_set_id)? {
        Some(current) if current.expires_at > now && current.holder != holder => {
            Ok(Some(Acquisition::Held {
                holder: current.holder,
                expires_at: current.expires_at,
            }))
        }
        // Expired or ours after all: it changed between our statements; retry.
        Some(_) => Ok(None),
        None => {
            let insert = diesel::insert_into(leases::table).values((
                leases::scale_set_id.eq(&key),
                leases::holder.eq(holder),
                leases::token.eq(1_i64),
                leases::expires_at.eq(expires_at.unix_millis()),
                leases::acquired_at.eq(now.unix_millis()),
            ));
            // ON CONFLICT DO NOTHING keeps a PostgreSQL transaction usable when another
            // holder inserted first; the diesel DSL offers it per backend only.
            let inserted = match conn {
                DbConnection::Postgres(c) => insert.on_conflict_do_nothing().execute(c),
                DbConnection::Sqlite(c) => insert.on_conflict_do_nothing().execute(c),
            };
            match inserted {
                Ok(1) => Ok(Some(acquired(1))),
                // Someone inserted first: look again.
                Ok(_) => Ok(None),
                Err(diesel::result::Error::DatabaseError(
                    diesel::result::DatabaseErrorKind::ForeignKeyViolation,
                    _,
                )) => Err(Error::NotFound {
                    entity: "scale set",
                    key,
                }),
                Err(source) => Err(Error::Backend {
                    operation: "acquire lease",
                    source,
                }),
            }
        }
    }
}

#[async_trait]
impl LeaseStore for DieselStore {
    async fn acquire_lease(
        &self,
        scale_set_id: ScaleSetId,
        holder: &str,
        ttl: Duration,
    ) -> Result<Acquisition> {
        let holder = holder.to_owned();
        self.run("acquire lease", move |conn, ctx| {
            // Each attempt either decides or saw a concurrent change; a handful suffices.
            for _ in 0..8 {
                let now = ctx.now();
                let attempt = write_transaction(conn, "acquire lease", |conn| {
                    try_acquire(conn, scale_set_id, &holder, now, now.saturating_add(ttl))
                })?;
                if let Some(outcome) = attempt {
                    if let Acquisition::Acquired(lease) = &outcome {
                        tracing::info!(scale_set = %scale_set_id, holder = %holder, token = lease.token, "lease taken");
                    }
                    return Ok(outcome);
                }
            }
            match read(conn, scale_set_id)? {
                Some(current) => Ok(Acquisition::Held {
                    holder: current.holder,
                    expires_at: current.expires_at,
                }),
                None => Err(Error::NotFound {
                    entity: "lease",
                    key: scale_set_id.to_string(),
                }),
            }
        })
        .await
    }

    async fn renew_lease(&self, lease: &Lease, ttl: Duration) -> Result<Lease> {
        let lease = lease.clone();
        self.run("renew lease", move |conn, ctx| {
            renew(conn, lease, ctx.now().saturating_add(ttl))
        })
        .await
    }

    async fn renew_leases(&self, leases: &[Lease], ttl: Duration) -> Result<Vec<Result<Lease>>> {
        let leases = leases.to_vec();
        self.run("renew leases", move |conn, ctx| {
            let expires_at = ctx.now().saturating_add(ttl);
            write_transaction(conn, "renew leases", |conn| {
                let mut renewed: Vec<Result<Lease>> = leases.iter().map(|l| Err(lost(l))).collect();
                for at in in_lock_order(&leases) {
                    match renew(conn, leases[at].clone(), expires_at) {
                        // A lost lease is that lease's answer; a backend error ends the batch.
                        Err(e) if !e.is_lease_lost() => return Err(e),
                        result => renewed[at] = result,
                    }
                }
                Ok(renewed)
            })
        })
        .await
    }

    async fn release_lease(&self, lease: &Lease) -> Result<()> {
        let lease = lease.clone();
        self.run("release lease", move |conn, _| {
            // Keep the row so the next holder's token is still greater.
            let released = diesel::update(
                leases::table
                    .find(lease.scale_set_id.to_string())
                    .filter(leases::holder.eq(&lease.holder))
                    .filter(leases::token.eq(lease.token)),
            )
            .set(leases::expires_at.eq(Timestamp::EPOCH.unix_millis()))
            .execute(conn)
            .map_err(Error::backend("release lease"))?;
            if released == 1 {
                Ok(())
            } else {
                Err(lost(&lease))
            }
        })
        .await
    }

    async fn live_leases(&self) -> Result<Vec<LiveLease>> {
        self.run("list live leases", move |conn, ctx| {
            let rows: Vec<(String, String, i64)> = leases::table
                .filter(leases::expires_at.gt(ctx.now().unix_millis()))
                .select((leases::scale_set_id, leases::holder, leases::expires_at))
                .order(leases::scale_set_id.asc())
                .load(conn)
                .map_err(Error::backend("list live leases"))?;
            rows.into_iter()
                .map(|(id, holder, expires_at)| {
                    Ok(LiveLease {
                        scale_set_id: ScaleSetId(parse_uuid("leases", &id, "scale_set_id", &id)?),
                        holder,
                        expires_at: Timestamp::from_unix_millis(expires_at),
                    })
                })
                .collect()
        })
        .await
    }

    async fn get_lease(&self, scale_set_id: ScaleSetId) -> Result<Option<LeaseRecord>> {
        self.run("read lease", move |conn, _| read(conn, scale_set_id))
            .await
    }

    async fn leases(&self) -> Result<Vec<(ScaleSetId, LeaseRecord)>> {
        self.run("list leases", move |conn, _| {
            let rows: Vec<(String, String, i64, i64)> = leases::table
                .select((
                    leases::scale_set_id,
                    leases::holder,
                    leases::token,
                    leases::expires_at,
                ))
                .order(leases::scale_set_id.asc())
                .load(conn)
                .map_err(Error::backend("list leases"))?;
            rows.into_iter()
                .map(|(id, holder, token, expires_at)| {
                    Ok((
                        ScaleSetId(parse_uuid("leases", &id, "scale_set_id", &id)?),
                        LeaseRecord {
                            holder,
                            token,
                            expires_at: Timestamp::from_unix_millis(expires_at),
                        },
                    ))
                })
                .collect()
        })
        .await
    }
}
