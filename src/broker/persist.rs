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

/// Resolves once the writes [`Persister::queue`] took are durable (or could not be).
#[must_use = "the writes may not be durable yet"]
pub struct Stored(Option<oneshot::Receiver<Result<(), String>>>);

impl Stored {
    /// Nothing waits to be stored.
    pub fn nothing() -> Stored {
        Stored(None)
    }
}

impl std::future::Future for Stored {
    type Output = Result<(), String>;

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Self::Output> {
        let Some(committed) = self.0.as_mut() else {
            return std::task::Poll::Ready(Ok(()));
        };
        std::pin::Pin::new(committed)
            .poll(cx)
            .map(|answer| answer.unwrap_or_else(|_| Err(STOPPED.to_string())))
    }
}

const STOPPED: &str = "the broker's store writer has stopped";

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
        self.queue(writes).await
    }

    /// Queues `writes` now and returns what resolves once they are durable: a writer that
    /// must not wait for the disk between its messages waits on it later, and whatever it
    /// writes after that wait lands after these.
    pub fn queue(&self, writes: Vec<MqttWrite>) -> Stored {
        if writes.is_empty() {
            return Stored::nothing();
        }
        let (done, committed) = oneshot::channel();
        // Should the writer have stopped, the job and its sender are dropped here, and the
        // receiver answers that it stopped.
        let _ = self.tx.send(Job {
            writes,
            done: Some(done),
        });
        Stored(Some(committed))
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
