//! The TLS client configuration of an upstream connection (mqtts, wss): the upstream's CA (or
//! the Mozilla roots compiled in), an optional client certificate, an optional name to verify
//! the server's certificate against, and the explicit opt-out of verification.

use serde_json::Value;
use std::sync::Arc;
use tokio_rustls::rustls::client::danger::{
    HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier,
};
use tokio_rustls::rustls::client::WebPkiServerVerifier;
use tokio_rustls::rustls::crypto::{ring, CryptoProvider};
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use tokio_rustls::rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};

/// The client configuration from a normalised record's `tls` object.
pub fn client_config(tls: &Value) -> Result<ClientConfig, String> {
    let provider = Arc::new(ring::default_provider());
    let mut roots = RootCertStore::empty();
    match tls.get("ca").and_then(Value::as_str) {
        Some(pem) => {
            for cert in CertificateDer::pem_slice_iter(pem.as_bytes()) {
                let cert = cert.map_err(|e| format!("`tls.ca` is not valid PEM: {e}"))?;
                roots
                    .add(cert)
                    .map_err(|e| format!("`tls.ca` holds an unusable certificate: {e}"))?;
            }
            if roots.is_empty() {
                return Err("`tls.ca` holds no certificate".into());
            }
        }
        None => roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned()),
    }
    let webpki = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone())
        .build()
        .map_err(|e| format!("cannot verify with `tls.ca`: {e}"))?;
    let insecure = tls.get("insecure_skip_verify").and_then(Value::as_bool) == Some(true);
    let server_name = tls
        .get("server_name")
        .and_then(Value::as_str)
        .map(|name| {
            ServerName::try_from(name.to_string())
                .map_err(|_| format!("`tls.server_name` `{name}` is not a host name"))
        })
        .transpose()?;
    let verifier: Arc<dyn ServerCertVerifier> = Arc::new(Verifier {
        webpki,
        provider: provider.clone(),
        server_name,
        insecure,
    });
    let builder = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("cannot set up TLS: {e}"))?
        .dangerous()
        .with_custom_certificate_verifier(verifier);
    let cert = tls.get("cert").and_then(Value::as_str);
    let key = tls.get("key").and_then(Value::as_str);
    match (cert, key) {
        (Some(cert), Some(key)) => {
            let chain = CertificateDer::pem_slice_iter(cert.as_bytes())
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| format!("`tls.cert` is not valid PEM: {e}"))?;
            let key = PrivateKeyDer::from_pem_slice(key.as_bytes())
                .map_err(|e| format!("`tls.key` is not a usable PEM private key: {e}"))?;
            builder
                .with_client_auth_cert(chain, key)
                .map_err(|e| format!("`tls.cert` and `tls.key` do not go together: {e}"))
        }
        _ => Ok(builder.with_no_client_auth()),
    }
}

/// Verifies as webpki does, against `server_name` when the record names one (the connection
/// still goes to, and sends SNI for, the host), or not at all with `insecure_skip_verify`.
#[derive(Debug)]
struct Verifier {
    webpki: Arc<WebPkiServerVerifier>,
    provider: Arc<CryptoProvider>,
    server_name: Option<ServerName<'static>>,
    insecure: bool,
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
        if self.insecure {
            return Ok(ServerCertVerified::assertion());
        }
        let name = self.server_name.as_ref().unwrap_or(server_name);
        self.webpki
            .verify_server_cert(end_entity, intermediates, name, ocsp_response, now)
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
