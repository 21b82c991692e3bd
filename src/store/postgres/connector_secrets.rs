//! Connectors' passwords (write-only), svc's OPC UA application instance certificate, and
//! each domain's server certificate trust list.

use super::PgStore;
use crate::store::interface::ConnectorSecrets;
use crate::store::types::*;
use crate::store::StoreResult;

impl ConnectorSecrets for PgStore {
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
            .query_opt(
                "SELECT certificate, private_key FROM connector_identity WHERE id = 1",
                &[],
            )?
            .map(|r| (r.get(0), r.get(1))))
    }

    fn keep_connector_identity(
        &self,
        certificate: &[u8],
        private_key: &[u8],
    ) -> StoreResult<(Vec<u8>, Vec<u8>)> {
        self.execute(
            "INSERT INTO connector_identity (id, certificate, private_key) VALUES (1, $1, $2) \
             ON CONFLICT (id) DO NOTHING",
            &[&certificate, &private_key],
        )?;
        Ok(self
            .connector_identity()?
            .unwrap_or_else(|| (certificate.to_vec(), private_key.to_vec())))
    }

    fn server_certificates(&self, domain: &str) -> StoreResult<Vec<ServerCertificate>> {
        Ok(self
            .query(
                "SELECT thumbprint, certificate, state, first_seen_ms FROM connector_certificates \
                 WHERE domain = $1 ORDER BY first_seen_ms, thumbprint COLLATE \"C\"",
                &[&domain],
            )?
            .iter()
            .map(|r| ServerCertificate {
                thumbprint: r.get(0),
                der: r.get(1),
                state: r.get(2),
                first_seen_ms: r.get(3),
            })
            .collect())
    }

    fn note_server_certificate(
        &self,
        domain: &str,
        thumbprint: &str,
        der: &[u8],
        now_ms: i64,
    ) -> StoreResult<()> {
        self.execute(
            "INSERT INTO connector_certificates (domain, thumbprint, certificate, state, first_seen_ms) \
             VALUES ($1, $2, $3, 'pending', $4) ON CONFLICT (domain, thumbprint) DO NOTHING",
            &[&domain, &thumbprint, &der, &now_ms],
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
        Ok(self.execute(
            "UPDATE connector_certificates SET state = $3 WHERE domain = $1 AND thumbprint = $2",
            &[&domain, &thumbprint, &state],
        )? > 0)
    }

    fn forget_server_certificate(&self, domain: &str, thumbprint: &str) -> StoreResult<bool> {
        Ok(self.execute(
            "DELETE FROM connector_certificates WHERE domain = $1 AND thumbprint = $2",
            &[&domain, &thumbprint],
        )? > 0)
    }
}
