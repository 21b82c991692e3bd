//! Batched historian ingest: values queue on a bounded channel (publishers wait when it is
//! full, so memory stays bounded) and are written in one transaction per batch, at the latest
//! [`FLUSH_INTERVAL`] after the first value of the batch arrived, and once more on shutdown.

use crate::store::{HistoryWrite, Store};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, Mutex, Notify};
use tokio::task::JoinHandle;
use tokio::time::{timeout_at, Instant};

pub const FLUSH_INTERVAL: Duration = Duration::from_millis(100);
const MAX_BATCH: usize = 5_000;
const QUEUE: usize = 100_000;
const WRITE_ATTEMPTS: u32 = 5;

#[derive(Clone)]
pub struct HistorianWriter {
    tx: mpsc::Sender<HistoryWrite>,
    stop: Arc<Notify>,
    task: Arc<Mutex<Option<JoinHandle<()>>>>,
}

impl HistorianWriter {
    pub fn start(store: Store) -> HistorianWriter {
        let (tx, rx) = mpsc::channel(QUEUE);
        let stop = Arc::new(Notify::new());
        let task = tokio::spawn(run(store, rx, stop.clone()));
        HistorianWriter {
            tx,
            stop,
            task: Arc::new(Mutex::new(Some(task))),
        }
    }

    /// Queues a value; waits while the queue is full.
    pub async fn record(&self, write: HistoryWrite) {
        if self.tx.send(write).await.is_err() {
            tracing::warn!("historian is shut down; a value was not recorded");
        }
    }

    /// Writes everything queued so far and stops the writer.
    pub async fn shutdown(&self) {
        self.stop.notify_one();
        if let Some(task) = self.task.lock().await.take() {
            let _ = task.await;
        }
    }
}

async fn run(store: Store, mut rx: mpsc::Receiver<HistoryWrite>, stop: Arc<Notify>) {
    let mut batch = Vec::with_capacity(MAX_BATCH);
    loop {
        let first = tokio::select! {
            biased;
            received = rx.recv() => match received {
                Some(write) => write,
                None => break,
            },
            _ = stop.notified() => break,
        };
        batch.push(first);
        let deadline = Instant::now() + FLUSH_INTERVAL;
        while batch.len() < MAX_BATCH {
            match timeout_at(deadline, rx.recv()).await {
                Ok(Some(write)) => batch.push(write),
                _ => break,
            }
        }
        flush(&store, &mut batch).await;
    }
    rx.close();
    while let Some(write) = rx.recv().await {
        batch.push(write);
        if batch.len() >= MAX_BATCH {
            flush(&store, &mut batch).await;
        }
    }
    flush(&store, &mut batch).await;
}

/// Writes a batch, retrying a failing database a few times before giving the values up.
async fn flush(store: &Store, batch: &mut Vec<HistoryWrite>) {
    if batch.is_empty() {
        return;
    }
    let writes = Arc::new(std::mem::take(batch));
    for attempt in 1..=WRITE_ATTEMPTS {
        let pending = writes.clone();
        match store.run(move |s| s.append_history(&pending)).await {
            Ok(_) => return,
            Err(e) => {
                tracing::error!(error = %e, attempt, values = writes.len(), "historian write failed");
                tokio::time::sleep(Duration::from_millis(200 * u64::from(attempt))).await;
            }
        }
    }
    tracing::error!(
        values = writes.len(),
        "historian values dropped after repeated write failures"
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[tokio::test]
    async fn everything_queued_is_written_by_shutdown() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("t.db")).unwrap();
        let writer = HistorianWriter::start(store.clone());
        for i in 0..12_000 {
            writer
                .record(HistoryWrite {
                    domain: "d".into(),
                    topic: "t".into(),
                    ts_ms: i,
                    value: json!(i),
                })
                .await;
        }
        writer.shutdown().await;
        let points = store.history_range("d", "t", 0, 20_000, None).unwrap();
        assert_eq!(points.len(), 12_000);
        assert_eq!(points[11_999].value, json!(11_999));
    }

    #[tokio::test]
    async fn values_are_durable_within_the_flush_interval() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("t.db")).unwrap();
        let writer = HistorianWriter::start(store.clone());
        writer
            .record(HistoryWrite {
                domain: "d".into(),
                topic: "t".into(),
                ts_ms: 5,
                value: json!(1.5),
            })
            .await;
        tokio::time::sleep(FLUSH_INTERVAL * 3).await;
        assert_eq!(store.history_range("d", "t", 0, 10, None).unwrap().len(), 1);
        writer.shutdown().await;
    }
}
