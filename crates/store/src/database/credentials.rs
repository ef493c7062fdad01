//! [`CredentialStore`] over diesel: the `credentials` table, secrets sealed by the keyring.

use async_trait::async_trait;
use diesel::prelude::*;
use secrecy::{ExposeSecret, SecretString};

use super::schema::credentials;
use super::{Context, DbConnection, DieselStore, parse_uuid, write_transaction};
use crate::clock::Timestamp;
use crate::credentials::{
    AppIdentity, Auth, ClientId, CredentialStore, Credentials, Endpoint, NewCredentials,
};
use crate::error::{Error, Result};
use crate::id::CredentialsId;

#[derive(Queryable, Selectable, Insertable)]
#[diesel(table_name = credentials)]
struct Row {
    id: String,
    name: String,
    kind: String,
    app_id: Option<i64>,
    client_id: Option<String>,
    installation_id: Option<i64>,
    secret_key_id: String,
    secret_ciphertext: Vec<u8>,
    base_url: String,
    api_base_url: String,
    ca_bundle: Option<String>,
    system_trust: bool,
    created_at: i64,
    updated_at: i64,
}

/// Binds a ciphertext to its row: a ciphertext copied into another row does not open.
fn aad(id: &str) -> String {
    format!("scaleset/credentials/{id}/secret")
}

fn what(name: &str) -> String {
    format!("the secret of credentials {name:?}")
}

/// Builds the row for `new`, sealing the secret with the primary key.
fn to_row(
    ctx: &Context,
    id: CredentialsId,
    new: &NewCredentials,
    created_at: Timestamp,
) -> Result<Row> {
    let id = id.to_string();
    let (kind, app, installation_id, secret) = match &new.auth {
        Auth::Pat { token } => ("pat", None, None, token),
        Auth::App {
            app,
            installation_id,
            private_key,
        } => ("app", Some(app), Some(*installation_id), private_key),
    };
    let (app_id, client_id) = match app {
        Some(AppIdentity::Id(id)) => (Some(*id), None),
        Some(AppIdentity::ClientId(client_id)) => (None, Some(client_id.as_str().to_owned())),
        None => (None, None),
    };
    let (key_id, ciphertext) = ctx.keyring.seal(
        &aad(&id),
        secret.expose_secret().as_bytes(),
        &what(&new.name),
    )?;
    Ok(Row {
        id,
        name: new.name.clone(),
        kind: kind.to_owned(),
        app_id,
        client_id,
        installation_id,
        secret_key_id: key_id,
        secret_ciphertext: ciphertext,
        base_url: new.endpoint.base_url.clone(),
        api_base_url: new.endpoint.api_base_url.clone(),
        ca_bundle: new.endpoint.ca_bundle.clone(),
        system_trust: new.endpoint.system_trust,
        created_at: created_at.unix_millis(),
        updated_at: ctx.now().unix_millis(),
    })
}

/// The App a row names: exactly one of `app_id` (every row written before client ids were
/// accepted) or `client_id`.
fn app_identity(row: &Row) -> Result<AppIdentity> {
    let corrupt = |column, reason: String| Error::Corrupt {
        table: "credentials",
        key: row.id.clone(),
        column,
        reason,
    };
    match (row.app_id, &row.client_id) {
        (Some(id), None) => Ok(AppIdentity::Id(id)),
        (None, Some(text)) => ClientId::parse(text)
            .map(AppIdentity::ClientId)
            .map_err(|e| corrupt("client_id", e.to_string())),
        (Some(_), Some(_)) => Err(corrupt(
            "client_id",
            "both app_id and client_id are set for a GitHub App (one names it)".to_owned(),
        )),
        (None, None) => Err(corrupt(
            "app_id",
            "NULL for a GitHub App, and so is client_id".to_owned(),
        )),
    }
}

