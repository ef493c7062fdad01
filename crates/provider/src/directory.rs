//! The fake provider with a memory: instances are files under a directory
//! (`<pool key>/<name>.json`), so they outlive the process as a cloud's machines would, and a
//! restarted controller (or a test) sees exactly what exists. With a [`Boot`], each created
//! instance "boots": its runner is started (in a simulator) with its JIT config, which the
//! file keeps until the boot succeeded, as a machine's user data would. Those secrets (the
//! JIT config, the instance token) are why every file is `0600` in `0700` directories.
//!
//! This is for tests, rehearsals and the one-command demo against the simulator; real fleets
//! use external providers. The worker boots runners over the simulator's control API, the demo
//! in process.
//!
//! Two files under the state directory serve the chaos soak (docs/operations.md), which drives
//! the real worker binary and so cannot reach an in-process fake: every instance created is
//! appended to [`LEDGER`] (the cloud's own record, which outlives a wiped database), and while
//! [`FAIL_CREATES`] exists every create fails (a cloud refusing machines), after first
//! sleeping the milliseconds written in [`SLOW_CREATES`] when that file exists (a cloud that
//! hangs). Neither file exists unless a test writes it.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use secrecy::ExposeSecret as _;
use uuid::Uuid;

use crate::bootstrap::CreateRequest;
use crate::command::Command;
use crate::error::Error;
use crate::instance::{InstanceId, InstanceStatus, ProviderInstance, check_instance_name};
use crate::pool::{Pool, PoolKey};
use crate::provider::Provider;

/// What a created instance boots with: what a real machine's user data would carry.
#[derive(Debug, Clone, Copy)]
pub struct BootInstance<'a> {
    /// The instance (runner) name.
    pub name: &'a str,
    /// The JIT config the provider was handed, if any.
    pub jit_config: Option<&'a str>,
    /// Where the instance can fetch its JIT files (GARM's `metadata-url`; empty when none).
    pub metadata_url: &'a str,
    /// Where it reports its progress (GARM's `callback-url`; empty when none).
    pub callback_url: &'a str,
    /// The token for both (GARM's `instance-token`; empty when none).
    pub instance_token: &'a str,
}

/// Starts the runner of a created instance, as the machine's first boot would.
#[async_trait]
pub trait Boot: Send + Sync {
    /// Starts the instance's runner. Returns whether the boot is done with (started, or
    /// refused because it started already); `false` keeps the boot data so the next look at
    /// the instance tries again (until the bootstrap deadline removes it).
    async fn boot(&self, instance: &BootInstance<'_>) -> bool;
}

/// The file under the state directory every created instance is appended to, one line each:
/// `<pool key> <name>`.
pub const LEDGER: &str = ".ledger";

/// While this file exists under the state directory, every create fails without creating.
pub const FAIL_CREATES: &str = ".fail-creates";

/// While this file exists under the state directory, every create first sleeps the number of
/// milliseconds it holds.
pub const SLOW_CREATES: &str = ".slow-creates";

/// Instances recorded in a directory.
pub struct DirectoryProvider {
    dir: PathBuf,
    controller: Uuid,
    boot: Option<Arc<dyn Boot>>,
}

impl fmt::Debug for DirectoryProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DirectoryProvider")
            .field("dir", &self.dir)
            .field("controller", &self.controller)
            .field("boots", &self.boot.is_some())
            .finish()
    }
}

impl DirectoryProvider {
    /// Instances of `controller` kept under `dir` (created when first needed); nothing boots.
    pub fn new(dir: PathBuf, controller: Uuid) -> Self {
        Self {
            dir,
            controller,
            boot: None,
        }
    }

    /// Every created instance boots its runner through `boot`.
    #[must_use]
    pub fn with_boot(mut self, boot: Arc<dyn Boot>) -> Self {
        self.boot = Some(boot);
        self
    }

