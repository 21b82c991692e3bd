//! The one writer of the upstreams' durable queues: every append and delete waiting at that
//! moment goes in one transaction ([`GroupCommit`]). Under load many publishers' batches and
//! the acknowledged messages of every upstream share a commit, so the cost of a commit (its
//! WAL pages) is spread over many messages.

use super::queue::UpstreamMessage;
use crate::group_commit::GroupCommit;
use crate::store::Store;

/// Requests taken into one transaction at most.
const MAX_GROUP: usize = 256;

enum Write {
    /// Messages for upstream queues (queue id, message).
    Append(Vec<(String, UpstreamMessage)>),
    /// Messages that left a queue (queue id, sequence numbers).
    Delete(String, Vec<i64>),
}

#[derive(Clone)]
pub struct QueueWriter {
    writer: GroupCommit<Write>,
}

impl QueueWriter {
    /// Starts the writer thread; it ends when the last `QueueWriter` is dropped.
    pub fn start(store: Store) -> std::io::Result<QueueWriter> {
        let writer = GroupCommit::start("svc-upstream-queue", MAX_GROUP, move |group| {
            write_group(&store, group)
        })?;
        Ok(QueueWriter { writer })
    }

    /// Appends messages to their queues; `Ok` once they are committed.
    pub async fn append(&self, items: Vec<(String, UpstreamMessage)>) -> Result<(), String> {
        self.writer.write(Write::Append(items)).await
    }

    /// Deletes messages from a queue, with the next group (nobody waits for it: a message
    /// whose deletion is lost is sent once more after a restart, as QoS 1 allows).
    pub fn delete(&self, queue: &str, seqs: Vec<i64>) {
        self.writer.send(Write::Delete(queue.to_string(), seqs));
    }
}

fn write_group(store: &Store, group: &[Write]) -> Result<(), String> {
    let mut appends: Vec<(&str, &UpstreamMessage)> = Vec::new();
    let mut deletes: Vec<(&str, &[i64])> = Vec::new();
    for write in group {
        match write {
            Write::Append(items) => {
                appends.extend(items.iter().map(|(queue, item)| (queue.as_str(), item)))
            }
            Write::Delete(queue, seqs) => deletes.push((queue.as_str(), seqs)),
        }
    }
    store.upstream_queue_write(&appends, &deletes).map_err(|e| {
        tracing::warn!(error = %e, "upstream queue write failed");
        format!("cannot write an upstream's queue: {e}")
    })
}
