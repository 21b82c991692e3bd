//! svc's application instance certificate and the crate's PKI directory: [`new_identity`]
//! makes the certificate, [`Pki`] lays out a private PKI directory for one connect (svc's own
//! certificate and key, the domain's trusted server certificates) and removes it after, and
//! [`check_trusted`] refuses a server certificate the domain does not trust yet.

use crate::connectors::kind::{Failure, FailureKind, Identity};
use base64::Engine;
use opcua::crypto::{CertificateStore, X509Data, X509};
use std::path::{Path, PathBuf};
use x509_cert::der::Decode;

/// A new self-signed certificate (RSA 2048, five years) naming `application_uri`.
pub fn new_identity(application_uri: &str) -> Result<Identity, String> {
    let uri = application_uri.trim();
    if uri.is_empty() {
        return Err("the application URI is empty".into());
    }
    // The URI first, then localhost and this computer's names (no addresses: they change).
    let alt_host_names = X509Data::alt_host_names(uri, None, true, true, false);
    let data = X509Data {
        key_size: 2048,
        common_name: "svc".into(),
        organization: "svc".into(),
        organizational_unit: "connectors".into(),
        country: "CH".into(),
        state: "-".into(),
        alt_host_names,
        certificate_duration_days: 5 * 365,
    };
    let (certificate, key) = X509::cert_and_pkey(&data)?;
    let certificate = certificate
        .to_der()
        .map_err(|_| "the new certificate could not be encoded".to_string())?;
    let private_key = key
        .to_der()
        .map_err(|e| format!("the new private key could not be encoded: {e}"))?
        .as_bytes()
        .to_vec();
    Ok(Identity {
        certificate,
        private_key,
    })
}

/// The application URI in a certificate's subject alternative names.
pub fn application_uri(certificate: &[u8]) -> Option<String> {
    use x509_cert::ext::pkix::{name::GeneralName, SubjectAltName};
    let cert = x509_cert::Certificate::from_der(certificate).ok()?;
    let (_, san) = cert.tbs_certificate.get::<SubjectAltName>().ok()??;
    san.0.into_iter().find_map(|name| match name {
        GeneralName::UniformResourceIdentifier(uri) => Some(uri.to_string()),
        _ => None,
    })
}

/// Whether the domain trusts `certificate` (DER): a server certificate not in the list is
/// refused with a security failure carrying it, for an administrator to trust.
pub fn check_trusted(certificate: &[u8], trusted: &[Vec<u8>]) -> Result<(), Failure> {
    if certificate.is_empty() {
        return Err(Failure::new(
            FailureKind::Security,
            "the server's endpoint has no certificate for its security policy",
        ));
    }
    if trusted.iter().any(|t| t.as_slice() == certificate) {
        return Ok(());
    }
    let subject = x509_cert::Certificate::from_der(certificate)
        .map(|c| c.tbs_certificate.subject.to_string())
        .unwrap_or_else(|_| "an unreadable subject".into());
    let mut failure = Failure::new(
        FailureKind::Security,
        format!("the server's certificate ({subject}) is not trusted yet: an administrator can trust it"),
    )
    .with_status("BadCertificateUntrusted");
    failure.untrusted_certificate = Some(certificate.to_vec());
    Err(failure)
}

/// A PKI directory for one connect, under the connector's scratch directory; removed on drop.
pub struct Pki {
    path: PathBuf,
}

impl Pki {
    /// Lays out `own/cert.der`, `private/private.pem` and `trusted/` under a new directory.
    pub fn create(
        scratch: &Path,
        identity: Option<&Identity>,
        trusted: &[Vec<u8>],
    ) -> Result<Pki, String> {
        let path = scratch.join(format!("pki-{}", uuid::Uuid::new_v4().simple()));
        let pki = Pki { path };
        let io = |e: std::io::Error| {
            format!(
                "the PKI directory {} could not be written: {e}",
                pki.path.display()
            )
        };
        for dir in ["own", "private", "trusted", "rejected"] {
            std::fs::create_dir_all(pki.path.join(dir)).map_err(io)?;
        }
        if let Some(identity) = identity {
            std::fs::write(pki.path.join("own/cert.der"), &identity.certificate).map_err(io)?;
            std::fs::write(
                pki.path.join("private/private.pem"),
                pem("PRIVATE KEY", &identity.private_key),
            )
            .map_err(io)?;
        }
        for certificate in trusted {
            // The crate finds a trusted certificate by its file name (subject and thumbprint).
            let Ok(x509) = X509::from_der(certificate) else {
                continue;
            };
            let name = CertificateStore::cert_file_name(&x509);
            std::fs::write(pki.path.join("trusted").join(name), certificate).map_err(io)?;
        }
        Ok(pki)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for Pki {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

fn pem(label: &str, der: &[u8]) -> String {
    let body = base64::engine::general_purpose::STANDARD.encode(der);
    let mut out = format!("-----BEGIN {label}-----\n");
    for line in body.as_bytes().chunks(64) {
        out.push_str(std::str::from_utf8(line).unwrap_or_default());
        out.push('\n');
    }
    out.push_str(&format!("-----END {label}-----\n"));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identity_names_its_application_uri_and_lays_out_a_pki() {
        let identity = new_identity("urn:svc:test").unwrap();
        assert_eq!(
            application_uri(&identity.certificate).as_deref(),
            Some("urn:svc:test")
        );
        let scratch = tempfile::tempdir().unwrap();
        let pki = Pki::create(
            scratch.path(),
            Some(&identity),
            std::slice::from_ref(&identity.certificate),
        )
        .unwrap();
        let key = opcua::crypto::PrivateKey::read_pem_file(&pki.path().join("private/private.pem"));
        assert!(key.is_ok());
        assert_eq!(
            std::fs::read_dir(pki.path().join("trusted"))
                .unwrap()
                .count(),
            1
        );
        let path = pki.path().to_path_buf();
        drop(pki);
        assert!(!path.exists());
        let refused = check_trusted(&identity.certificate, &[]).unwrap_err();
        assert_eq!(refused.kind, FailureKind::Security);
        assert_eq!(
            refused.untrusted_certificate.as_deref(),
            Some(identity.certificate.as_slice())
        );
        assert!(check_trusted(
            &identity.certificate,
            std::slice::from_ref(&identity.certificate)
        )
        .is_ok());
    }
}
