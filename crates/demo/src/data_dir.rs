//! The demo's data directory: what lives where, the one-demo-per-directory lock, `--reset`,
//! and the two identities that must outlive a lost database (the controller id and the
//! encryption key), kept as files beside it.
//!
//! ```text
//! <dir>/scaleset.db      the controller's SQLite database (delete it to rehearse a disaster)
//! <dir>/github.json      the simulated GitHub's state
//! <dir>/instances/       the fake cloud's machines, one file each, by pool key
//! <dir>/controller-id    the controller id (a UUID), pinned on the first run
//! <dir>/encryption.key   the key that encrypts secrets in the database (base64, mode 0600)
//! <dir>/demo.lock        held while a demo runs on the directory
//! <dir>/scaleset.db.worker-lock  held by the control loop (one worker per SQLite file)
//! ```

use std::fs::File;
use std::path::{Path, PathBuf};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use nix::fcntl::{Flock, FlockArg};
use ring::rand::SecureRandom as _;
use uuid::Uuid;

use crate::error::Error;

/// The files of one demo.
#[derive(Debug, Clone)]
pub struct DataDir {
    root: PathBuf,
}

impl DataDir {
    /// The directory `root`, created if missing; made absolute (the database URL needs it).
    pub fn create(root: &Path) -> Result<Self, Error> {
        std::fs::create_dir_all(root).map_err(|e| Error::file("create", root, e))?;
        let root = root
            .canonicalize()
            .map_err(|e| Error::file("resolve", root, e))?;
        Ok(Self { root })
    }

    /// The directory itself.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The SQLite database file.
    pub fn database(&self) -> PathBuf {
        self.root.join("scaleset.db")
    }

    /// The database file and SQLite's companions (`-wal`, `-shm`): what a disaster deletes.
    pub fn database_files(&self) -> Vec<PathBuf> {
        let db = self.database();
        let mut files = vec![db.clone()];
        for suffix in ["-wal", "-shm", "-journal"] {
            let mut name = db.as_os_str().to_owned();
            name.push(suffix);
            files.push(PathBuf::from(name));
        }
        files
    }

    /// The simulated GitHub's saved state.
    pub fn github_state(&self) -> PathBuf {
        self.root.join("github.json")
    }

    /// The fake cloud's instance files.
    pub fn instances(&self) -> PathBuf {
        self.root.join("instances")
    }

    /// Takes the directory for this process; refused while another demo holds it.
    pub(crate) fn lock(&self) -> Result<Flock<File>, Error> {
        let path = self.root.join("demo.lock");
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|e| Error::file("open", &path, e))?;
        Flock::lock(file, FlockArg::LockExclusiveNonblock).map_err(|_| Error::Busy { path })
    }

    /// Deletes everything the demo keeps here (the lock must be held), for `--reset`.
    pub(crate) fn reset(&self) -> Result<(), Error> {
        let mut files = self.database_files();
        files.push(self.github_state());
        files.push(self.root.join("controller-id"));
        files.push(self.root.join("encryption.key"));
        files.push(self.app_key_file());
        for file in files {
            match std::fs::remove_file(&file) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(Error::file("delete", &file, e)),
            }
        }
        match std::fs::remove_dir_all(self.instances()) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(Error::file("delete", &self.instances(), e)),
        }
    }

    /// The pinned controller id, generated and written on the first run.
    pub(crate) fn controller_id(&self) -> Result<Uuid, Error> {
        let path = self.root.join("controller-id");
        let text = self.read_or_create(&path, || Uuid::new_v4().to_string())?;
        Uuid::parse_str(text.trim()).map_err(|e| Error::Corrupt {
            path,
            reason: format!("not a UUID ({e}); delete it with --reset to start over"),
        })
    }

    /// The demo GitHub App's private key (`github-app.pem`), written on the first run.
    pub fn app_key_file(&self) -> PathBuf {
        self.root.join("github-app.pem")
    }

    /// The demo GitHub App's private key, from [`DataDir::app_key_file`].
    pub(crate) fn app_key(&self) -> Result<String, Error> {
        self.read_or_create(&self.app_key_file(), || crate::github::APP_KEY.to_owned())
    }

    /// The encryption key's file (base64 of 32 bytes, owner-only), as the configuration names it.
    pub fn encryption_key_file(&self) -> PathBuf {
        self.root.join("encryption.key")
    }

    /// The encryption key's bytes, generated and written (owner-only) on the first run.
    pub(crate) fn encryption_key(&self) -> Result<Vec<u8>, Error> {
        let path = self.encryption_key_file();
        let mut generated = Ok(());
        let text = self.read_or_create(&path, || {
            let mut bytes = [0_u8; 32];
            generated = ring::rand::SystemRandom::new().fill(&mut bytes);
            STANDARD.encode(bytes)
        })?;
        if generated.is_err() {
            return Err(Error::Corrupt {
                path,
                reason: "the system random source failed".to_owned(),
            });
        }
        STANDARD.decode(text.trim()).map_err(|e| Error::Corrupt {
            path,
            reason: format!("not base64 ({e}); delete it with --reset to start over"),
        })
    }

    fn read_or_create(&self, path: &Path, make: impl FnOnce() -> String) -> Result<String, Error> {
        match std::fs::read_to_string(path) {
            Ok(text) => Ok(text),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let text = make();
                let mut options = std::fs::OpenOptions::new();
                options.write(true).create_new(true);
                std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
                let mut file = options
                    .open(path)
                    .map_err(|e| Error::file("create", path, e))?;
                std::io::Write::write_all(&mut file, text.as_bytes())
                    .and_then(|()| file.sync_all())
                    .map_err(|e| Error::file("write", path, e))?;
                Ok(text)
            }
            Err(e) => Err(Error::file("read", path, e)),
        }
    }
}
