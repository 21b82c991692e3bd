//! The one writer of the upstreams' durable queues: a thread that takes every append and
//! delete waiting at that moment and applies them in one transaction (group commit). Under
//! load many publishers' batches and the acknowledged messages of every upstream share a
//! commit, so the cost of a commit (its WAL pages) is spread over many messages.

use super::queue::Item;
use crate::store::Store;
use std::sync::mpsc;
use tokio::sync::oneshot;

/// Requests taken into one transaction at most.
const MAX_GROUP: usize = 256;

enum Write {
    /// Messages for upstream queues (queue id, message); answered once committed.
    Append(Vec<(String, Item)>, oneshot::Sender<Result<(), String>>),
    /// Messages that left a queue (queue id, sequence numbers).
    Delete(String, Vec<i64>),
}

#[derive(Clone)]
pub struct QueueWriter {
    requests: mpsc::Sender<Write>,
}

impl QueueWriter {
    /// Starts the writer thread; it ends when the last `QueueWriter` is dropped.
    pub fn start(store: Store) -> std::io::Result<QueueWriter> {
        let (requests, incoming) = mpsc::channel();
        std::thread::Builder::new()
            .name("svc-upstream-queue".into())
            .spawn(move || write_groups(&store, &incoming))?;
        Ok(QueueWriter { requests })
    }

    /// Appends messages to their queues; `Ok` once they are committed.
    pub async fn append(&self, items: Vec<(String, Item)>) -> Result<(), String> {
        let (done, committed) = oneshot::channel();
        self.requests
            .send(Write::Append(items, done))
            .map_err(|_| "the upstream queue writer has stopped".to_string())?;
        committed
            .await
            .map_err(|_| "the upstream queue writer has stopped".to_string())?
    }

    /// Deletes messages from a queue, with the next group (nobody waits for it: a message
    /// whose deletion is lost is sent once more after a restart, as QoS 1 allows).
    pub fn delete(&self, queue: &str, seqs: Vec<i64>) {
        let _ = self.requests.send(Write::Delete(queue.to_string(), seqs));
    }
}

fn write_groups(store: &Store, incoming: &mpsc::Receiver<Write>) {
    while let Ok(first) = incoming.recv() {
        let group: Vec<Write> = std::iter::once(first)
            .chain(incoming.try_iter().take(MAX_GROUP - 1))
            .collect();
        let mut appends: Vec<(&str, &Item)> = Vec::new();
        let mut deletes: Vec<(&str, &[i64])> = Vec::new();
        for write in &group {
            match write {
                Write::Append(items, _) => {
                    appends.extend(items.iter().map(|(queue, item)| (queue.as_str(), item)))
                }
                Write::Delete(queue, seqs) => deletes.push((queue.as_str(), seqs)),
            }
        }
        let result = store
            .upstream_queue_write(&appends, &deletes)
            .map_err(|e| format!("cannot write an upstream's queue: {e}"));
        if let Err(e) = &result {
            tracing::warn!(error = %e, "upstream queue write failed");
        }
        drop((appends, deletes));
        for write in group {
            if let Write::Append(_, done) = write {
                let _ = done.send(result.clone());
            }
        }
    }
}
