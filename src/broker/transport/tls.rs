//! TLS for the mqtts and wss listeners: the acceptor built from the configured PEM certificate
//! and key (with errors that name the file and what is wrong with it), and the server handshake.

use super::{Listener, TlsStream, TLS_HANDSHAKE_TIMEOUT};
use anyhow::anyhow;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use tokio::net::TcpStream;
use tokio_rustls::rustls::crypto::ring;
use tokio_rustls::rustls::pki_types::pem::{self, PemObject};
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::rustls::ServerConfig;
use tokio_rustls::TlsAcceptor;

/// Builds the TLS acceptor from a PEM certificate chain and a PEM private key (PKCS#8, PKCS#1
/// or SEC1).
pub fn tls_acceptor(cert: &Path, key: &Path) -> anyhow::Result<TlsAcceptor> {
    let chain = certificates(cert)?;
    let key_der = private_key(key)?;
    // The provider is named rather than taken from the process default: both ring and aws-lc-rs
    // are compiled into the tree, and rustls refuses to guess between them.
    let config = ServerConfig::builder_with_provider(Arc::new(ring::default_provider()))
        .with_safe_default_protocol_versions()
        .map_err(|e| anyhow!("cannot set up TLS: {e}"))?
        .with_no_client_auth()
        .with_single_cert(chain, key_der)
        .map_err(|e| {
            anyhow!(
                "cannot use the TLS certificate {} with the private key {}: {e}",
                cert.display(),
                key.display()
            )
        })?;
    Ok(TlsAcceptor::from(Arc::new(config)))
}

fn certificates(path: &Path) -> anyhow::Result<Vec<CertificateDer<'static>>> {
    let text = std::fs::read(path)
        .map_err(|e| anyhow!("cannot read the TLS certificate {}: {e}", path.display()))?;
    let chain = CertificateDer::pem_slice_iter(&text)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| {
            anyhow!(
                "the TLS certificate {} is not valid PEM: {e}",
                path.display()
            )
        })?;
    if chain.is_empty() {
        return Err(anyhow!("no certificate in {}", path.display()));
    }
    Ok(chain)
}

fn private_key(path: &Path) -> anyhow::Result<PrivateKeyDer<'static>> {
    let text = std::fs::read(path)
        .map_err(|e| anyhow!("cannot read the TLS private key {}: {e}", path.display()))?;
    PrivateKeyDer::from_pem_slice(&text).map_err(|e| match e {
        pem::Error::NoItemsFound => anyhow!("no private key in {}", path.display()),
        e => anyhow!(
            "the TLS private key {} is not valid PEM: {e}",
            path.display()
        ),
    })
}

/// The server side of a client's TLS handshake, bounded by [`TLS_HANDSHAKE_TIMEOUT`]; `None`
/// (logged) when it fails.
pub(super) async fn handshake(
    acceptor: &TlsAcceptor,
    tcp: TcpStream,
    peer: SocketAddr,
    listener: Listener,
) -> Option<TlsStream> {
    match tokio::time::timeout(TLS_HANDSHAKE_TIMEOUT, acceptor.accept(tcp)).await {
        Ok(Ok(stream)) => Some(stream),
        Ok(Err(e)) => {
            // Scanners and clients that distrust the certificate fail here all the time.
            tracing::debug!(%peer, %listener, error = %e, "TLS handshake failed");
            None
        }
        Err(_) => {
            tracing::debug!(%peer, %listener, "TLS handshake timed out");
            None
        }
    }
}
