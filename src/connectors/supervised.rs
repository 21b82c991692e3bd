//! One connector's supervised task: connect, read until the link fails or its watchdog
//! fires, turn the tags `bad` once, wait through the backoff (answering writes meanwhile with
//! 503), again, forever. And what the task shares with the routes: the status, the feed and
//! the write counters, and the hand-off of a write to the link.

use super::feed::Feed;
use super::kind::{Failure, FailureKind, Kind, Target, Write, WriteError};
use super::status::{self, LastError, State, Status};
use super::supervisor::OnStatus;
use crate::backoff::Backoff;
use crate::store::{Leadership, Store};
use futures::FutureExt;
use serde_json::Value;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};

/// How long one connection attempt may take, whatever the kind's own timeouts say.
pub(super) const CONNECT_LIMIT: Duration = Duration::from_secs(30);
/// How long a write waits for the device's answer.
const WRITE_LIMIT: Duration = Duration::from_secs(15);
pub(super) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// What one running connector shares between its task and the routes.
pub(super) struct Shared {
    pub domain: String,
    pub status: Mutex<Status>,
    pub feed: Arc<Feed>,
    pub writes: AtomicU64,
    pub write_errors: AtomicU64,
    pub on_status: OnStatus,
}

impl Shared {
    pub fn status(&self) -> Status {
        let mut status = lock(&self.status).clone();
        status.values_in = self.feed.values_in();
        status.writes = self.writes.load(Ordering::Relaxed);
        status.write_errors = self.write_errors.load(Ordering::Relaxed);
        status.points = self.feed.statuses();
        status
    }

    /// Changes the status, then tells of it (outside the lock).
    pub fn update(&self, change: impl FnOnce(&mut Status)) {
        change(&mut lock(&self.status));
        let now = self.status();
        (self.on_status)(&self.domain, &now.name, Some(&now));
    }

    pub fn state(&self) -> State {
        lock(&self.status).state
    }
}

/// Hands a write to the connector's link and waits for the device's answer.
pub(super) async fn write_through(
    shared: &Shared,
    writes: &mpsc::Sender<Write>,
    name: &str,
    point: usize,
    value: Value,
) -> Result<(), WriteError> {
    if shared.state() != State::Connected {
        let why = lock(&shared.status)
            .last_error
            .as_ref()
            .map(|e| format!(": {}", e.text))
            .unwrap_or_default();
        return Err(WriteError::Unreachable(format!(
            "connector `{name}` is not connected{why}"
        )));
    }
    let (reply, answer) = oneshot::channel();
    let write = Write {
        point,
        value,
        reply,
    };
    let unreachable = || {
        WriteError::Unreachable(format!(
            "connector `{name}` did not answer the write in time"
        ))
    };
    tokio::time::timeout(WRITE_LIMIT, async {
        writes.send(write).await.map_err(|_| unreachable())?;
        answer.await.map_err(|_| {
            WriteError::Unreachable(format!(
                "connector `{name}` lost its connection during the write"
            ))
        })?
    })
    .await
    .map_err(|_| unreachable())?
}

/// A certificate's SHA-1 thumbprint in hex, as OPC UA tools show it.
pub fn thumbprint(der: &[u8]) -> String {
    use sha1::{Digest, Sha1};
    hex::encode(Sha1::digest(der))
}

/// One connector's supervised task.
pub(super) struct Supervised {
    pub kind: &'static dyn Kind,
    pub target: Target,
    pub backoff: Backoff,
    pub shared: Arc<Shared>,
    pub store: Store,
    /// Only the instance that leads talks to devices (one connection per device, each value
    /// once, whatever the number of instances sharing the store).
    pub leadership: Leadership,
}

