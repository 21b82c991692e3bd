//! The queue between a connection's producers (its session, its reader, the hub) and the
//! connection's task, which writes what is queued.
//!
//! Every connected client has one, so it is built to cost nothing while the client is quiet:
//! an empty queue holds no allocation (a channel would keep its first block of slots, 1.3 KB
//! per client), a burst is taken in one swap under the lock, and the whole shared part fits
//! 112 bytes (the allocator's next size up is 128). It also carries what the hub
//! tells a connection out of band: that it must end (a kick: takeover, revoked credential,
//! shutdown, silence), when the client was last heard from (for the keep-alive sweep), when
//! the connection last did anything, and that a quiet plain-TCP connection may park (see
//! [`super::parking`]).

use super::session::Kick;
use super::writer::Outbound;
use std::sync::atomic::{AtomicI64, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Poll, Waker};

struct Shared {
    queue: Mutex<Queue>,
    /// QoS 0 deliveries waiting, to drop them when a client falls behind.
    waiting: AtomicUsize,
    /// Publishes accepted from the client and written to it, for the list of connected
    /// clients; each side adds once per batch.
    received: AtomicU64,
    sent: AtomicU64,
    /// When the client's last bytes arrived (ms since the epoch).
    heard_ms: AtomicI64,
    /// When the connection last read or wrote (ms since the epoch): it is asked to park only
    /// once it has been quiet both ways.
    active_ms: AtomicI64,
}

