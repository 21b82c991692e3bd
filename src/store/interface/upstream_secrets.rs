//! Upstream passwords, kept out of the upstream records (write-only: a record says only
//! `password_set`), and the read the upstream supervisor needs.

use crate::store::types::StoredUpstream;
use crate::store::StoreResult;

/// Upstream passwords and the supervisor's read of a domain's upstreams.
pub trait UpstreamSecrets {
    /// Sets (or with `None` clears) the password of the upstream record `key`.
    fn set_upstream_password(
        &self,
        domain: &str,
        key: &str,
        password: Option<&str>,
    ) -> StoreResult<()>;
    /// Every upstream of `domain` with its password.
    fn upstreams_of(&self, domain: &str) -> StoreResult<Vec<StoredUpstream>>;
    /// The password of the upstream record `key`, if one is set.
    fn upstream_password(&self, domain: &str, key: &str) -> StoreResult<Option<String>>;
}