    /// The directory the instances are kept in.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Boots the instance recorded at `path` if it has not booted yet, then forgets its JIT
    /// config.
    async fn finish_boot(&self, path: &Path) {
        let Ok(text) = tokio::fs::read_to_string(path).await else {
            return;
        };
        let Ok(mut value) = serde_json::from_str::<serde_json::Value>(&text) else {
            return;
        };
        if value["booted"].as_bool() == Some(true) {
            return;
        }
        let Some(name) = value["name"].as_str() else {
            return;
        };
        let text_of = |key: &str| value[key].as_str().unwrap_or_default();
        let instance = BootInstance {
            name,
            jit_config: value["jitConfig"].as_str(),
            metadata_url: text_of("metadataUrl"),
            callback_url: text_of("callbackUrl"),
            instance_token: text_of("instanceToken"),
        };
        if instance.jit_config.is_none() && instance.metadata_url.is_empty() {
            return;
        }
        if self.boot(&instance).await {
            // Booted: the secrets of the user data are forgotten.
            for key in ["jitConfig", "instanceToken"] {
                value[key] = serde_json::Value::Null;
            }
            value["booted"] = serde_json::Value::Bool(true);
            if let Ok(staged) = self
                .staged(Command::CreateInstance, &value.to_string())
                .await
            {
                // A rename replaces the file whole, or not at all.
                if tokio::fs::rename(&staged, path).await.is_err() {
                    let _ = tokio::fs::remove_file(&staged).await;
                }
            }
        }
    }

    /// `text` written and synced to a new file under `<state_dir>/.staging`, readable by
    /// this user only (it holds the JIT config and the instance token until the boot).
    async fn staged(&self, command: Command, text: &str) -> Result<PathBuf, Error> {
        let dir = self.dir.join(".staging");
        private_dir(&self.dir).await.map_err(|e| io(command, &e))?;
        private_dir(&dir).await.map_err(|e| io(command, &e))?;
        let path = dir.join(Uuid::new_v4().simple().to_string());
        let mut file = tokio::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
            .await
            .map_err(|e| io(command, &e))?;
        tokio::io::AsyncWriteExt::write_all(&mut file, text.as_bytes())
            .await
            .map_err(|e| io(command, &e))?;
        file.sync_all().await.map_err(|e| io(command, &e))?;
        Ok(path)
    }

    /// The soak's provider faults ([`SLOW_CREATES`], [`FAIL_CREATES`]).
    #[allow(
        clippy::disallowed_methods,
        reason = "the slow-create fault makes a create take the time it names"
    )]
    async fn injected_faults(&self, command: Command) -> Result<(), Error> {
        if let Ok(text) = tokio::fs::read_to_string(self.dir.join(SLOW_CREATES)).await {
            // A file being written may read empty or partial: no delay then, never a failure.
            if let Ok(ms) = text.trim().parse::<u64>() {
                tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
            }
        }
        if tokio::fs::try_exists(self.dir.join(FAIL_CREATES))
            .await
            .unwrap_or(false)
        {
            // Shaped as the in-process fake's injected failures: a provider that exited 1.
            return Err(Error::Failed {
                command,
                exit_code: Some(1),
                stderr_tail: format!(
                    "directory provider: {} exists: creates are refused until it is removed",
                    self.dir.join(FAIL_CREATES).display()
                ),
                provider_fault: None,
            });
        }
        Ok(())
    }

    /// Appends `line` to the [`LEDGER`] (one `write` of a short line in append mode, so lines of
    /// several workers sharing the directory never interleave).
    async fn append_ledger(&self, command: Command, line: &str) -> Result<(), Error> {
        let mut file = tokio::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .mode(0o600)
            .open(self.dir.join(LEDGER))
            .await
            .map_err(|e| io(command, &e))?;
        tokio::io::AsyncWriteExt::write_all(&mut file, line.as_bytes())
            .await
            .map_err(|e| io(command, &e))?;
        file.sync_all().await.map_err(|e| io(command, &e))
    }

    fn pool_dir(&self, pool: &Pool) -> PathBuf {
        self.dir.join(pool.key.as_str())
    }

    fn file(&self, pool: &Pool, instance: &InstanceId) -> PathBuf {
        self.pool_dir(pool)
            .join(format!("{}.json", instance.as_str()))
    }

    async fn boot(&self, instance: &BootInstance<'_>) -> bool {
        match &self.boot {
            Some(boot) => boot.boot(instance).await,
            None => true,
        }
    }
}

