//! A CA bundle (PEM) as the client trusts it: the one parser of the bundle, used by the client
//! when it builds its TLS configuration and by every door that takes a bundle (the API, the
//! configuration file), so a bundle the client could not trust is refused where it is given.

use rustls_pki_types::CertificateDer;
use rustls_pki_types::pem::PemObject as _;

use crate::error::{Error, Result};

/// The trust anchors of a PEM bundle: every `CERTIFICATE` block must decode and parse as an
/// X.509 certificate usable as a trust anchor, and there must be at least one. Text outside
/// the blocks (comments, other PEM sections) is ignored, as rustls does.
///
/// # Errors
///
/// [`Error::InvalidCaBundle`] naming the certificate (1-based) and what is wrong with it.
pub fn ca_bundle_roots(pem: &[u8]) -> Result<rustls::RootCertStore> {
    let mut roots = rustls::RootCertStore::empty();
    for (index, cert) in CertificateDer::pem_slice_iter(pem).enumerate() {
        let number = index + 1;
        let cert = cert.map_err(|e| Error::InvalidCaBundle {
            reason: format!("certificate {number} is not readable PEM: {e}"),
        })?;
        roots.add(cert).map_err(|e| Error::InvalidCaBundle {
            reason: format!("certificate {number} is not an X.509 certificate: {e}"),
        })?;
    }
    if roots.is_empty() {
        return Err(Error::InvalidCaBundle {
            reason: "the bundle contains no PEM certificate (-----BEGIN CERTIFICATE-----)"
                .to_owned(),
        });
    }
    Ok(roots)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bundle_of_garbage_inside_pem_framing_is_refused() {
        let garbage = b"-----BEGIN CERTIFICATE-----\nZZZZ\n-----END CERTIFICATE-----\n";
        let refused = ca_bundle_roots(garbage).unwrap_err().to_string();
        assert!(refused.contains("certificate 1"), "{refused}");
        assert!(ca_bundle_roots(b"not pem").is_err());
        assert!(ca_bundle_roots(b"").is_err());
    }

    #[test]
    fn a_real_certificate_is_a_trust_anchor() {
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = rcgen::CertificateParams::new(vec!["ghes.example".to_owned()])
            .unwrap()
            .self_signed(&key)
            .unwrap();
        let roots = ca_bundle_roots(format!("# ours\n{}", cert.pem()).as_bytes()).unwrap();
        assert_eq!(roots.len(), 1);
    }
}
