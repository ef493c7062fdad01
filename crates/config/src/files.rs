//! What `--check` looks at beyond the text: every file and directory the configuration names
//! and the process will use later, checked as it will be used (the SQLite database's directory
//! writable, an external provider's executable executable and its `config_file` readable, the
//! fake provider's state directory creatable, the TLS files readable). Secret files (keys,
//! tokens, CA bundles) are already read while the file is validated.
//!
//! Not part of [`crate::Config::load`]: a worker started before a provider is installed still
//! starts (its creates fail and are retried); `--check` is where the operator asks.

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};

use scaleset_provider::ProviderKind;
use scaleset_store::DatabaseUrl;

use crate::{Config, ConfigError, Problem};

impl Config {
    /// Checks every file and directory the configuration names, as `--check` does.
    ///
    /// # Errors
    ///
    /// Every problem at once, each naming its key (`database.url`,
    /// `provider "lxd".executable`), the path, what is wrong and what to do.
    pub fn check_files(&self, source_name: &str) -> Result<(), ConfigError> {
        let mut problems = Vec::new();
        if let DatabaseUrl::Sqlite { path } = self.store.url()
            && let Some(why) = sqlite_file(Path::new(path))
        {
            problems.push(Problem::new("database.url", why));
        }
        for provider in &self.providers {
            if let ProviderKind::External(external) = &provider.kind {
                let key = |field: &str| format!("provider {:?}.{field}", provider.name);
                if let Some(why) = executable(&external.executable) {
                    problems.push(Problem::new(key("executable"), why));
                }
                if let Some(why) = readable(&external.config_file) {
                    problems.push(Problem::new(key("config_file"), why));
                }
            }
        }
        for (name, file) in &self.settings.runner_install_templates {
            if let Some(why) = readable(file) {
                problems.push(Problem::new(
                    format!("worker.runner_install_templates.{name}"),
                    why,
                ));
            }
        }
        if let Some(tls) = &self.server.tls {
            for (key, path) in [
                ("server.tls_cert_file", &tls.cert),
                ("server.tls_key_file", &tls.key),
            ] {
                if let Some(why) = readable(path) {
                    problems.push(Problem::new(key, why));
                }
            }
        }
        if let Some(dir) = &self.fake.state_dir
            && let Some(why) = creatable_dir(dir)
        {
            problems.push(Problem::new("fake.state_dir", why));
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(ConfigError {
                source_name: source_name.to_owned(),
                problems,
            })
        }
    }
}

/// An SQLite database file: an existing one must open for reading and writing; its directory
/// must exist and be writable (SQLite creates the file, its journal and its WAL there).
fn sqlite_file(path: &Path) -> Option<String> {
    let shown = path.display();
    if path.exists() {
        if !path.is_file() {
            return Some(format!("{shown} is not a file; name the database file"));
        }
        if let Err(e) = OpenOptions::new().read(true).write(true).open(path) {
            return Some(format!(
                "cannot open the database {shown} for writing: {e}; give the user running \
                 scaleset read and write access to it"
            ));
        }
    }
    let dir = parent(path);
    if !dir.is_dir() {
        return Some(format!(
            "the directory {} of the database {shown} does not exist; create it \
             (e.g. mkdir -p {0}) or name a file in an existing directory",
            dir.display()
        ));
    }
    writable_dir(&dir).map(|why| format!("the database {shown}: {why}"))
}

/// An external provider's executable: a file with an execute permission.
fn executable(path: &Path) -> Option<String> {
    use std::os::unix::fs::PermissionsExt as _;
    let shown = path.display();
    match std::fs::metadata(path) {
        Err(e) => Some(format!(
            "cannot use {shown}: {e}; install the provider there or give its path"
        )),
        Ok(meta) if !meta.is_file() => Some(format!(
            "{shown} is not a file; give the provider executable's path"
        )),
        Ok(meta) if meta.permissions().mode() & 0o111 == 0 => {
            Some(format!("{shown} is not executable; chmod +x it"))
        }
        Ok(_) => None,
    }
}

/// A file the process reads.
fn readable(path: &Path) -> Option<String> {
    let shown = path.display();
    if path.is_dir() {
        return Some(format!("{shown} is a directory; give the file's path"));
    }
    File::open(path).err().map(|e| {
        format!(
            "cannot read {shown}: {e}; create it or give the user running scaleset read \
             access to it"
        )
    })
}

/// A directory the process creates if missing: it, or its nearest existing ancestor, must be
/// a writable directory.
fn creatable_dir(dir: &Path) -> Option<String> {
    let mut existing = dir.to_path_buf();
    while !existing.exists() {
        existing = parent(&existing);
    }
    if !existing.is_dir() {
        return Some(format!(
            "{} is not a directory; name a directory",
            existing.display()
        ));
    }
    writable_dir(&existing)
}

/// The directory of `path` (`.` for a bare file name).
fn parent(path: &Path) -> PathBuf {
    match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// Whether a file can be created in `dir`, found by creating (and removing) an empty one: the
/// permission bits alone do not say it (ownership, read-only mounts, ACLs).
fn writable_dir(dir: &Path) -> Option<String> {
    let probe = dir.join(format!(".scaleset-check-{}", std::process::id()));
    match OpenOptions::new().write(true).create_new(true).open(&probe) {
        Ok(_) => {
            let _ = std::fs::remove_file(&probe);
            None
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => None,
        Err(e) => Some(format!(
            "cannot create files in {}: {e}; give the user running scaleset write access to it",
            dir.display()
        )),
    }
}
