//! Connectors' passwords (write-only), svc's OPC UA application instance certificate, and
//! each domain's server certificate trust list.

use super::{SqliteStore, StoreResult};
use crate::store::interface::ConnectorSecrets;
use crate::store::types::*;
use rusqlite::{params, OptionalExtension};

impl ConnectorSecrets for SqliteStore {
    fn set_connector_password(
        &self,
        domain: &str,
        key: &str,
        password: Option<&str>,
    ) -> StoreResult<()> {
        self.set_secret("connector_secrets", "connector", domain, key, password)
    }

    fn connectors_of(&self, domain: &str) -> StoreResult<Vec<StoredUpstream>> {
        self.records_with_secret(
            domain,
            crate::store::CONNECTORS,
            "connector_secrets",
            "connector",
        )
    }

    fn connector_identity(&self) -> StoreResult<Option<(Vec<u8>, Vec<u8>)>> {
        Ok(self
            .conn()?
            .query_row(
                "SELECT certificate, private_key FROM connector_identity WHERE id = 1",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()?)
    }

    fn keep_connector_identity(
        &self,
        certificate: &[u8],
        private_key: &[u8],
    ) -> StoreResult<(Vec<u8>, Vec<u8>)> {
        self.conn()?.execute(
            "INSERT INTO connector_identity (id, certificate, private_key) VALUES (1, ?1, ?2) \
             ON CONFLICT (id) DO NOTHING",
            params![certificate, private_key],
        )?;
        Ok(self
            .connector_identity()?
            .unwrap_or_else(|| (certificate.to_vec(), private_key.to_vec())))
    }

    fn server_certificates(&self, domain: &str) -> StoreResult<Vec<ServerCertificate>> {
        let conn = self.conn()?;
        let mut stmt = conn.prepare(
            "SELECT thumbprint, certificate, state, first_seen_ms FROM connector_certificates \
             WHERE domain = ?1 ORDER BY first_seen_ms, thumbprint",
        )?;
        let rows = stmt.query_map(params![domain], |r| {
            Ok(ServerCertificate {
                thumbprint: r.get(0)?,
                der: r.get(1)?,
                state: r.get(2)?,
                first_seen_ms: r.get(3)?,
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    fn note_server_certificate(
        &self,
        domain: &str,
        thumbprint: &str,
        der: &[u8],
        now_ms: i64,
    ) -> StoreResult<()> {
        self.conn()?.execute(
            "INSERT INTO connector_certificates (domain, thumbprint, certificate, state, first_seen_ms) \
             VALUES (?1, ?2, ?3, 'pending', ?4) ON CONFLICT (domain, thumbprint) DO NOTHING",
            params![domain, thumbprint, der, now_ms],
        )?;
        Ok(())
    }

    fn judge_server_certificate(
        &self,
        domain: &str,
        thumbprint: &str,
        trusted: bool,
    ) -> StoreResult<bool> {
        let state = if trusted { "trusted" } else { "rejected" };
        Ok(self.conn()?.execute(
            "UPDATE connector_certificates SET state = ?3 WHERE domain = ?1 AND thumbprint = ?2",
            params![domain, thumbprint, state],
        )? > 0)
    }

    fn forget_server_certificate(&self, domain: &str, thumbprint: &str) -> StoreResult<bool> {
        Ok(self.conn()?.execute(
            "DELETE FROM connector_certificates WHERE domain = ?1 AND thumbprint = ?2",
            params![domain, thumbprint],
        )? > 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identity_is_kept_once_and_trust_is_per_domain() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(&dir.path().join("svc.db")).unwrap();
        assert_eq!(store.connector_identity().unwrap(), None);
        let first = store.keep_connector_identity(b"cert1", b"key1").unwrap();
        let second = store.keep_connector_identity(b"cert2", b"key2").unwrap();
        assert_eq!(first, (b"cert1".to_vec(), b"key1".to_vec()));
        assert_eq!(second, first);
        store
            .note_server_certificate("acme", "ab", b"der", 5)
            .unwrap();
        store
            .note_server_certificate("acme", "ab", b"other", 6)
            .unwrap();
        assert!(store.server_certificates("beta").unwrap().is_empty());
        let listed = store.server_certificates("acme").unwrap();
        assert_eq!((listed.len(), listed[0].state.as_str()), (1, "pending"));
        assert_eq!(listed[0].der, b"der");
        assert!(!store.judge_server_certificate("beta", "ab", true).unwrap());
        assert!(store.judge_server_certificate("acme", "ab", true).unwrap());
        assert_eq!(
            store.server_certificates("acme").unwrap()[0].state,
            "trusted"
        );
        assert!(store.forget_server_certificate("acme", "ab").unwrap());
        assert!(store.server_certificates("acme").unwrap().is_empty());
        store
            .set_connector_password("acme", "k", Some("pw"))
            .unwrap();
        store.set_connector_password("acme", "k", None).unwrap();
    }
}