impl Supervised {
    /// Connect, serve until the link fails, wait, again.
    pub async fn run(self, mut writes: mpsc::Receiver<Write>) {
        let mut failures = 0;
        if let Err(e) = std::fs::create_dir_all(&self.target.scratch) {
            tracing::warn!(connector = self.target.name, error = %e, "cannot make the connector's scratch directory");
        }
        loop {
            if !self.leadership.is_leader() {
                self.shared.update(|status| status.enter(State::Standby));
                self.standby(&mut writes).await;
            }
            self.shared.update(|status| {
                status.attempts += 1;
                status.next_retry = None;
                status.enter(State::Connecting);
            });
            // A panic inside a kind is a bug of svc's, but it must not leave the connector
            // stuck: it fails the attempt like any other failure, and the loop goes on.
            let failure = AssertUnwindSafe(self.attempt(&mut writes))
                .catch_unwind()
                .await
                .unwrap_or_else(|panic| {
                    let what = panic
                        .downcast_ref::<&str>()
                        .map(|s| s.to_string())
                        .or_else(|| panic.downcast_ref::<String>().cloned())
                        .unwrap_or_default();
                    tracing::error!(
                        connector = self.target.name,
                        panic = what,
                        "a connector failed inside svc"
                    );
                    Failure::new(
                        FailureKind::Protocol,
                        format!("the connector failed inside svc: {what}"),
                    )
                });
            note_certificate(&self.store, &self.target.domain, &failure).await;
            let was_connected = self.shared.state() == State::Connected;
            failures = if was_connected { 1 } else { failures + 1 };
            let delay = self.backoff.delay(failures);
            tracing::info!(connector = self.target.name, error = %failure, "connector link failed");
            self.shared.feed.down(&failure.to_string());
            self.shared.update(|status| {
                status.last_error = Some(LastError::of(&failure));
                status.next_retry = Some(crate::historian::format_ms(
                    crate::time::now_ms() + i64::try_from(delay.as_millis()).unwrap_or(i64::MAX),
                ));
                status.enter(status::state_after(&failure));
            });
            self.wait(delay, &mut writes, &failure).await;
        }
    }

    /// One connection: connect, then read until the link fails, or until another instance
    /// comes to lead.
    async fn attempt(&self, writes: &mut mpsc::Receiver<Write>) -> Failure {
        let link = match tokio::time::timeout(CONNECT_LIMIT, self.kind.connect(&self.target)).await
        {
            Ok(Ok(link)) => link,
            Ok(Err(failure)) => return failure,
            Err(_) => {
                return Failure::new(
                    FailureKind::Timeout,
                    format!("could not connect within {} s", CONNECT_LIMIT.as_secs()),
                )
            }
        };
        let device = link.description();
        self.shared.update(|status| {
            status.attempts = 0;
            status.device = Some(device);
            status.enter(State::Connected);
        });
        tokio::select! {
            failure = link.run(self.shared.feed.clone(), writes) => failure,
            _ = self.leadership.until(false) => Failure::new(
                FailureKind::Protocol,
                "another instance on the store leads now and runs the connector",
            ),
        }
    }

    /// Waits until this instance leads, answering the writes that arrive meanwhile.
    async fn standby(&self, writes: &mut mpsc::Receiver<Write>) {
        let leads = self.leadership.until(true);
        tokio::pin!(leads);
        loop {
            tokio::select! {
                _ = &mut leads => return,
                Some(write) = writes.recv() => {
                    let _ = write.reply.send(Err(WriteError::Unreachable(format!(
                        "connector `{}` runs on the instance that leads, not this one",
                        self.target.name
                    ))));
                }
            }
        }
    }

    /// Sleeps through the backoff, answering the writes that arrive meanwhile.
    async fn wait(&self, delay: Duration, writes: &mut mpsc::Receiver<Write>, failure: &Failure) {
        let sleep = tokio::time::sleep(delay);
        tokio::pin!(sleep);
        loop {
            tokio::select! {
                _ = &mut sleep => return,
                Some(write) = writes.recv() => {
                    let _ = write.reply.send(Err(WriteError::Unreachable(format!(
                        "connector `{}` is not connected: {failure}",
                        self.target.name
                    ))));
                }
            }
        }
    }
}

/// Lists the certificate a server presented that `domain` does not trust yet, if the failure
/// carries one.
pub(super) async fn note_certificate(store: &Store, domain: &str, failure: &Failure) {
    let Some(der) = failure.untrusted_certificate.clone() else {
        return;
    };
    let domain = domain.to_string();
    let print = thumbprint(&der);
    let noted = store
        .run(move |s| s.note_server_certificate(&domain, &print, &der, crate::time::now_ms()))
        .await;
    if let Err(e) = noted {
        tracing::warn!(error = %e, "cannot list a server certificate");
    }
}
