//! The broker's durable state goes to the store through one task that commits whatever has
//! accumulated in one transaction (group commit), so a burst of QoS 1 publishes to persistent
//! sessions costs one transaction, not one per message.

use crate::store::MqttWrite;
use crate::store::Store;
use tokio::sync::{mpsc, oneshot};

/// Writes committed together at most.
const BATCH: usize = 20_000;

struct Job {
    writes: Vec<MqttWrite>,
    done: Option<oneshot::Sender<Result<(), String>>>,
}

#[derive(Clone)]
pub struct Persister {
    tx: mpsc::UnboundedSender<Job>,
}

impl Persister {
    pub fn start(store: Store) -> Persister {
        let (tx, rx) = mpsc::unbounded_channel();
        tokio::spawn(run(store, rx));
        Persister { tx }
    }

    /// Commits `writes`; resolves once they are durable.
    pub async fn commit(&self, writes: Vec<MqttWrite>) -> Result<(), String> {
        if writes.is_empty() {
            return Ok(());
        }
        let (done, committed) = oneshot::channel();
        self.tx
            .send(Job {
                writes,
                done: Some(done),
            })
            .map_err(|_| "the broker's store writer has stopped".to_string())?;
        committed
            .await
            .map_err(|_| "the broker's store writer has stopped".to_string())?
    }

    /// Queues `writes` without waiting (acknowledgements, bookkeeping).
    pub fn send(&self, writes: Vec<MqttWrite>) {
        if !writes.is_empty() {
            let _ = self.tx.send(Job { writes, done: None });
        }
    }
}

async fn run(store: Store, mut rx: mpsc::UnboundedReceiver<Job>) {
    while let Some(first) = rx.recv().await {
        let mut writes = first.writes;
        let mut waiting: Vec<_> = first.done.into_iter().collect();
        while writes.len() < BATCH {
            match rx.try_recv() {
                Ok(job) => {
                    writes.extend(job.writes);
                    waiting.extend(job.done);
                }
                Err(_) => break,
            }
        }
        let result = store
            .run(move |s| s.mqtt_write(&writes))
            .await
            .map_err(|e| e.to_string());
        if let Err(e) = &result {
            tracing::error!(error = %e, "cannot store the broker's session state");
        }
        for done in waiting {
            let _ = done.send(result.clone());
        }
    }
}
