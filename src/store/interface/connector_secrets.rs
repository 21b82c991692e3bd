//! What connectors keep beside their records: each connector's password (write-only: a record
//! says only `password_set`), svc's own OPC UA application instance certificate, and each
//! domain's list of server certificates it trusts, rejects, or has not decided on yet.

use crate::store::types::{ServerCertificate, StoredUpstream};
use crate::store::StoreResult;

pub trait ConnectorSecrets {
    /// Sets (or with `None` clears) the password of the connector record `key` of `domain`.
    fn set_connector_password(
        &self,
        domain: &str,
        key: &str,
        password: Option<&str>,
    ) -> StoreResult<()>;
    /// Every connector of `domain` (its fields, without id and times) by key, with its
    /// password.
    fn connectors_of(&self, domain: &str) -> StoreResult<Vec<StoredUpstream>>;
    /// svc's application instance certificate and private key (DER), if one was made.
    fn connector_identity(&self) -> StoreResult<Option<(Vec<u8>, Vec<u8>)>>;
    /// Keeps `certificate` and `private_key` as svc's identity unless one is kept already
    /// (another instance made it first); returns the one kept.
    fn keep_connector_identity(
        &self,
        certificate: &[u8],
        private_key: &[u8],
    ) -> StoreResult<(Vec<u8>, Vec<u8>)>;
    /// The server certificates `domain` has met, oldest first.
    fn server_certificates(&self, domain: &str) -> StoreResult<Vec<ServerCertificate>>;
    /// Lists a certificate a server of `domain` presented as `pending`, unless it is listed.
    fn note_server_certificate(
        &self,
        domain: &str,
        thumbprint: &str,
        der: &[u8],
        now_ms: i64,
    ) -> StoreResult<()>;
    /// Marks a listed certificate `trusted` or `rejected`; false when it is not listed.
    fn judge_server_certificate(
        &self,
        domain: &str,
        thumbprint: &str,
        trusted: bool,
    ) -> StoreResult<bool>;
    /// Removes a certificate from the list; false when it was not listed.
    fn forget_server_certificate(&self, domain: &str, thumbprint: &str) -> StoreResult<bool>;
}
