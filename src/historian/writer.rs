//! Historian ingest by group commit. Values queue on a bounded channel (publishers wait when it
//! is full, so memory stays bounded); one writer thread commits everything queued as soon as
//! its previous commit ends, then releases the acknowledgements that commit covered. Nothing
//! waits on a timer: under load each commit carries every value that arrived during the one
//! before (throughput stays batched), and a lone value is committed at once.
//!
//! A value recorded with [`HistorianWriter::commit`] resolves only once its transaction is
//! committed, which is what lets the broker hold a QoS 1/2 acknowledgement until then.

use crate::store::{HistoryWrite, Store};
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};

const MAX_BATCH: usize = 5_000;
const QUEUE: usize = 100_000;
const WRITE_ATTEMPTS: u32 = 5;

/// A value could not be committed (the writer stopped, or the database kept failing).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotRecorded(pub &'static str);

impl std::fmt::Display for NotRecorded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0)
    }
}

enum Job {
    /// A value, and who waits for its commit.
    Write(HistoryWrite, Option<oneshot::Sender<bool>>),
    /// Commit what is queued before this, then stop.
    Stop(oneshot::Sender<()>),
}

#[derive(Clone)]
pub struct HistorianWriter {
    tx: mpsc::Sender<Job>,
}

impl HistorianWriter {
    /// Starts the writer thread.
    pub fn start(store: Store) -> std::io::Result<HistorianWriter> {
        let (tx, rx) = mpsc::channel(QUEUE);
        std::thread::Builder::new()
            .name("svc-historian".into())
            .spawn(move || run(&store, rx))?;
        Ok(HistorianWriter { tx })
    }

    /// Queues a value without waiting for its commit (QoS 0); waits while the queue is full.
    pub async fn record(&self, write: HistoryWrite) {
        if self.tx.send(Job::Write(write, None)).await.is_err() {
            tracing::warn!("historian is shut down; a value was not recorded");
        }
    }

    /// Queues a value and resolves once the transaction holding it is committed.
    pub async fn commit(&self, write: HistoryWrite) -> Result<(), NotRecorded> {
        let (done, committed) = oneshot::channel();
        if self.tx.send(Job::Write(write, Some(done))).await.is_err() {
            return Err(NotRecorded("the historian is shut down"));
        }
        match committed.await {
            Ok(true) => Ok(()),
            Ok(false) => Err(NotRecorded("the historian could not write the value")),
            Err(_) => Err(NotRecorded(
                "the historian stopped before writing the value",
            )),
        }
    }

    /// Commits everything queued so far and stops the writer.
    pub async fn shutdown(&self) {
        let (done, stopped) = oneshot::channel();
        if self.tx.send(Job::Stop(done)).await.is_ok() {
            let _ = stopped.await;
        }
    }
}

/// The writer thread: wait for a value, take whatever else is queued, commit, acknowledge.
fn run(store: &Store, mut rx: mpsc::Receiver<Job>) {
    let mut batch = Vec::with_capacity(MAX_BATCH);
    let mut waiting = Vec::new();
    while let Some(job) = rx.blocking_recv() {
        let mut stop = None;
        let mut next = Some(job);
        while let Some(job) = next.take() {
            match job {
                Job::Write(write, done) => {
                    batch.push(write);
                    waiting.extend(done);
                }
                Job::Stop(done) => {
                    stop = Some(done);
                    break;
                }
            }
            if batch.len() < MAX_BATCH {
                next = rx.try_recv().ok();
            }
        }
        let committed = commit(store, &batch);
        batch.clear();
        for done in waiting.drain(..) {
            let _ = done.send(committed);
        }
        if let Some(done) = stop {
            rx.close();
            let _ = done.send(());
            return;
        }
    }
}

/// Writes a batch in one transaction, retrying a failing database a few times before giving
/// the values up (their publishers are then told, not acknowledged).
fn commit(store: &Store, batch: &[HistoryWrite]) -> bool {
    if batch.is_empty() {
        return true;
    }
    for attempt in 1..=WRITE_ATTEMPTS {
        match store.append_history(batch) {
            Ok(_) => return true,
            Err(e) => {
                tracing::error!(error = %e, attempt, values = batch.len(), "historian write failed");
                std::thread::sleep(Duration::from_millis(200 * u64::from(attempt)));
            }
        }
    }
    tracing::error!(
        values = batch.len(),
        "historian values dropped after repeated write failures"
    );
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn value(i: i64) -> HistoryWrite {
        HistoryWrite {
            domain: "d".into(),
            topic: "t".into(),
            ts_ms: i,
            value: json!(i),
        }
    }

    #[tokio::test]
    async fn everything_queued_is_written_by_shutdown() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("t.db")).unwrap();
        let writer = HistorianWriter::start(store.clone()).unwrap();
        for i in 0..12_000 {
            writer.record(value(i)).await;
        }
        writer.shutdown().await;
        let points = store.history_range("d", "t", 0, 20_000, None).unwrap();
        assert_eq!(points.len(), 12_000);
        assert_eq!(points[11_999].value, json!(11_999));
        assert!(writer.commit(value(1)).await.is_err());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn a_commit_resolves_only_once_the_value_is_stored() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("t.db")).unwrap();
        let writer = HistorianWriter::start(store.clone()).unwrap();
        let publishers: Vec<_> = (0..20)
            .map(|p| {
                let (writer, store) = (writer.clone(), store.clone());
                tokio::spawn(async move {
                    for i in 0..200 {
                        let ts = p * 1_000 + i;
                        writer.commit(value(ts)).await.unwrap();
                        // Acknowledged means readable now, not after a flush interval.
                        let stored = store.history_range("d", "t", ts, ts + 1, None).unwrap();
                        assert_eq!(stored.len(), 1, "value {ts} acknowledged but not stored");
                    }
                })
            })
            .collect();
        for publisher in publishers {
            publisher.await.unwrap();
        }
        writer.shutdown().await;
        assert_eq!(
            store
                .history_range("d", "t", 0, 100_000, None)
                .unwrap()
                .len(),
            4_000
        );
    }
}
