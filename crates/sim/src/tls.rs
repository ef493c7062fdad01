//! HTTPS for the simulator: a rustls (ring) server configuration built from the certificate and
//! key given in [`crate::SimConfig::tls`], offering `h2` and `http/1.1` through ALPN as GitHub
//! does (or only `http/1.1`, to exercise a client's fallback).

use std::sync::Arc;

use rustls::ServerConfig;
use rustls_pki_types::pem::PemObject as _;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};

/// A certificate chain and its private key, in PEM, for the simulator's HTTPS listener. Its
/// `Debug` output hides the key.
#[derive(Clone, PartialEq, Eq)]
pub struct TlsIdentity {
    /// The certificate chain, leaf first, as PEM `CERTIFICATE` blocks.
    pub cert_chain_pem: String,
    /// The leaf's private key as one PEM block (PKCS#8, PKCS#1 or SEC1).
    pub key_pem: String,
    /// Whether ALPN offers `h2` (the default, as GitHub does); when `false` only `http/1.1`
    /// is offered, so clients must fall back to HTTP/1.1.
    pub offer_h2: bool,
}

impl TlsIdentity {
    /// A certificate chain and key in PEM, offering `h2` and `http/1.1`.
    pub fn new(cert_chain_pem: impl Into<String>, key_pem: impl Into<String>) -> Self {
        Self {
            cert_chain_pem: cert_chain_pem.into(),
            key_pem: key_pem.into(),
            offer_h2: true,
        }
    }

    /// Offers only `http/1.1` through ALPN.
    pub fn without_h2(mut self) -> Self {
        self.offer_h2 = false;
        self
    }
}

impl std::fmt::Debug for TlsIdentity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsIdentity")
            .field(
                "cert_chain_pem",
                &format_args!("{} bytes", self.cert_chain_pem.len()),
            )
            .field("key_pem", &"[redacted]")
            .field("offer_h2", &self.offer_h2)
            .finish()
    }
}

/// Why a [`TlsIdentity`] makes no server configuration; each message says what to fix.
#[derive(Debug, thiserror::Error)]
pub(crate) enum TlsError {
    /// The chain is not PEM.
    #[error("tls: the certificate chain is not valid PEM ({0})")]
    ChainPem(rustls_pki_types::pem::Error),
    /// The chain holds no certificate.
    #[error("tls: the certificate chain holds no PEM CERTIFICATE block")]
    NoCertificate,
    /// The key is not a PEM private key.
    #[error("tls: the private key is not a PEM PKCS#8, PKCS#1 or SEC1 key ({0})")]
    KeyPem(rustls_pki_types::pem::Error),
    /// No protocol version is usable.
    #[error("tls: no usable protocol version ({0})")]
    Versions(rustls::Error),
    /// The certificate and key do not go together.
    #[error("tls: the certificate and key do not make a usable identity ({0})")]
    Identity(rustls::Error),
}

/// The rustls server configuration for `identity`, or the problem in words that say what to fix.
pub(crate) fn server_config(identity: &TlsIdentity) -> Result<Arc<ServerConfig>, TlsError> {
    let certs = CertificateDer::pem_slice_iter(identity.cert_chain_pem.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .map_err(TlsError::ChainPem)?;
    if certs.is_empty() {
        return Err(TlsError::NoCertificate);
    }
    let key =
        PrivateKeyDer::from_pem_slice(identity.key_pem.as_bytes()).map_err(TlsError::KeyPem)?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(TlsError::Versions)?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(TlsError::Identity)?;
    config.alpn_protocols = if identity.offer_h2 {
        vec![b"h2".to_vec(), b"http/1.1".to_vec()]
    } else {
        vec![b"http/1.1".to_vec()]
    };
    Ok(Arc::new(config))
}