#[derive(Default)]
struct Queue {
    /// In order; taken whole (a `Vec`, 8 bytes less than a `VecDeque`).
    items: Vec<Outbound>,
    /// Wakes the connection when the queue gets its first item or a kick arrives. One waker
    /// under the queue's lock, not a `Notify` nor an `AtomicWaker`: there is one waiting
    /// task, its wait then needs no waiter node of its own in every quiet client's future,
    /// and registering it and looking at the queue are one step.
    waker: Option<Waker>,
    /// The first reason the connection was told to end; it ends before writing more.
    kick: Option<Kick>,
    /// The connection is gone: nothing sent will be written.
    receiver_gone: bool,
    /// The hub asked the quiet connection to park.
    park_asked: bool,
    /// The connection is parked (its task ended; the next item or kick brings it back).
    parked: bool,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Queue> {
        // A panic while holding it cannot leave the queue half-changed.
        self.queue.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Wakes the waiting connection (once: it registers again when it next waits), outside
    /// the lock.
    fn wake(&self, mut queue: MutexGuard<'_, Queue>) {
        let waker = queue.waker.take();
        drop(queue);
        if let Some(waker) = waker {
            waker.wake();
        }
    }

    fn active_ms(&self) -> i64 {
        self.heard_ms
            .load(Ordering::Relaxed)
            .max(self.active_ms.load(Ordering::Relaxed))
    }
}

/// The sending side, held by the session and the connection's reader.
pub struct Outbox {
    shared: Arc<Shared>,
}

/// The connection's side.
pub struct Inbox {
    shared: Arc<Shared>,
}

/// A new queue.
pub fn outbox() -> (Outbox, Inbox) {
    let shared = Arc::new(Shared {
        queue: Mutex::new(Queue::default()),
        waiting: AtomicUsize::new(0),
        received: AtomicU64::new(0),
        sent: AtomicU64::new(0),
        heard_ms: AtomicI64::new(crate::time::now_ms()),
        active_ms: AtomicI64::new(crate::time::now_ms()),
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
        queue.items.push(item);
        if qos0 {
            self.shared.waiting.fetch_add(1, Ordering::Relaxed);
        }
        if was_empty {
            // A writer busy with the previous batch finds this one when it comes back; only
            // the first item of a batch needs to wake it.
            self.shared.wake(queue);
        }
        true
    }

    /// Tells the connection to end for `why`; false when it was told already (or is gone).
    pub fn kick(&self, why: Kick) -> bool {
        let mut queue = self.shared.lock();
        if queue.receiver_gone || queue.kick.is_some() {
            return false;
        }
        queue.kick = Some(why);
        self.shared.wake(queue);
        true
    }

    /// When the client's last bytes arrived (ms since the epoch).
    pub fn heard_ms(&self) -> i64 {
        self.shared.heard_ms.load(Ordering::Relaxed)
    }

    /// When the connection last read or wrote (ms since the epoch).
    pub fn active_ms(&self) -> i64 {
        self.shared.active_ms()
    }

    /// Asks the connection to park when it finds itself quiet; false when nothing was asked
    /// (asked already, told to end, or gone).
    pub fn ask_park(&self) -> bool {
        let mut queue = self.shared.lock();
        if queue.receiver_gone || queue.kick.is_some() || queue.park_asked || queue.parked {
            return false;
        }
        queue.park_asked = true;
        self.shared.wake(queue);
        true
    }

    /// Something is queued or a kick arrived: a parked connection must come back.
    pub fn pending(&self) -> bool {
        let queue = self.shared.lock();
        queue.kick.is_some() || !queue.items.is_empty()
    }

    /// QoS 0 deliveries not yet written.
    pub fn backlog(&self) -> usize {
        self.shared.waiting.load(Ordering::Relaxed)
    }

    /// Counts `n` publishes accepted from the client.
    pub fn count_received(&self, n: usize) {
        self.shared.received.fetch_add(n as u64, Ordering::Relaxed);
    }

    /// Publishes accepted from the client and written to it so far.
    pub fn counts(&self) -> (u64, u64) {
        (
            self.shared.received.load(Ordering::Relaxed),
            self.shared.sent.load(Ordering::Relaxed),
        )
    }
}

impl Clone for Outbox {
    fn clone(&self) -> Outbox {
        Outbox {
            shared: self.shared.clone(),
        }
    }
}

/// Makes `waker` the one woken next (kept when it would wake the same task).
fn register(queue: &mut Queue, waker: &Waker) {
    if !queue.waker.as_ref().is_some_and(|w| w.will_wake(waker)) {
        queue.waker = Some(waker.clone());
    }
}

/// What [`Inbox::wait`] found.
pub enum Waited {
    Queued,
    Kicked(Kick),
    /// Nothing queued, and the hub asks the connection to park if it is quiet.
    ParkAsked,
}

impl Inbox {
    /// Waits until something is queued or a kick arrived (a kick first). Cancel-safe: nothing
    /// is taken.
    pub async fn wait(&self) -> Waited {
        std::future::poll_fn(|cx| {
            let mut queue = self.shared.lock();
            register(&mut queue, cx.waker());
            queue.parked = false;
            match queue.kick {
                Some(why) => Poll::Ready(Waited::Kicked(why)),
                None if !queue.items.is_empty() => Poll::Ready(Waited::Queued),
                None if queue.park_asked => {
                    queue.park_asked = false;
                    Poll::Ready(Waited::ParkAsked)
                }
                None => Poll::Pending,
            }
        })
        .await
    }

    /// Waits for a kick only (while a write to the client is under way).
    pub async fn kicked(&self) -> Kick {
        std::future::poll_fn(|cx| {
            let mut queue = self.shared.lock();
            register(&mut queue, cx.waker());
            match queue.kick {
                Some(why) => Poll::Ready(why),
                None => Poll::Pending,
            }
        })
        .await
    }

    /// Wakes `waker` instead of the connection's task for the next item or kick: the task is
    /// about to end, and what parked it brings the connection back.
    pub fn wake_instead(&self, waker: &Waker) {
        let mut queue = self.shared.lock();
        queue.waker = Some(waker.clone());
        queue.parked = true;
    }

    /// A sender for the same queue.
    pub fn outbox(&self) -> Outbox {
        Outbox {
            shared: self.shared.clone(),
        }
    }

    /// Moves everything queued into `batch` (which should be empty), without waiting.
    pub fn take(&self, batch: &mut Vec<Outbound>) {
        let mut queue = self.shared.lock();
        // Swapped, not drained: the queue is left without an allocation.
        std::mem::swap(&mut queue.items, batch);
    }

    /// The client's bytes arrived just now.
    pub fn heard(&self, now_ms: i64) {
        self.shared.heard_ms.store(now_ms, Ordering::Relaxed);
    }

    /// When the connection last read or wrote (ms since the epoch).
    pub fn active_ms(&self) -> i64 {
        self.shared.active_ms()
    }

    /// The connection wrote just now.
    pub fn active(&self, now_ms: i64) {
        self.shared.active_ms.store(now_ms, Ordering::Relaxed);
    }

    /// Counts one written QoS 0 delivery.
    pub fn written_qos0(&self) {
        self.shared.waiting.fetch_sub(1, Ordering::Relaxed);
    }

    /// Counts `n` publishes written to the client.
    pub fn count_sent(&self, n: usize) {
        if n > 0 {
            self.shared.sent.fetch_add(n as u64, Ordering::Relaxed);
        }
    }
}

impl Drop for Inbox {
    fn drop(&mut self) {
        let mut queue = self.shared.lock();
        queue.receiver_gone = true;
        // What was never written goes now, not with the last sender.
        queue.items = Vec::new();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmqtt_codec::v5::DisconnectReasonCode;

    fn close() -> Outbound {
        Outbound::Close(Some(DisconnectReasonCode::NormalDisconnection))
    }

    #[test]
    fn every_clients_queue_fits_the_allocators_112_byte_class() {
        // An `Arc` adds two counters (16 bytes) to what it holds.
        assert!(std::mem::size_of::<Shared>() + 16 <= 112);
    }

    #[tokio::test]
    async fn a_burst_is_taken_in_one_batch_in_order() {
        let (outbox, inbox) = outbox();
        assert!(outbox.send(Outbound::Close(None)));
        assert!(outbox.send(close()));
        assert!(matches!(inbox.wait().await, Waited::Queued));
        let mut batch = Vec::new();
        inbox.take(&mut batch);
        assert_eq!(batch.len(), 2);
        assert!(matches!(batch[0], Outbound::Close(None)));
    }

    #[tokio::test]
    async fn the_connection_wakes_for_a_send_and_a_kick_comes_first_and_once() {
        let (outbox, inbox) = outbox();
        let waiter = tokio::spawn(async move {
            let waited = inbox.wait().await;
            (inbox, waited)
        });
        tokio::task::yield_now().await;
        assert!(outbox.send(close()));
        let (inbox, waited) = tokio::time::timeout(std::time::Duration::from_secs(5), waiter)
            .await
            .expect("woken")
            .expect("no panic");
        assert!(matches!(waited, Waited::Queued));
        assert!(outbox.kick(Kick::TakenOver));
        assert!(!outbox.kick(Kick::ShuttingDown), "the first kick stands");
        assert!(matches!(
            inbox.wait().await,
            Waited::Kicked(Kick::TakenOver)
        ));
        assert!(matches!(inbox.kicked().await, Kick::TakenOver));
    }

    #[tokio::test]
    async fn a_park_request_comes_after_what_is_queued_and_is_asked_once() {
        let (outbox, inbox) = outbox();
        assert!(outbox.send(close()));
        assert!(outbox.ask_park());
        assert!(!outbox.ask_park(), "asked already");
        assert!(outbox.pending());
        assert!(matches!(inbox.wait().await, Waited::Queued));
        inbox.take(&mut Vec::new());
        assert!(!outbox.pending());
        assert!(matches!(inbox.wait().await, Waited::ParkAsked));
        assert!(outbox.ask_park(), "answered, so it may be asked again");
        assert!(outbox.kick(Kick::ShuttingDown));
        assert!(matches!(
            inbox.wait().await,
            Waited::Kicked(Kick::ShuttingDown)
        ));
        assert!(!outbox.ask_park(), "a connection told to end does not park");
    }

    #[test]
    fn a_parked_connections_waker_gets_the_next_item() {
        struct Flag(std::sync::atomic::AtomicBool);
        impl std::task::Wake for Flag {
            fn wake(self: Arc<Self>) {
                self.0.store(true, Ordering::SeqCst);
            }
        }
        let (outbox, inbox) = outbox();
        let flag = Arc::new(Flag(std::sync::atomic::AtomicBool::new(false)));
        inbox.wake_instead(&Waker::from(flag.clone()));
        assert!(
            !outbox.ask_park(),
            "parked already: asking would bring it back"
        );
        assert!(!flag.0.load(Ordering::SeqCst));
        assert!(inbox.outbox().send(close()));
        assert!(flag.0.load(Ordering::SeqCst));
        assert!(outbox.pending());
    }

    #[test]
    fn sending_after_the_connection_left_is_refused() {
        let (outbox, inbox) = outbox();
        drop(inbox);
        assert!(!outbox.send(close()));
        assert!(!outbox.kick(Kick::ShuttingDown));
    }
}