fn io(command: Command, e: &std::io::Error) -> Error {
    Error::Io {
        command,
        source: std::io::Error::new(e.kind(), e.to_string()),
    }
}

fn invalid(command: Command, what: String) -> Error {
    Error::Io {
        command,
        source: std::io::Error::new(std::io::ErrorKind::InvalidData, what),
    }
}

fn not_found(command: Command) -> Error {
    Error::NotFound {
        command,
        stderr_tail: String::new(),
    }
}

fn instance(name: &str) -> ProviderInstance {
    ProviderInstance {
        provider_id: name.to_owned(),
        name: name.to_owned(),
        os_type: Some("linux".to_owned()),
        os_name: Some("fake".to_owned()),
        os_version: None,
        os_arch: None,
        addresses: Vec::new(),
        status: InstanceStatus::Running,
        provider_fault: None,
        pool_id: None,
    }
}

/// Creates `dir` (and its missing parents) as `0700`, and makes an existing one `0700`: the
/// instance files under it hold secrets until their runner boots, like a machine's user data
/// (an older version left these directories `0755`).
async fn private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt as _;
    tokio::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .await?;
    tokio::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)).await
}

/// Reads one instance file (`{"name": …, "pool": …}`).
async fn read(path: &Path, command: Command) -> Result<ProviderInstance, Error> {
    let text = match tokio::fs::read_to_string(path).await {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(not_found(command)),
        Err(e) => return Err(io(command, &e)),
    };
    let value: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| invalid(command, format!("{}: {e}", path.display())))?;
    match value.get("name").and_then(serde_json::Value::as_str) {
        Some(name) => Ok(instance(name)),
        None => Err(invalid(command, format!("{}: no name", path.display()))),
    }
}

