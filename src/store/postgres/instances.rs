//! What instances sharing one PostgreSQL database share besides the data: the JWT signing
//! secret (when none is configured, so a token from one instance is good on every other), word
//! of every identity change (`svc_identity`, raised by triggers on the identity tables), so an
//! instance drops what it cached of users, keys and grants as soon as another one changes them,
//! and the notices instances send each other (`svc_peers`: a row of `svc_peer_notices` per
//! notice, its id in the notification). One connection outside the pool listens to these and
//! to `svc_records` (a record table changed: its cached records are dropped).

use super::PgStore;
use crate::store::record_cache::RecordCache;
use crate::store::{PeerNotice, StoreError, StoreResult};
use deadpool_postgres::Pool;
use futures::StreamExt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;
use tokio::sync::mpsc;
use tokio_postgres::AsyncMessage;
use tokio_postgres_rustls::MakeRustlsConnect;

/// How long the listener waits before connecting again after losing its connection.
const RELISTEN_AFTER: Duration = Duration::from_secs(1);
/// Notices fetched with one query, at most.
const FETCH_BATCH: usize = 256;

type IdentityHandler = Arc<dyn Fn() + Send + Sync>;
type NoticeHandler = Arc<dyn Fn(PeerNotice) + Send + Sync>;

/// Who is told what the listener hears; the server's handlers are set once it is ready to act.
pub(super) struct Listeners {
    identity: RwLock<Option<IdentityHandler>>,
    notices: RwLock<Option<NoticeHandler>>,
    /// The engine's record cache, emptied of each table a `svc_records` notification names.
    records: Arc<RecordCache>,
    /// Whether the connection that hears `svc_records` is up (else the cache may not answer).
    listening: AtomicBool,
}

impl Listeners {
    pub(super) fn new(records: Arc<RecordCache>) -> Listeners {
        Listeners {
            identity: RwLock::default(),
            notices: RwLock::default(),
            records,
            listening: AtomicBool::new(false),
        }
    }

    pub(super) fn records_heard(&self) -> bool {
        self.listening.load(Ordering::Acquire)
    }

    fn identity_changed(&self) {
        if let Some(handler) = read(&self.identity) {
            handler();
        }
    }

    fn notice(&self, notice: PeerNotice) {
        if let Some(handler) = read(&self.notices) {
            handler(notice);
        }
    }
}

fn read<T: Clone>(lock: &RwLock<Option<T>>) -> Option<T> {
    lock.read().unwrap_or_else(|p| p.into_inner()).clone()
}

fn set<T>(lock: &RwLock<Option<T>>, value: T) {
    *lock.write().unwrap_or_else(|p| p.into_inner()) = Some(value);
}

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
        set(&self.listeners.identity, changed);
    }

    /// Calls `heard` with every notice another instance sends, in the order they were sent.
    pub fn on_peer_notice(&self, heard: Arc<dyn Fn(PeerNotice) + Send + Sync>) {
        set(&self.listeners.notices, heard);
    }

    /// Whether any other instance is alive on this database (seen in the last seconds).
    pub fn has_peers(&self) -> bool {
        self.peers_present.load(Ordering::Relaxed)
    }

    /// Sends a notice to every other instance on this database.
    pub fn tell_peers(&self, kind: &str, body: &[u8]) -> StoreResult<()> {
        self.query_one(
            "WITH notice AS (
                 INSERT INTO svc_peer_notices (instance, kind, body) VALUES ($1, $2, $3)
                 RETURNING id)
             SELECT pg_notify('svc_peers', notice.id || ' ' || $1) FROM notice",
            &[&self.instance, &kind, &body],
        )
        .map(|_| ())
    }

    /// Starts the listening connection, for as long as the store is open.
    pub(super) fn start_listening(&self) {
        let Some(runtime) = &self.runtime else {
            return;
        };
        let (config, tls) = (self.config.clone(), self.tls.clone());
        let listeners = self.listeners.clone();
        let (fetch, wanted) = mpsc::unbounded_channel();
        runtime.spawn(fetch_notices(self.pool.clone(), wanted, listeners.clone()));
        let instance = self.instance.clone();
        runtime.spawn(async move {
            loop {
                if let Err(e) = listen(&config, &tls, &listeners, &instance, &fetch).await {
                    tracing::warn!(error = %e, "other instances unheard until the database is back");
                }
                tokio::time::sleep(RELISTEN_AFTER).await;
            }
        });
    }
}

/// One listening connection, until it is lost.
async fn listen(
    config: &tokio_postgres::Config,
    tls: &MakeRustlsConnect,
    listeners: &Arc<Listeners>,
    instance: &str,
    fetch: &mpsc::UnboundedSender<i64>,
) -> StoreResult<()> {
    let (client, mut connection) = config.connect(tls.clone()).await?;
    let heard = listeners.clone();
    let own = format!(" {instance}");
    let fetch = fetch.clone();
    let driver = tokio::spawn(async move {
        let mut messages = futures::stream::poll_fn(move |cx| connection.poll_message(cx));
        while let Some(message) = messages.next().await {
            match message {
                Ok(AsyncMessage::Notification(n)) if n.channel() == "svc_peers" => {
                    // "<id> <instance>": this instance's own notices are not news to it.
                    let payload = n.payload();
                    if !payload.ends_with(&own) {
                        if let Some(id) = payload.split(' ').next().and_then(|id| id.parse().ok()) {
                            let _ = fetch.send(id);
                        }
                    }
                }
                Ok(AsyncMessage::Notification(n)) if n.channel() == "svc_records" => {
                    heard.records.invalidate(n.payload());
                }
                Ok(AsyncMessage::Notification(_)) => heard.identity_changed(),
                Ok(_) => {}
                Err(e) => return Err(StoreError::from(e)),
            }
        }
        Ok(())
    });
    client
        .batch_execute("LISTEN svc_identity; LISTEN svc_peers; LISTEN svc_records")
        .await?;
    // Whatever was said while no connection listened.
    listeners.records.clear();
    listeners.listening.store(true, Ordering::Release);
    listeners.identity_changed();
    listeners.notice(PeerNotice::MayHaveMissed);
    let ended = driver.await;
    // Unheard from now on: the cache stops answering until the next connection listens.
    listeners.listening.store(false, Ordering::Release);
    drop(client);
    ended.map_err(|e| StoreError::Internal(format!("the listener stopped: {e}")))?
}

/// Reads the notices the listener heard of, in order, and hands them on.
async fn fetch_notices(
    pool: Pool,
    mut wanted: mpsc::UnboundedReceiver<i64>,
    listeners: Arc<Listeners>,
) {
    let mut ids = Vec::with_capacity(FETCH_BATCH);
    while wanted.recv_many(&mut ids, FETCH_BATCH).await > 0 {
        match fetch(&pool, &ids).await {
            Ok(notices) => notices.into_iter().for_each(|n| listeners.notice(n)),
            Err(e) => {
                tracing::warn!(error = %e, "lost {} notices of other instances", ids.len());
                listeners.notice(PeerNotice::MayHaveMissed);
            }
        }
        ids.clear();
    }
}

async fn fetch(pool: &Pool, ids: &[i64]) -> StoreResult<Vec<PeerNotice>> {
    let client = pool.get().await?;
    let statement = client
        .prepare_cached("SELECT kind, body FROM svc_peer_notices WHERE id = ANY($1) ORDER BY id")
        .await?;
    Ok(client
        .query(&statement, &[&ids])
        .await?
        .into_iter()
        .map(|row| PeerNotice::Heard {
            kind: row.get(0),
            body: row.get(1),
        })
        .collect())
}
