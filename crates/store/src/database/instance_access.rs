//! [`InstanceAccessStore`] over diesel: the `instance_access` table (one row per instance,
//! removed with it), the token as its SHA-256 and the JIT config sealed by the keyring.

use std::time::Duration;

use async_trait::async_trait;
use diesel::prelude::*;
use secrecy::{ExposeSecret as _, SecretString};

use super::lease::check_fence;
use super::schema::{instance_access, instances};
use super::{DbConnection, DieselStore, enum_from_db, parse_uuid, write_transaction};
use crate::api_token::token_hash;
use crate::clock::Timestamp;
use crate::error::{Error, Result};
use crate::id::ScaleSetId;
use crate::instance_access::{
    BootstrapReport, BootstrapStatus, InstanceAccess, InstanceAccessStore, SystemInfo,
    generate_instance_token,
};
use crate::lease::Lease;

const TABLE: &str = "instance_access";

#[derive(Queryable, Selectable)]
#[diesel(table_name = instance_access)]
struct Row {
    instance_name: String,
    expires_at: i64,
    bootstrap_status: String,
    status_message: Option<String>,
    agent_id: Option<i64>,
    os_name: Option<String>,
    os_version: Option<String>,
    updated_at: i64,
}

/// Binds the sealed JIT config to its instance: a ciphertext copied into another instance's
/// row does not open.
fn aad(name: &str) -> String {
    format!("scaleset/instance_access/{name}/jit_config")
}

fn what(name: &str) -> String {
    format!("the JIT config of instance {name:?}")
}

fn from_row(row: Row, scale_set_id: &str) -> Result<InstanceAccess> {
    let key = row.instance_name.as_str();
    Ok(InstanceAccess {
        scale_set_id: ScaleSetId(parse_uuid("instances", key, "scale_set_id", scale_set_id)?),
        expires_at: Timestamp::from_unix_millis(row.expires_at),
        bootstrap_status: enum_from_db(
            TABLE,
            key,
            "bootstrap_status",
            &row.bootstrap_status,
            BootstrapStatus::from_stored,
        )?,
        status_message: row.status_message,
        agent_id: row.agent_id,
        os_name: row.os_name,
        os_version: row.os_version,
        updated_at: Timestamp::from_unix_millis(row.updated_at),
        instance_name: row.instance_name,
    })
}

/// The access record of instance `name` with its scale set, if it has one.
fn load(conn: &mut DbConnection, name: &str) -> Result<Option<InstanceAccess>> {
    instance_access::table
        .inner_join(instances::table)
        .filter(instance_access::instance_name.eq(name))
        .select((Row::as_select(), instances::scale_set_id))
        .get_result::<(Row, String)>(conn)
        .optional()
        .map_err(Error::backend("read instance access"))?
        .map(|(row, scale_set_id)| from_row(row, &scale_set_id))
        .transpose()
}

fn not_granted(name: &str) -> Error {
    Error::NotFound {
        entity: "instance access",
        key: name.to_owned(),
    }
}

/// Loads the record for a report and refuses one that comes after bootstrap is over.
fn load_bootstrapping(conn: &mut DbConnection, name: &str) -> Result<InstanceAccess> {
    let current = load(conn, name)?.ok_or_else(|| not_granted(name))?;
    if !current.bootstrap_status.is_bootstrapping() {
        return Err(Error::Invalid {
            field: "bootstrap_status",
            reason: format!(
                "instance {name:?} finished bootstrapping ({}); it reports nothing more",
                current.bootstrap_status.as_str()
            ),
        });
    }
    Ok(current)
}

#[async_trait]
impl InstanceAccessStore for DieselStore {
    async fn grant_instance_access(
        &self,
        lease: &Lease,
        name: &str,
        jit_config: &SecretString,
        valid_for: Duration,
    ) -> Result<SecretString> {
        let lease = lease.clone();
        let name = name.to_owned();
        let jit_config = jit_config.clone();
        self.run("grant instance access", move |conn, ctx| {
            let token = generate_instance_token()?;
            let (key_id, ciphertext) = ctx.keyring.seal(
                &aad(&name),
                jit_config.expose_secret().as_bytes(),
                &what(&name),
            )?;
            write_transaction(conn, "grant instance access", |conn| {
                check_fence(conn, &lease)?;
                // Only an instance of the lease's scale set: the lease covers no other.
                let owned: i64 = instances::table
                    .filter(instances::name.eq(&name))
                    .filter(instances::scale_set_id.eq(lease.scale_set_id.to_string()))
                    .count()
                    .get_result(conn)
                    .map_err(Error::backend("grant instance access"))?;
                if owned == 0 {
                    return Err(Error::NotFound {
                        entity: "instance",
                        key: name.clone(),
                    });
                }
                diesel::delete(instance_access::table.find(&name))
                    .execute(conn)
                    .map_err(Error::backend("grant instance access"))?;
                let now = ctx.now();
                diesel::insert_into(instance_access::table)
                    .values((
                        instance_access::instance_name.eq(&name),
                        instance_access::token_hash.eq(token_hash(&token)),
                        instance_access::expires_at.eq(now.saturating_add(valid_for).unix_millis()),
                        instance_access::jit_key_id.eq(&key_id),
                        instance_access::jit_ciphertext.eq(&ciphertext),
                        instance_access::bootstrap_status.eq(BootstrapStatus::Pending.as_str()),
                        instance_access::updated_at.eq(now.unix_millis()),
                    ))
                    .execute(conn)
                    .map_err(Error::write("instance access", "grant instance access"))?;
                Ok(())
            })?;
            Ok(token)
        })
        .await
    }