fn from_row(ctx: &Context, row: Row) -> Result<Credentials> {
    let id = CredentialsId(parse_uuid("credentials", &row.id, "id", &row.id)?);
    let plaintext = ctx.keyring.open(
        &row.secret_key_id,
        &aad(&row.id),
        &row.secret_ciphertext,
        &what(&row.name),
    )?;
    let secret = String::from_utf8(plaintext)
        .map(SecretString::from)
        .map_err(|_| Error::Corrupt {
            table: "credentials",
            key: row.id.clone(),
            column: "secret_ciphertext",
            reason: "the decrypted secret is not UTF-8".to_owned(),
        })?;
    let missing = |column| Error::Corrupt {
        table: "credentials",
        key: row.id.clone(),
        column,
        reason: "NULL for a GitHub App".to_owned(),
    };
    let auth = match row.kind.as_str() {
        "pat" => Auth::Pat { token: secret },
        "app" => Auth::App {
            app: app_identity(&row)?,
            installation_id: row
                .installation_id
                .ok_or_else(|| missing("installation_id"))?,
            private_key: secret,
        },
        other => {
            return Err(Error::Corrupt {
                table: "credentials",
                key: row.id,
                column: "kind",
                reason: format!("unknown kind {other:?}"),
            });
        }
    };
    Ok(Credentials {
        id,
        name: row.name,
        endpoint: Endpoint::from_stored(
            row.base_url,
            row.api_base_url,
            row.ca_bundle,
            row.system_trust,
        ),
        auth,
        key_id: row.secret_key_id,
        created_at: Timestamp::from_unix_millis(row.created_at),
        updated_at: Timestamp::from_unix_millis(row.updated_at),
    })
}

fn load_one(conn: &mut DbConnection, ctx: &Context, id: CredentialsId) -> Result<Credentials> {
    let row = credentials::table
        .find(id.to_string())
        .select(Row::as_select())
        .get_result(conn)
        .optional()
        .map_err(Error::backend("read credentials"))?
        .ok_or_else(|| Error::NotFound {
            entity: "credentials",
            key: id.to_string(),
        })?;
    from_row(ctx, row)
}

fn store_row(conn: &mut DbConnection, row: &Row) -> Result<usize> {
    diesel::update(credentials::table.find(&row.id))
        .set((
            credentials::name.eq(&row.name),
            credentials::kind.eq(&row.kind),
            credentials::app_id.eq(row.app_id),
            credentials::client_id.eq(&row.client_id),
            credentials::installation_id.eq(row.installation_id),
            credentials::secret_key_id.eq(&row.secret_key_id),
            credentials::secret_ciphertext.eq(&row.secret_ciphertext),
            credentials::base_url.eq(&row.base_url),
            credentials::api_base_url.eq(&row.api_base_url),
            credentials::ca_bundle.eq(&row.ca_bundle),
            credentials::system_trust.eq(row.system_trust),
            credentials::updated_at.eq(row.updated_at),
        ))
        .execute(conn)
        .map_err(Error::write("credentials", "update credentials"))
}

#[async_trait]
impl CredentialStore for DieselStore {
    async fn create_credentials(&self, new: NewCredentials) -> Result<Credentials> {
        self.run("create credentials", move |conn, ctx| {
            let id = CredentialsId::generate();
            let row = to_row(ctx, id, &new, ctx.now())?;
            diesel::insert_into(credentials::table)
                .values(&row)
                .execute(conn)
                .map_err(Error::write("credentials", "create credentials"))?;
            from_row(ctx, row)
        })
        .await
    }

    async fn get_credentials(&self, id: CredentialsId) -> Result<Credentials> {
        self.run("read credentials", move |conn, ctx| load_one(conn, ctx, id))
            .await
    }

    async fn get_credentials_by_name(&self, name: &str) -> Result<Credentials> {
        let name = name.to_owned();
        self.run("read credentials", move |conn, ctx| {
            let row = credentials::table
                .filter(credentials::name.eq(&name))
                .select(Row::as_select())
                .get_result(conn)
                .optional()
                .map_err(Error::backend("read credentials"))?
                .ok_or(Error::NotFound {
                    entity: "credentials",
                    key: name,
                })?;
            from_row(ctx, row)
        })
        .await
    }

    async fn list_credentials(&self) -> Result<Vec<Credentials>> {
        self.run("list credentials", |conn, ctx| {
            credentials::table
                .order(credentials::name)
                .select(Row::as_select())
                .load(conn)
                .map_err(Error::backend("list credentials"))?
                .into_iter()
                .map(|row| from_row(ctx, row))
                .collect()
        })
        .await
    }

