//! Which instance on the database leads, and who else is alive. One connection outside the
//! pool per instance holds the session-level advisory lock [`LEADER_LOCK`] while this instance
//! leads: when the leader dies its connection closes, PostgreSQL releases the lock, and the next
//! instance to ask (each asks every [`TICK`]) takes it over. On the same connection each tick
//! raises this instance's `svc_instances.seen_at`, reads whether any other instance is alive,
//! and now and then drops notices every listener has had time to fetch.

use super::PgStore;
use crate::store::StoreResult;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;
use tokio_postgres_rustls::MakeRustlsConnect;

/// Key of the advisory lock the leader holds ("svc-lead").
const LEADER_LOCK: i64 = 0x7376_632d_6c65_6164;
/// How often an instance shows it is alive and asks for leadership.
const TICK: Duration = Duration::from_secs(1);
/// Ticks between two sweeps of old notices and instances long gone.
const SWEEP_EVERY: u32 = 30;

impl PgStore {
    /// Starts asking for leadership and showing this instance alive, while the store is open.
    pub(super) fn start_campaign(&self) {
        let Some(runtime) = &self.runtime else {
            return;
        };
        let (config, tls) = (self.config.clone(), self.tls.clone());
        let instance = self.instance.clone();
        let leads = self.leads.clone();
        let peers = self.peers_present.clone();
        runtime.spawn(async move {
            loop {
                if let Err(e) = campaign(&config, &tls, &instance, &leads, &peers).await {
                    if leads.send_replace(false) {
                        tracing::warn!(error = %e, "this instance no longer leads");
                    }
                }
                tokio::time::sleep(TICK).await;
            }
        });
    }
}

/// One connection's campaign, until it is lost.
async fn campaign(
    config: &tokio_postgres::Config,
    tls: &MakeRustlsConnect,
    instance: &str,
    leads: &Arc<watch::Sender<bool>>,
    peers: &Arc<AtomicBool>,
) -> StoreResult<()> {
    let (client, connection) = config.connect(tls.clone()).await?;
    let driver = tokio::spawn(connection);
    let result: StoreResult<()> = async {
        let mut ticks = 0u32;
        loop {
            if !*leads.borrow() {
                let won: bool = client
                    .query_one("SELECT pg_try_advisory_lock($1)", &[&LEADER_LOCK])
                    .await?
                    .get(0);
                if won {
                    tracing::info!(
                        "this instance leads (it runs the timers of functions and flows)"
                    );
                    leads.send_replace(true);
                }
            }
            let others: i64 = client
                .query_one(
                    "WITH seen AS (
                         INSERT INTO svc_instances (instance) VALUES ($1)
                         ON CONFLICT (instance) DO UPDATE SET seen_at = now())
                     SELECT count(*) FROM svc_instances
                     WHERE instance <> $1 AND seen_at > now() - interval '5 seconds'",
                    &[&instance],
                )
                .await?
                .get(0);
            peers.store(others > 0, Ordering::Relaxed);
            if ticks.is_multiple_of(SWEEP_EVERY) {
                client
                    .batch_execute(
                        "DELETE FROM svc_peer_notices WHERE at < now() - interval '1 minute';
                         DELETE FROM svc_instances WHERE seen_at < now() - interval '1 day'",
                    )
                    .await?;
            }
            ticks = ticks.wrapping_add(1);
            tokio::time::sleep(TICK).await;
        }
    }
    .await;
    driver.abort();
    result
}
