//! Secrets rotated without a restart. Kubernetes and vault agents rotate a mounted secret by
//! replacing its file; this task notices the file's modification time change, reads it again
//! (checked as at start, through the configuration), re-seals it in the store (the primary
//! key seals it, as any write does) and hands it to the GitHub clients built from those
//! credentials, whose next token fetch uses it. The rotation is logged, never the secret.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use scaleset_config::SecretFile;
use scaleset_control::StoreClientFactory;
use scaleset_store::{Auth, NewCredentials, Store, chain};
use tokio_util::sync::CancellationToken;

/// How often the secret files' modification times are looked at: a stat per file, cheap; a
/// rotation is picked up within this, well inside any overlap an operator gives the old and
/// the new secret.
pub(crate) const CHECK_EVERY: Duration = Duration::from_secs(2);

/// One watched file and what was last taken from it.
struct Watched {
    file: SecretFile,
    modified: Option<SystemTime>,
    /// The secret in use (the declared one until a rotation).
    auth: Auth,
}

/// Watches `files` until `cancel`; `declared` gives the secrets in use at start.
pub(crate) async fn watch(
    files: Vec<SecretFile>,
    declared: &[NewCredentials],
    store: Arc<dyn Store>,
    clients: Arc<StoreClientFactory>,
    cancel: CancellationToken,
) {
    let mut watched: Vec<Watched> = files
        .into_iter()
        .filter_map(|file| {
            let auth = declared
                .iter()
                .find(|c| c.name == file.credentials)?
                .auth
                .clone();
            // No modification time yet: the first look reads the file, so a replacement
            // between reading the configuration and now is not missed.
            Some(Watched {
                file,
                modified: None,
                auth,
            })
        })
        .collect();
    if watched.is_empty() {
        return;
    }
    let mut every = tokio::time::interval(CHECK_EVERY);
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            () = cancel.cancelled() => return,
            _ = every.tick() => {}
        }
        for w in &mut watched {
            look(w, store.as_ref(), &clients).await;
        }
    }
}

/// Takes a new secret from `w`'s file when its modification time changed.
async fn look(w: &mut Watched, store: &dyn Store, clients: &StoreClientFactory) {
    let name = &w.file.credentials;
    let path = w.file.path.display().to_string();
    let modified = match tokio::fs::metadata(&w.file.path).await {
        Ok(meta) => meta.modified().ok(),
        Err(e) => {
            tracing::warn!(credentials = %name, file = %path, error = %e,
                "cannot look at the secret file (removed while being replaced?); keeping the secret in use");
            return;
        }
    };
    if modified.is_some() && modified == w.modified {
        return;
    }
    let auth = match w.file.read() {
        Ok(auth) => auth,
        Err(e) => {
            // Not recorded as seen: a file replaced half-way is read again next time.
            tracing::warn!(credentials = %name, reason = %chain(&e), "rotated secret not taken");
            return;
        }
    };
    if auth == w.auth {
        w.modified = modified;
        return;
    }
    match reseal(store, name, &auth).await {
        Ok(id) => match clients.rotate(id, name, &auth).await {
            Ok(clients) => {
                tracing::info!(credentials = %name, file = %path, clients,
                    "credentials rotated: the new secret is sealed in the store and used from the next token fetch");
                w.auth = auth;
                w.modified = modified;
            }
            Err(e) => {
                tracing::error!(credentials = %name, file = %path, error = %chain(&e),
                    "rotated secret stored but refused by the GitHub client; fix the file");
            }
        },
        Err(e) => {
            tracing::error!(credentials = %name, file = %path, reason = %chain(&e),
                "rotated secret not stored; retrying at the next check");
        }
    }
}

/// Replaces the stored secret of credentials `name` (endpoint kept), sealed anew.
async fn reseal(
    store: &dyn Store,
    name: &str,
    auth: &Auth,
) -> Result<scaleset_store::CredentialsId, ResealError> {
    let stored = store
        .get_credentials_by_name(name)
        .await
        .map_err(ResealError::Read)?;
    if stored.auth == *auth {
        // Another process watching the same file stored it first.
        return Ok(stored.id);
    }
    let updated = store
        .update_credentials(
            stored.id,
            NewCredentials {
                name: stored.name,
                endpoint: stored.endpoint,
                auth: auth.clone(),
            },
        )
        .await
        .map_err(ResealError::Write)?;
    Ok(updated.id)
}

/// Why a rotated secret was not stored (tried again at the next check).
#[derive(Debug, thiserror::Error)]
enum ResealError {
    /// The stored credentials could not be read.
    #[error("cannot read the stored credentials")]
    Read(#[source] scaleset_store::Error),
    /// The new secret could not be written.
    #[error("cannot store the new secret")]
    Write(#[source] scaleset_store::Error),
}