    async fn authenticate_instance(&self, token: &SecretString) -> Result<Option<InstanceAccess>> {
        let hash = token_hash(token);
        self.run("authenticate instance", move |conn, ctx| {
            let found = instance_access::table
                .inner_join(instances::table)
                .filter(instance_access::token_hash.eq(hash))
                .filter(instance_access::expires_at.gt(ctx.now().unix_millis()))
                .select((Row::as_select(), instances::scale_set_id))
                .first::<(Row, String)>(conn)
                .optional()
                .map_err(Error::backend("authenticate instance"))?;
            found
                .map(|(row, scale_set_id)| from_row(row, &scale_set_id))
                .transpose()
        })
        .await
    }

    async fn get_instance_access(&self, name: &str) -> Result<Option<InstanceAccess>> {
        let name = name.to_owned();
        self.run("read instance access", move |conn, _| load(conn, &name))
            .await
    }

    async fn open_instance_jit_config(&self, name: &str) -> Result<SecretString> {
        let name = name.to_owned();
        self.run("open instance JIT config", move |conn, ctx| {
            let (key_id, ciphertext): (String, Vec<u8>) = instance_access::table
                .find(&name)
                .select((instance_access::jit_key_id, instance_access::jit_ciphertext))
                .get_result(conn)
                .optional()
                .map_err(Error::backend("open instance JIT config"))?
                .ok_or_else(|| not_granted(&name))?;
            let plaintext = ctx
                .keyring
                .open(&key_id, &aad(&name), &ciphertext, &what(&name))?;
            String::from_utf8(plaintext)
                .map(SecretString::from)
                .map_err(|_| Error::Corrupt {
                    table: TABLE,
                    key: name,
                    column: "jit_ciphertext",
                    reason: "the decrypted JIT config is not UTF-8".to_owned(),
                })
        })
        .await
    }

    async fn report_instance_status(
        &self,
        name: &str,
        report: BootstrapReport,
    ) -> Result<InstanceAccess> {
        let name = name.to_owned();
        self.run("report instance status", move |conn, ctx| {
            write_transaction(conn, "report instance status", |conn| {
                let current = load_bootstrapping(conn, &name)?;
                if !current.bootstrap_status.can_move_to(report.status) {
                    return Err(Error::Invalid {
                        field: "status",
                        reason: format!(
                            "instance {name:?} cannot move from {} to {}",
                            current.bootstrap_status.as_str(),
                            report.status.as_str()
                        ),
                    });
                }
                let updated = InstanceAccess {
                    bootstrap_status: report.status,
                    status_message: Some(report.message),
                    agent_id: report.agent_id.or(current.agent_id),
                    updated_at: ctx.now(),
                    ..current
                };
                diesel::update(instance_access::table.find(&name))
                    .set((
                        instance_access::bootstrap_status.eq(updated.bootstrap_status.as_str()),
                        instance_access::status_message.eq(&updated.status_message),
                        instance_access::agent_id.eq(updated.agent_id),
                        instance_access::updated_at.eq(updated.updated_at.unix_millis()),
                    ))
                    .execute(conn)
                    .map_err(Error::backend("report instance status"))?;
                Ok(updated)
            })
        })
        .await
    }

    async fn report_instance_system_info(
        &self,
        name: &str,
        info: SystemInfo,
    ) -> Result<InstanceAccess> {
        let name = name.to_owned();
        self.run("report instance system info", move |conn, ctx| {
            write_transaction(conn, "report instance system info", |conn| {
                let current = load_bootstrapping(conn, &name)?;
                let updated = InstanceAccess {
                    os_name: Some(info.os_name),
                    os_version: Some(info.os_version),
                    agent_id: info.agent_id.or(current.agent_id),
                    updated_at: ctx.now(),
                    ..current
                };
                diesel::update(instance_access::table.find(&name))
                    .set((
                        instance_access::os_name.eq(&updated.os_name),
                        instance_access::os_version.eq(&updated.os_version),
                        instance_access::agent_id.eq(updated.agent_id),
                        instance_access::updated_at.eq(updated.updated_at.unix_millis()),
                    ))
                    .execute(conn)
                    .map_err(Error::backend("report instance system info"))?;
                Ok(updated)
            })
        })
        .await
    }
}
