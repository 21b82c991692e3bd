//! The queue between a connection's producers (its session, its reader) and its writer.
//!
//! Every connected client has one, so it is built to cost nothing while the client is quiet:
//! an empty queue holds no allocation (a channel would keep its first block of slots, 1.3 KB
//! per client), and a burst is taken by the writer in one swap under the lock.

use super::writer::Outbound;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::Notify;

struct Shared {
    queue: Mutex<Queue>,
    /// Wakes the writer when the queue gets its first item, or when the last sender leaves.
    wake: Notify,
    /// QoS 0 deliveries waiting, to drop them when a client falls behind.
    waiting: AtomicUsize,
    senders: AtomicUsize,
}

#[derive(Default)]
struct Queue {
    items: VecDeque<Outbound>,
    /// The writer is gone: nothing sent will be written.
    receiver_gone: bool,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Queue> {
        // A panic while holding it cannot leave the queue half-changed.
        self.queue.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The sending side, held by the session and the connection's reader.
pub struct Outbox {
    shared: Arc<Shared>,
}

/// The writer's side.
pub struct Inbox {
    shared: Arc<Shared>,
}

/// A new queue.
pub fn outbox() -> (Outbox, Inbox) {
    let shared = Arc::new(Shared {
        queue: Mutex::new(Queue::default()),
        wake: Notify::new(),
        waiting: AtomicUsize::new(0),
        senders: AtomicUsize::new(1),
    });
    (
        Outbox {
            shared: shared.clone(),
        },
        Inbox { shared },
    )
}

impl Outbox {
    /// Queues `item`; false when the writer is gone.
    pub fn send(&self, item: Outbound) -> bool {
        let qos0 = item.is_qos0_delivery();
        let mut queue = self.shared.lock();
        if queue.receiver_gone {
            return false;
        }
        let was_empty = queue.items.is_empty();
        queue.items.push_back(item);
        drop(queue);
        if qos0 {
            self.shared.waiting.fetch_add(1, Ordering::Relaxed);
        }
        if was_empty {
            // A writer busy with the previous batch finds this one when it comes back; only
            // the first item of a batch needs to wake it.
            self.shared.wake.notify_one();
        }
        true
    }

    /// QoS 0 deliveries not yet written.
    pub fn backlog(&self) -> usize {
        self.shared.waiting.load(Ordering::Relaxed)
    }
}

impl Clone for Outbox {
    fn clone(&self) -> Outbox {
        self.shared.senders.fetch_add(1, Ordering::Relaxed);
        Outbox {
            shared: self.shared.clone(),
        }
    }
}

impl Drop for Outbox {
    fn drop(&mut self) {
        if self.shared.senders.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.shared.wake.notify_one();
        }
    }
}

impl Inbox {
    /// Waits for items and moves all of them into `batch` (which should be empty); false once
    /// the queue is empty and every sender is gone.
    pub async fn take(&self, batch: &mut VecDeque<Outbound>) -> bool {
        loop {
            {
                let mut queue = self.shared.lock();
                if !queue.items.is_empty() {
                    // Swapped, not drained: the queue is left without an allocation.
                    std::mem::swap(&mut queue.items, batch);
                    return true;
                }
                if self.shared.senders.load(Ordering::Acquire) == 0 {
                    return false;
                }
            }
            self.shared.wake.notified().await;
        }
    }

    /// Counts one written QoS 0 delivery.
    pub fn written_qos0(&self) {
        self.shared.waiting.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Drop for Inbox {
    fn drop(&mut self) {
        let mut queue = self.shared.lock();
        queue.receiver_gone = true;
        // What was never written goes now, not with the last sender.
        queue.items = VecDeque::new();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmqtt_codec::v5::DisconnectReasonCode;

    fn close() -> Outbound {
        Outbound::Close(Some(DisconnectReasonCode::NormalDisconnection))
    }

    #[tokio::test]
    async fn a_burst_is_taken_in_one_batch_in_order() {
        let (outbox, inbox) = outbox();
        assert!(outbox.send(Outbound::Close(None)));
        assert!(outbox.send(close()));
        let mut batch = VecDeque::new();
        assert!(inbox.take(&mut batch).await);
        assert_eq!(batch.len(), 2);
        assert!(matches!(batch[0], Outbound::Close(None)));
    }

    #[tokio::test]
    async fn the_writer_wakes_for_a_send_and_ends_when_the_senders_leave() {
        let (outbox, inbox) = outbox();
        let second = outbox.clone();
        let writer = tokio::spawn(async move {
            let mut taken = 0;
            let mut batch = VecDeque::new();
            while inbox.take(&mut batch).await {
                taken += batch.len();
                batch.clear();
            }
            taken
        });
        tokio::task::yield_now().await;
        assert!(second.send(close()));
        drop(second);
        tokio::task::yield_now().await;
        assert!(outbox.send(close()));
        drop(outbox);
        let taken = tokio::time::timeout(std::time::Duration::from_secs(5), writer)
            .await
            .expect("the writer ended")
            .expect("the writer did not panic");
        assert_eq!(taken, 2);
    }

    #[test]
    fn sending_after_the_writer_left_is_refused() {
        let (outbox, inbox) = outbox();
        drop(inbox);
        assert!(!outbox.send(close()));
    }
}