#[async_trait]
impl Provider for DirectoryProvider {
    async fn create(&self, request: &CreateRequest) -> Result<ProviderInstance, Error> {
        let command = Command::CreateInstance;
        let bootstrap = &request.bootstrap;
        // The name becomes a file name under the state directory.
        check_instance_name(command, &bootstrap.name)?;
        self.injected_faults(command).await?;
        let pool = Pool::new(bootstrap.pool_id.clone());
        let dir = self.pool_dir(&pool);
        private_dir(&dir).await.map_err(|e| io(command, &e))?;
        let instance = instance(&bootstrap.name);
        let path = dir.join(format!("{}.json", bootstrap.name));
        // The boot data is kept until the runner booted, as a machine's user data would be:
        // a worker killed between create and boot leaves a machine that still boots.
        let text = serde_json::json!({
            "name": bootstrap.name,
            "pool": bootstrap.pool_id.as_str(),
            "jitConfig": request.jit_config.as_ref().map(|j| j.expose_secret()),
            "metadataUrl": bootstrap.metadata_url,
            "callbackUrl": bootstrap.callback_url,
            "instanceToken": bootstrap.instance_token.expose_secret(),
        })
        .to_string();
        // Written aside, then linked into place: a kill -9 never leaves a half-written
        // instance, and linking fails when the name exists (a duplicate).
        let staged = self.staged(command, &text).await?;
        let linked = tokio::fs::hard_link(&staged, &path).await;
        let _ = tokio::fs::remove_file(&staged).await;
        match linked {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                return Err(Error::Duplicate {
                    command,
                    stderr_tail: String::new(),
                });
            }
            Err(e) => return Err(io(command, &e)),
        }
        self.append_ledger(
            command,
            &format!("{} {}\n", bootstrap.pool_id.as_str(), bootstrap.name),
        )
        .await?;
        self.finish_boot(&path).await;
        Ok(instance)
    }

    async fn delete(&self, pool: &Pool, instance: &InstanceId) -> Result<(), Error> {
        check_instance_name(Command::DeleteInstance, instance.as_str())?;
        match tokio::fs::remove_file(self.file(pool, instance)).await {
            Ok(()) => Ok(()),
            // Already gone is deleted, as GARM providers treat it.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(io(Command::DeleteInstance, &e)),
        }
    }

    async fn get(&self, pool: &Pool, instance: &InstanceId) -> Result<ProviderInstance, Error> {
        check_instance_name(Command::GetInstance, instance.as_str())?;
        let path = self.file(pool, instance);
        self.finish_boot(&path).await;
        read(&path, Command::GetInstance).await
    }

    async fn list(&self, pool: &Pool) -> Result<Vec<ProviderInstance>, Error> {
        let command = Command::ListInstances;
        let mut entries = match tokio::fs::read_dir(self.pool_dir(pool)).await {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(io(command, &e)),
        };
        let mut out = Vec::new();
        while let Some(entry) = entries.next_entry().await.map_err(|e| io(command, &e))? {
            if entry.path().extension().is_none_or(|ext| ext != "json") {
                continue;
            }
            self.finish_boot(&entry.path()).await;
            out.push(read(&entry.path(), command).await?);
        }
        Ok(out)
    }

    async fn pools(&self) -> Result<Option<Vec<PoolKey>>, Error> {
        // The pool directories named with this controller's prefix (what `remove_all` removes).
        let command = Command::ListInstances;
        let prefix = format!("{}_", self.controller);
        let mut entries = match tokio::fs::read_dir(&self.dir).await {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Some(Vec::new())),
            Err(e) => return Err(io(command, &e)),
        };
        let mut pools = Vec::new();
        while let Some(entry) = entries.next_entry().await.map_err(|e| io(command, &e))? {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with(&prefix)
                && let Ok(key) = PoolKey::parse(&name)
                && holds_an_instance(&entry.path()).await
            {
                pools.push(key);
            }
        }
        pools.sort();
        Ok(Some(pools))
    }

    async fn remove_all(&self) -> Result<(), Error> {
        let command = Command::RemoveAllInstances;
        let prefix = format!("{}_", self.controller);
        let mut entries = match tokio::fs::read_dir(&self.dir).await {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(io(command, &e)),
        };
        while let Some(entry) = entries.next_entry().await.map_err(|e| io(command, &e))? {
            if entry.file_name().to_string_lossy().starts_with(&prefix) {
                tokio::fs::remove_dir_all(entry.path())
                    .await
                    .map_err(|e| io(command, &e))?;
            }
        }
        Ok(())
    }

    async fn start(&self, pool: &Pool, instance: &InstanceId) -> Result<(), Error> {
        self.get(pool, instance).await.map(|_| ())
    }

    async fn stop(&self, pool: &Pool, instance: &InstanceId) -> Result<(), Error> {
        self.get(pool, instance).await.map(|_| ())
    }

    async fn version(&self) -> Result<String, Error> {
        Ok("v0.1.0".to_owned())
    }
}

/// Whether a pool directory holds an instance file: a directory whose instances were all
/// deleted is left behind, and is no pool of instances (`pools` lists those only, so a sweep
/// does not ask GitHub about it for ever).
async fn holds_an_instance(dir: &Path) -> bool {
    let Ok(mut entries) = tokio::fs::read_dir(dir).await else {
        return false;
    };
    while let Ok(Some(entry)) = entries.next_entry().await {
        if entry.path().extension().is_some_and(|ext| ext == "json") {
            return true;
        }
    }
    false
}
