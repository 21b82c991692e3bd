//! The TLS client configuration of an upstream connection (mqtts, wss), read from the upstream
//! record's `tls` object: `ca` (PEM; else the Mozilla roots), `cert` and `key` (a client
//! certificate), `server_name` (a name to verify against), and the explicit opt-out of
//! verification, `insecure_skip_verify`.

use crate::tls_client::{self, ClientTls, Verify};
use serde_json::Value;
use tokio_rustls::rustls::ClientConfig;

/// The client configuration from a normalised record's `tls` object.
pub fn client_config(tls: &Value) -> Result<ClientConfig, String> {
    let text = |name: &str| tls.get(name).and_then(Value::as_str);
    let insecure = tls.get("insecure_skip_verify").and_then(Value::as_bool) == Some(true);
    tls_client::client_config(&ClientTls {
        ca: text("ca").map(|pem| (pem, "tls.ca")),
        verify: if insecure {
            Verify::Nothing
        } else {
            Verify::Full
        },
        server_name: text("server_name"),
        client_cert: text("cert").zip(text("key")),
    })
}