    async fn update_credentials(
        &self,
        id: CredentialsId,
        new: NewCredentials,
    ) -> Result<Credentials> {
        self.run("update credentials", move |conn, ctx| {
            write_transaction(conn, "update credentials", |conn| {
                let created_at: i64 = credentials::table
                    .find(id.to_string())
                    .select(credentials::created_at)
                    .get_result(conn)
                    .optional()
                    .map_err(Error::backend("read credentials"))?
                    .ok_or_else(|| Error::NotFound {
                        entity: "credentials",
                        key: id.to_string(),
                    })?;
                let row = to_row(ctx, id, &new, Timestamp::from_unix_millis(created_at))?;
                store_row(conn, &row)?;
                from_row(ctx, row)
            })
        })
        .await
    }

    async fn replace_sealed_credentials(&self, new: NewCredentials) -> Result<Credentials> {
        self.run("replace credentials", move |conn, ctx| {
            write_transaction(conn, "replace credentials", |conn| {
                let (id, created_at): (String, i64) = credentials::table
                    .filter(credentials::name.eq(&new.name))
                    .select((credentials::id, credentials::created_at))
                    .get_result(conn)
                    .optional()
                    .map_err(Error::backend("read credentials"))?
                    .ok_or_else(|| Error::NotFound {
                        entity: "credentials",
                        key: new.name.clone(),
                    })?;
                let id = CredentialsId(parse_uuid("credentials", &id, "id", &id)?);
                let row = to_row(ctx, id, &new, Timestamp::from_unix_millis(created_at))?;
                store_row(conn, &row)?;
                from_row(ctx, row)
            })
        })
        .await
    }

    async fn delete_credentials(&self, id: CredentialsId) -> Result<()> {
        self.run("delete credentials", move |conn, _| {
            let deleted = diesel::delete(credentials::table.find(id.to_string()))
                .execute(conn)
                .map_err(Error::write("credentials", "delete credentials"))?;
            if deleted == 0 {
                return Err(Error::NotFound {
                    entity: "credentials",
                    key: id.to_string(),
                });
            }
            Ok(())
        })
        .await
    }

    async fn reseal_credentials(&self) -> Result<usize> {
        self.run("reseal credentials", |conn, ctx| {
            write_transaction(conn, "reseal credentials", |conn| reseal(conn, ctx))
        })
        .await
    }
}

/// Re-seals, in one transaction, every secret not sealed with the primary key; returns how
/// many rows this call changed.
///
/// Rows are written in `id` order, so two reseals running at once (two processes, or a retry
/// overlapping a slow first run) take their PostgreSQL row locks in the same order and cannot
/// deadlock: the second waits behind the first. Each write is a compare-and-set on the key id
/// and ciphertext that were read, and touches only the secret columns: a row resealed (or
/// replaced by `update_credentials`) since the read is left alone and not counted, so
/// concurrent reseals together count every row once and never undo a concurrent update.
/// SQLite runs one write transaction at a time, so there the second simply finds nothing left.
fn reseal(conn: &mut DbConnection, ctx: &Context) -> Result<usize> {
    let rows: Vec<Row> = credentials::table
        .filter(credentials::secret_key_id.ne(ctx.keyring.primary_id()))
        .order(credentials::id)
        .select(Row::as_select())
        .load(conn)
        .map_err(Error::backend("read credentials"))?;
    let mut resealed = 0;
    for row in rows {
        let plaintext = ctx.keyring.open(
            &row.secret_key_id,
            &aad(&row.id),
            &row.secret_ciphertext,
            &what(&row.name),
        )?;
        let (key_id, ciphertext) = ctx
            .keyring
            .seal(&aad(&row.id), &plaintext, &what(&row.name))?;
        resealed += diesel::update(
            credentials::table
                .find(&row.id)
                .filter(credentials::secret_key_id.eq(&row.secret_key_id))
                .filter(credentials::secret_ciphertext.eq(&row.secret_ciphertext)),
        )
        .set((
            credentials::secret_key_id.eq(key_id),
            credentials::secret_ciphertext.eq(ciphertext),
            credentials::updated_at.eq(ctx.now().unix_millis()),
        ))
        .execute(conn)
        .map_err(Error::write("credentials", "reseal credentials"))?;
    }
    Ok(resealed)
}
