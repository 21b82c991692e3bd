//! TLS client configurations, for every connection svc makes out (upstream brokers over mqtts
//! and wss, PostgreSQL): the trusted roots (a CA's PEM, or the Mozilla roots compiled in), an
//! optional client certificate, how much of the server's certificate to verify, and an optional
//! name to verify it against.

use std::sync::Arc;
use tokio_rustls::rustls::client::danger::{
    HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier,
};
use tokio_rustls::rustls::client::WebPkiServerVerifier;
use tokio_rustls::rustls::crypto::{ring, CryptoProvider};
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use tokio_rustls::rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme,
};

/// How much of the server's certificate is checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Verify {
    /// Its chain up to a trusted root, and that it was issued for the server's name.
    #[default]
    Full,
    /// Its chain only, whatever name it was issued for (PostgreSQL's `sslmode=verify-ca`).
    ChainOnly,
    /// Nothing: the connection is encrypted, but to whoever answers.
    Nothing,
}

/// What a TLS client connection trusts and presents. `what` names where each part came from,
/// for the error sentences (`tls.ca`, `sslrootcert`, …).
#[derive(Debug, Default)]
pub struct ClientTls<'a> {
    /// PEM certificates to trust instead of the Mozilla roots, and where they came from.
    pub ca: Option<(&'a str, &'a str)>,
    pub verify: Verify,
    /// A name to verify the certificate against instead of the host connected to.
    pub server_name: Option<&'a str>,
    /// A client certificate chain and its key, both PEM.
    pub client_cert: Option<(&'a str, &'a str)>,
}

/// The client configuration `tls` describes.
pub fn client_config(tls: &ClientTls<'_>) -> Result<ClientConfig, String> {
    let provider = Arc::new(ring::default_provider());
    let mut roots = RootCertStore::empty();
    match tls.ca {
        Some((pem, what)) => {
            for cert in CertificateDer::pem_slice_iter(pem.as_bytes()) {
                let cert = cert.map_err(|e| format!("`{what}` is not valid PEM: {e}"))?;
                roots
                    .add(cert)
                    .map_err(|e| format!("`{what}` holds an unusable certificate: {e}"))?;
            }
            if roots.is_empty() {
                return Err(format!("`{what}` holds no certificate"));
            }
        }
        None => roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned()),
    }
    let webpki = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone())
        .build()
        .map_err(|e| format!("cannot verify with the given CA: {e}"))?;
    let server_name = tls
        .server_name
        .map(|name| {
            ServerName::try_from(name.to_string())
                .map_err(|_| format!("`{name}` is not a host name"))
        })
        .transpose()?;
    let verifier: Arc<dyn ServerCertVerifier> = Arc::new(Verifier {
        webpki,
        provider: provider.clone(),
        server_name,
        verify: tls.verify,
    });
    let builder = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("cannot set up TLS: {e}"))?
        .dangerous()
        .with_custom_certificate_verifier(verifier);
    match tls.client_cert {
        Some((cert, key)) => {
            let chain = CertificateDer::pem_slice_iter(cert.as_bytes())
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| format!("the client certificate is not valid PEM: {e}"))?;
            let key = PrivateKeyDer::from_pem_slice(key.as_bytes())
                .map_err(|e| format!("the client key is not a usable PEM private key: {e}"))?;
            builder
                .with_client_auth_cert(chain, key)
                .map_err(|e| format!("the client certificate and key do not go together: {e}"))
        }
        None => Ok(builder.with_no_client_auth()),
    }
}

/// Verifies as webpki does, against `server_name` when one is given (the connection still goes
/// to, and sends SNI for, the host), as far as `verify` asks.
#[derive(Debug)]
struct Verifier {
    webpki: Arc<WebPkiServerVerifier>,
    provider: Arc<CryptoProvider>,
    server_name: Option<ServerName<'static>>,
    verify: Verify,
}

impl ServerCertVerifier for Verifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, tokio_rustls::rustls::Error> {
        let name = self.server_name.as_ref().unwrap_or(server_name);
        let verified = || {
            self.webpki
                .verify_server_cert(end_entity, intermediates, name, ocsp_response, now)
        };
        match self.verify {
            Verify::Nothing => Ok(ServerCertVerified::assertion()),
            Verify::Full => verified(),
            Verify::ChainOnly => match verified() {
                Err(tokio_rustls::rustls::Error::InvalidCertificate(
                    CertificateError::NotValidForName
                    | CertificateError::NotValidForNameContext { .. },
                )) => Ok(ServerCertVerified::assertion()),
                other => other,
            },
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, tokio_rustls::rustls::Error> {
        tokio_rustls::rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, tokio_rustls::rustls::Error> {
        tokio_rustls::rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}
