//! What instances sharing one PostgreSQL database share besides the data: the JWT signing
//! secret (when none is configured, so a token from one instance is good on every other), word
//! of every identity change (`svc_identity`, raised by triggers on the identity tables), so an
//! instance drops what it cached of users, keys and grants as soon as another one changes them,
//! and the notices instances send each other (`svc_peers`: a row of `svc_peer_notices` per
//! notice, its id in the notification). One connection outside the pool listens to these and
//! to `svc_records` (a record table changed: its cached records are dropped).
//!
//! The store is open only once that connection listens, and notices heard before the server
//! takes them (while it loads what they would change) are kept and handed over then: a change
//! another instance makes while this one starts is either loaded or heard, never neither.

use super::PgStore;
use crate::store::record_cache::RecordCache;
use crate::store::{PeerNotice, StoreError, StoreResult};
use deadpool_postgres::Pool;
use futures::StreamExt;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, oneshot};
use tokio_postgres::AsyncMessage;
use tokio_postgres_rustls::MakeRustlsConnect;

/// How long the listener waits before connecting again after losing its connection.
const RELISTEN_AFTER: Duration = Duration::from_secs(1);
/// Notices fetched with one query, at most.
const FETCH_BATCH: usize = 256;
/// How long opening the store waits for the listening connection.
const FIRST_LISTEN_WITHIN: Duration = Duration::from_secs(10);
/// Notices kept for the server before it takes them, at most; beyond, they are dropped and the
/// server reloads from the store instead.
const PENDING_AT_MOST: usize = 10_000;
/// How long another instance counts as alive after it was last heard.
const HEARD_ALIVE_FOR: Duration = Duration::from_secs(5);

type IdentityHandler = Arc<dyn Fn() + Send + Sync>;
type NoticeHandler = Arc<dyn Fn(PeerNotice) + Send + Sync>;

/// Who is told what the listener hears; the server's handlers are set once it is ready to act.
pub(super) struct Listeners {
    pub(super) identity: RwLock<Option<IdentityHandler>>,
    notices: RwLock<Option<NoticeHandler>>,
    /// Notices heard before the server took them (`None` once it has).
    pending: Mutex<Option<VecDeque<PeerNotice>>>,
    /// When another instance was last heard, in milliseconds after `started` (0: never).
    peer_heard_ms: AtomicU64,
    started: Instant,
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
            pending: Mutex::new(Some(VecDeque::new())),
            peer_heard_ms: AtomicU64::new(0),
            started: Instant::now(),
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

    /// Hands `notice` to the server, or keeps it until the server takes notices.
    fn notice(&self, notice: PeerNotice) {
        {
            let mut pending = self.pending.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(queue) = pending.as_mut() {
                if queue.len() >= PENDING_AT_MOST {
                    // Too many to keep: what they said is reloaded from the store instead.
                    queue.clear();
                    queue.push_back(PeerNotice::MayHaveMissed);
                } else if !matches!(queue.back(), Some(PeerNotice::MayHaveMissed))
                    || !matches!(notice, PeerNotice::MayHaveMissed)
                {
                    queue.push_back(notice);
                }
                return;
            }
        }
        if let Some(handler) = read(&self.notices) {
            handler(notice);
        }
    }

    /// Sets the server's handler and hands it what was heard before, in order.
    pub(super) fn take_notices(&self, handler: NoticeHandler) {
        let mut pending = self.pending.lock().unwrap_or_else(|p| p.into_inner());
        set(&self.notices, handler.clone());
        // Under the lock, so a notice heard meanwhile waits and comes after these.
        for notice in pending.take().into_iter().flatten() {
            handler(notice);
        }
    }

    /// Notes that another instance spoke just now.
    fn peer_heard(&self) {
        let ms = self.started.elapsed().as_millis().max(1) as u64;
        self.peer_heard_ms.store(ms, Ordering::Relaxed);
    }

    /// Whether another instance spoke within [`HEARD_ALIVE_FOR`].
    pub(super) fn peer_heard_lately(&self) -> bool {
        let heard = self.peer_heard_ms.load(Ordering::Relaxed);
        heard > 0
            && self.started.elapsed().as_millis() as u64
                <= heard + HEARD_ALIVE_FOR.as_millis() as u64
    }
}

fn read<T: Clone>(lock: &RwLock<Option<T>>) -> Option<T> {
    lock.read().unwrap_or_else(|p| p.into_inner()).clone()
}

pub(super) fn set<T>(lock: &RwLock<Option<T>>, value: T) {
    *lock.write().unwrap_or_else(|p| p.into_inner()) = Some(value);
}

impl PgStore {
    /// Starts the listening connection, for as long as the store is open, and returns once it
    /// listens (or after [`FIRST_LISTEN_WITHIN`], with a warning: the connection that comes up
    /// later reloads what was missed). What the server loads after this call is either loaded
    /// new or heard of.
    pub(super) fn start_listening(&self) {
        let Some(runtime) = &self.runtime else {
            return;
        };
        let (listening, first) = oneshot::channel();
        let mut listening = Some(listening);
        let (config, tls) = (self.config.clone(), self.tls.clone());
        let listeners = self.listeners.clone();
        let (fetch, wanted) = mpsc::unbounded_channel();
        runtime.spawn(fetch_notices(self.pool.clone(), wanted, listeners.clone()));
        let instance = self.instance.clone();
        runtime.spawn(async move {
            loop {
                let first = listening.take();
                if let Err(e) = listen(&config, &tls, &listeners, &instance, &fetch, first).await
                {
                    tracing::warn!(error = %e, "other instances unheard until the database is back");
                }
                tokio::time::sleep(RELISTEN_AFTER).await;
            }
        });
        let listens = self.block(async {
            Ok(matches!(
                tokio::time::timeout(FIRST_LISTEN_WITHIN, first).await,
                Ok(Ok(()))
            ))
        });
        if !matches!(listens, Ok(true)) {
            // The connection that comes up later reports what it may have missed.
            tracing::warn!("other instances are unheard until the database answers");
        }
    }
}

/// One listening connection, until it is lost.
async fn listen(
    config: &tokio_postgres::Config,
    tls: &MakeRustlsConnect,
    listeners: &Arc<Listeners>,
    instance: &str,
    fetch: &mpsc::UnboundedSender<i64>,
    first: Option<oneshot::Sender<()>>,
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
                        heard.peer_heard();
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
    // Whatever was said while no connection listened. The first connection listens before
    // the server loads anything, so it has missed nothing.
    listeners.records.clear();
    listeners.listening.store(true, Ordering::Release);
    match first {
        Some(opened) => {
            let _ = opened.send(());
        }
        None => {
            listeners.identity_changed();
            listeners.notice(PeerNotice::MayHaveMissed);
        }
    }
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
