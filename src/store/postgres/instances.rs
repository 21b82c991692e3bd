//! What instances sharing one PostgreSQL database share besides the data: the JWT signing
//! secret (when none is configured, so a token from one instance is good on every other), and
//! word of every identity change (`LISTEN svc_identity`, raised by triggers on the identity
//! tables), so an instance drops what it cached of users, keys and grants as soon as another
//! one changes them.

use super::PgStore;
use crate::store::{StoreError, StoreResult};
use futures::StreamExt;
use std::sync::Arc;
use std::time::Duration;
use tokio_postgres::{AsyncMessage, NoTls};

/// How long the listener waits before connecting again after losing its connection.
const RELISTEN_AFTER: Duration = Duration::from_secs(1);

impl PgStore {
    /// The JWT secret every instance on this database signs with: created (random, 32 bytes)
    /// by the first instance that asks.
    pub fn shared_jwt_secret(&self) -> StoreResult<Option<Vec<u8>>> {
        let fresh = rand::random::<[u8; 32]>().to_vec();
        self.execute(
            "INSERT INTO svc_secrets (name, value) VALUES ('jwt', $1) ON CONFLICT DO NOTHING",
            &[&fresh],
        )?;
        Ok(Some(
            self.query_one("SELECT value FROM svc_secrets WHERE name = 'jwt'", &[])?
                .get(0),
        ))
    }

    /// Calls `changed` whenever any instance changes identity data, and whenever the listening
    /// connection was lost and is back (what changed meanwhile was not heard).
    pub fn on_identity_change(&self, changed: Arc<dyn Fn() + Send + Sync>) {
        let Some(runtime) = &self.runtime else {
            return;
        };
        let config = self.config.clone();
        runtime.spawn(async move {
            loop {
                if let Err(e) = listen(&config, &changed).await {
                    tracing::warn!(error = %e, "identity changes unheard until the database is back");
                }
                tokio::time::sleep(RELISTEN_AFTER).await;
            }
        });
    }
}

/// One listening connection, until it is lost.
async fn listen(
    config: &tokio_postgres::Config,
    changed: &Arc<dyn Fn() + Send + Sync>,
) -> StoreResult<()> {
    let (client, mut connection) = config.connect(NoTls).await?;
    let heard = changed.clone();
    let driver = tokio::spawn(async move {
        let mut messages = futures::stream::poll_fn(move |cx| connection.poll_message(cx));
        while let Some(message) = messages.next().await {
            match message {
                Ok(AsyncMessage::Notification(_)) => heard(),
                Ok(_) => {}
                Err(e) => return Err(StoreError::from(e)),
            }
        }
        Ok(())
    });
    client.batch_execute("LISTEN svc_identity").await?;
    // Whatever changed while no connection listened.
    changed();
    let ended = driver
        .await
        .map_err(|e| StoreError::Internal(format!("the listener stopped: {e}")))?;
    drop(client);
    ended
}
