//! The decommission's world (issue 34), assembled as a running process's is: the providers and
//! the GitHub clients from the configuration, and the store when there is one. Without a
//! database (none configured yet, deleted, or `--no-database`) the controller id comes from
//! the configuration alone, which is why it must be pinned there.

use std::sync::Arc;

use scaleset_config::Config;
use scaleset_control::ControllerIdentity;
use scaleset_fleet::Decommission;
use scaleset_store::{DatabaseUrl, DieselStore, Store, WriterLock};

use crate::env::{Env, Vars};
use crate::error::BuildError;

/// A decommission ready to plan, and what it holds while it runs.
pub struct DecommissionSite {
    /// The decommission.
    pub decommission: Decommission,
    /// Where the records come from, in words (`database …` or why there is none).
    pub records: String,
    /// The SQLite writer lock, held so no worker starts on the file meanwhile.
    _lock: Option<WriterLock>,
}

impl std::fmt::Debug for DecommissionSite {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DecommissionSite")
            .field("records", &self.records)
            .finish_non_exhaustive()
    }
}

/// Builds the decommission of `config`'s controller. `use_database`: read the store's records
/// too when the database exists (a SQLite file that is not there is no database, and is not
/// created).
///
/// # Errors
///
/// [`BuildError::NoControllerId`] without a database and without `controller_id`;
/// [`BuildError::Locked`] when a worker serves the SQLite file; [`BuildError::Open`] when the
/// database cannot be opened; [`BuildError::Fleet`] when a client cannot be built.
pub async fn decommission(
    config: &Config,
    env: &Env,
    use_database: bool,
) -> Result<DecommissionSite, BuildError> {
    let url = config.store.url().clone();
    let database = url.redacted().to_string();
    let exists = match &url {
        DatabaseUrl::Sqlite { path } => std::path::Path::new(path).exists(),
        _ => true,
    };
    let (store, bound, lock, records): (Option<Arc<dyn Store>>, _, _, _) = if use_database && exists
    {
        let lock = match WriterLock::acquire(&url) {
            Ok(lock) => lock,
            Err(scaleset_store::WriterLockError::Held { database, lock }) => {
                return Err(BuildError::Locked { database, lock });
            }
            Err(e) => return Err(BuildError::Lock(e)),
        };
        let store = DieselStore::open(config.store.clone())
            .await
            .map_err(|source| BuildError::Open {
                database: database.clone(),
                source,
            })?;
        let bound = store.controller_binding().id();
        (
            Some(Arc::new(store)),
            Some(bound),
            lock,
            format!("database {database}"),
        )
    } else if use_database {
        (
            None,
            None,
            None,
            format!("no database at {database}: planned from GitHub and the providers alone"),
        )
    } else {
        (
            None,
            None,
            None,
            "--no-database: planned from GitHub and the providers alone".to_owned(),
        )
    };
    let id = match (bound, config.controller_id) {
        (Some(id), _) => id,
        (None, Some(id)) => id,
        (None, None) => return Err(BuildError::NoControllerId),
    };
    let identity = ControllerIdentity::new(id).with_owner_label(config.owner_label);
    let providers = crate::providers::build(config, env, id);
    let proxy = scaleset_github::ProxyConfig::from_env(&Vars(&env.vars));
    let decommission = Decommission::new(identity, &config.fleet, providers, store, &move |c| {
        c.with_proxy(proxy.clone())
    })
    .await
    .map_err(BuildError::Fleet)?;
    Ok(DecommissionSite {
        decommission,
        records,
        _lock: lock,
    })
}
