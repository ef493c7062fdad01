//! HTTPS for the simulator child of the benchmark examples `client_memory` (here) and the
//! control crate's `fleet`, which include this file with `#[path]`. The parent writes a
//! self-signed certificate for `localhost` and passes `h1|h2 CERT KEY` after `--serve`; the
//! child serves HTTPS with it, offering `h2` and `http/1.1` through ALPN (`h2`) or only
//! `http/1.1` (`h1`). Both ends of that command line live here so that they cannot drift apart;
//! it is example code rather than library API because only these hand-run benchmarks
//! (`docs/benchmarks.md`) spawn a simulator that way.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use anyhow::Result;
use scaleset_sim::TlsIdentity;

/// A self-signed certificate for `localhost`, written as `cert.pem` and `key.pem`.
pub(crate) struct SelfSigned {
    /// The certificate in PEM: the CA bundle a client trusts the child with.
    pub(crate) cert_pem: String,
    cert_path: PathBuf,
    key_path: PathBuf,
}

impl SelfSigned {
    /// Generates the certificate and writes it and its key into `dir`, which must outlive the
    /// child (it reads them when it starts).
    pub(crate) fn write(dir: &Path) -> Result<Self> {
        let cert = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()])?;
        let (cert_path, key_path) = (dir.join("cert.pem"), dir.join("key.pem"));
        std::fs::write(&cert_path, cert.cert.pem())?;
        std::fs::write(&key_path, cert.signing_key.serialize_pem())?;
        Ok(Self {
            cert_pem: cert.cert.pem(),
            cert_path,
            key_path,
        })
    }

    /// The arguments after `--serve` that make the child serve HTTPS with this certificate,
    /// offering `h2` through ALPN when `h2`, else only `http/1.1`.
    pub(crate) fn serve_args(&self, h2: bool) -> [&OsStr; 3] {
        [
            OsStr::new(if h2 { "h2" } else { "h1" }),
            self.cert_path.as_os_str(),
            self.key_path.as_os_str(),
        ]
    }
}

/// The child's end: the identity that [`SelfSigned::serve_args`] named in `args` (the
/// arguments after `--serve`), or `None` (plain HTTP) when there are not those three.
pub(crate) fn identity(args: &[String]) -> Result<Option<TlsIdentity>> {
    let [mode, cert, key] = args else {
        return Ok(None);
    };
    let identity = TlsIdentity::new(
        std::fs::read_to_string(cert)?,
        std::fs::read_to_string(key)?,
    );
    Ok(Some(if mode == "h1" {
        identity.without_h2()
    } else {
        identity
    }))
}
