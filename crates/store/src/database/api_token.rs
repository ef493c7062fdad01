//! [`ApiTokenStore`] over diesel: the `api_tokens` table, which holds SHA-256 hashes only.

use async_trait::async_trait;
use diesel::prelude::*;
use secrecy::SecretString;

use super::schema::api_tokens;
use super::{DieselStore, parse_uuid};
use crate::api_token::{ApiScope, ApiToken, ApiTokenStore, generate_token, token_hash};
use crate::clock::Timestamp;
use crate::error::{Error, Result};
use crate::id::ApiTokenId;

#[derive(Queryable, Selectable)]
#[diesel(table_name = api_tokens)]
struct Row {
    id: String,
    name: String,
    created_at: i64,
    scope: String,
}

fn from_row(row: Row) -> Result<ApiToken> {
    // A scope this build does not know (written by a newer one, or by hand) gives no right
    // beyond reading: never more than the row says.
    let scope = ApiScope::parse(&row.scope).unwrap_or(ApiScope::Read);
    Ok(ApiToken {
        id: ApiTokenId(parse_uuid("api_tokens", &row.id, "id", &row.id)?),
        name: row.name,
        created_at: Timestamp::from_unix_millis(row.created_at),
        scope,
    })
}

#[async_trait]
impl ApiTokenStore for DieselStore {
    async fn create_scoped_api_token(
        &self,
        name: &str,
        scope: ApiScope,
    ) -> Result<(ApiToken, SecretString)> {
        let name = name.to_owned();
        self.run("create api token", move |conn, ctx| {
            let secret = generate_token()?;
            let row = Row {
                id: ApiTokenId::generate().to_string(),
                name,
                created_at: ctx.now().unix_millis(),
                scope: scope.as_str().to_owned(),
            };
            diesel::insert_into(api_tokens::table)
                .values((
                    api_tokens::id.eq(&row.id),
                    api_tokens::name.eq(&row.name),
                    api_tokens::token_hash.eq(token_hash(&secret)),
                    api_tokens::created_at.eq(row.created_at),
                    api_tokens::scope.eq(&row.scope),
                ))
                .execute(conn)
                .map_err(Error::write("api token", "create api token"))?;
            Ok((from_row(row)?, secret))
        })
        .await
    }

    async fn authenticate_api_token(&self, presented: &SecretString) -> Result<Option<ApiToken>> {
        let hash = token_hash(presented);
        self.run("authenticate api token", move |conn, _| {
            api_tokens::table
                .filter(api_tokens::token_hash.eq(hash))
                .select(Row::as_select())
                .first(conn)
                .optional()
                .map_err(Error::backend("authenticate api token"))?
                .map(from_row)
                .transpose()
        })
        .await
    }

    async fn list_api_tokens(&self) -> Result<Vec<ApiToken>> {
        self.run("list api tokens", |conn, _| {
            api_tokens::table
                .order(api_tokens::name)
                .select(Row::as_select())
                .load(conn)
                .map_err(Error::backend("list api tokens"))?
                .into_iter()
                .map(from_row)
                .collect()
        })
        .await
    }

    async fn revoke_api_token(&self, id: ApiTokenId) -> Result<()> {
        self.run("revoke api token", move |conn, _| {
            let deleted = diesel::delete(api_tokens::table.find(id.to_string()))
                .execute(conn)
                .map_err(Error::backend("revoke api token"))?;
            if deleted == 0 {
                return Err(Error::NotFound {
                    entity: "api token",
                    key: id.to_string(),
                });
            }
            Ok(())
        })
        .await
    }
}
