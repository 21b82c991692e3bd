//! Group commit: one thread owns a kind of store write and applies every request waiting at
//! that moment with one call (one transaction), so under load many writers share a commit
//! instead of each taking SQLite's write lock in turn (a writer that finds it taken sleeps in
//! SQLite's busy handler for a millisecond or more). A request may wait for its commit, or be
//! sent and forgotten. A group either shares one result ([`GroupCommit::start`]) or answers each
//! request with its own ([`GroupCommit::start_each`]: one request's refusal is not its
//! neighbours'). A reader that must see what was sent and forgotten waits for
//! [`GroupCommit::settled`] first.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;
use tokio::sync::{oneshot, watch};

type Reply<R> = oneshot::Sender<Result<R, String>>;

/// Requests `T`, each answered with an `R` once its group is written.
pub struct GroupCommit<T, R = ()> {
    requests: mpsc::Sender<(T, Option<Reply<R>>)>,
    /// Requests counted before they are queued, and requests written (by the writer thread,
    /// which holds the only sender): what [`GroupCommit::settled`] compares.
    queued: Arc<AtomicU64>,
    written: watch::Receiver<u64>,
}

impl<T, R> Clone for GroupCommit<T, R> {
    fn clone(&self) -> Self {
        GroupCommit {
            requests: self.requests.clone(),
            queued: self.queued.clone(),
            written: self.written.clone(),
        }
    }
}

impl<T: Send + 'static> GroupCommit<T> {
    /// Starts the writer thread `name`: `write` gets up to `max_group` requests at once, and its
    /// result is every request's. The thread ends when the last `GroupCommit` is dropped.
    pub fn start(
        name: &str,
        max_group: usize,
        write: impl Fn(&[T]) -> Result<(), String> + Send + 'static,
    ) -> std::io::Result<GroupCommit<T>> {
        GroupCommit::start_lingering(name, max_group, Duration::ZERO, write)
    }

    /// [`GroupCommit::start`] for requests sent and forgotten: once a request wakes the
    /// writer, it lingers for `linger` before it takes the group (unless the group before was
    /// full), so a steady stream is written in few large transactions and the senders seldom
    /// have to wake the writer. A request that waits for its write waits the linger too.
    pub fn start_lingering(
        name: &str,
        max_group: usize,
        linger: Duration,
        write: impl Fn(&[T]) -> Result<(), String> + Send + 'static,
    ) -> std::io::Result<GroupCommit<T>> {
        GroupCommit::spawn(name, max_group, linger, move |items: Vec<T>| {
            let result = write(&items);
            vec![result; items.len()]
        })
    }
}

impl<T: Send + 'static, R: Send + 'static> GroupCommit<T, R> {
    /// Starts the writer thread `name`: `write` gets up to `max_group` requests at once and
    /// returns one result per request, in their order (a missing one is reported as a failure).
    /// The thread ends when the last `GroupCommit` is dropped.
    pub fn start_each(
        name: &str,
        max_group: usize,
        write: impl Fn(Vec<T>) -> Vec<Result<R, String>> + Send + 'static,
    ) -> std::io::Result<GroupCommit<T, R>> {
        GroupCommit::spawn(name, max_group, Duration::ZERO, write)
    }

    fn spawn(
        name: &str,
        max_group: usize,
        linger: Duration,
        write: impl Fn(Vec<T>) -> Vec<Result<R, String>> + Send + 'static,
    ) -> std::io::Result<GroupCommit<T, R>> {
        let (requests, incoming) = mpsc::channel::<(T, Option<Reply<R>>)>();
        let (written_tx, written) = watch::channel(0u64);
        std::thread::Builder::new()
            .name(name.into())
            .spawn(move || {
                let mut full = false;
                while let Ok(first) = incoming.recv() {
                    if !full && !linger.is_zero() {
                        std::thread::sleep(linger);
                    }
                    let (items, replies): (Vec<T>, Vec<Option<Reply<R>>>) = std::iter::once(first)
                        .chain(incoming.try_iter().take(max_group.saturating_sub(1)))
                        .unzip();
                    full = items.len() >= max_group;
                    let count = items.len() as u64;
                    let mut results = write(items).into_iter();
                    written_tx.send_modify(|n| *n += count);
                    for reply in replies {
                        let result = results
                            .next()
                            .unwrap_or_else(|| Err("the store writer lost a result".to_string()));
                        if let Some(reply) = reply {
                            let _ = reply.send(result);
                        }
                    }
                }
            })?;
        Ok(GroupCommit {
            requests,
            queued: Arc::default(),
            written,
        })
    }

    /// Writes `item` with the next group; its result once that group is committed.
    pub async fn write(&self, item: T) -> Result<R, String> {
        let (reply, committed) = oneshot::channel();
        self.queue(item, Some(reply))
            .map_err(|_| "the store writer has stopped".to_string())?;
        committed
            .await
            .map_err(|_| "the store writer has stopped".to_string())?
    }

    /// Writes `item` with the next group, without waiting for it.
    pub fn send(&self, item: T) {
        let _ = self.queue(item, None);
    }

    /// Returns once every request queued before the call has been written (committed or
    /// refused), or the writer has stopped. Requests are written in the order they were
    /// queued, so once as many have been written as had been counted, every one whose queueing
    /// finished before this call is among them.
    pub async fn settled(&self) {
        let target = self.queued.load(Ordering::SeqCst);
        let mut written = self.written.clone();
        let _ = written.wait_for(|n| *n >= target).await;
    }

    /// Counts the request, then queues it: counted first, so [`GroupCommit::settled`] never
    /// waits for fewer than were queued before it.
    /// Fails when the writer has stopped.
    fn queue(&self, item: T, reply: Option<Reply<R>>) -> Result<(), ()> {
        self.queued.fetch_add(1, Ordering::SeqCst);
        self.requests.send((item, reply)).map_err(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    #[tokio::test]
    async fn waiting_writes_share_groups_and_get_the_groups_result() {
        let groups: Arc<Mutex<Vec<Vec<u32>>>> = Arc::default();
        let seen = groups.clone();
        let writer = GroupCommit::start("test-writer", 3, move |items: &[u32]| {
            seen.lock().expect("lock").push(items.to_vec());
            if items.contains(&13) {
                Err("unlucky".into())
            } else {
                Ok(())
            }
        })
        .expect("start");
        for n in 0..7 {
            writer.send(n);
        }
        assert_eq!(writer.write(7).await, Ok(()));
        assert_eq!(writer.write(13).await, Err("unlucky".into()));
        let groups = groups.lock().expect("lock").clone();
        let all: Vec<u32> = groups.iter().flatten().copied().collect();
        assert_eq!(all, [0, 1, 2, 3, 4, 5, 6, 7, 13], "in order, none lost");
        assert!(groups.iter().all(|g| g.len() <= 3), "{groups:?}");
    }

    #[tokio::test]
    async fn settled_waits_for_every_request_sent_before_it() {
        let written: Arc<Mutex<Vec<u32>>> = Arc::default();
        let seen = written.clone();
        let groups: Arc<Mutex<usize>> = Arc::default();
        let counted = groups.clone();
        let linger = Duration::from_millis(20);
        let writer =
            GroupCommit::start_lingering("test-settle", 8, linger, move |items: &[u32]| {
                *counted.lock().expect("lock") += 1;
                seen.lock().expect("lock").extend_from_slice(items);
                Ok(())
            })
            .expect("start");
        for n in 0..20 {
            writer.send(n);
        }
        writer.settled().await;
        assert_eq!(*written.lock().expect("lock"), (0..20).collect::<Vec<_>>());
        // The first request lingered for the rest; full groups then follow without a pause.
        assert_eq!(*groups.lock().expect("lock"), 3);
        // Nothing pending: at once.
        writer.settled().await;
    }

    #[tokio::test]
    async fn each_request_of_a_group_gets_its_own_result() {
        let writer = GroupCommit::start_each("test-each", 8, |items: Vec<u32>| {
            items
                .into_iter()
                .map(|n| {
                    if n % 2 == 0 {
                        Ok(n * 10)
                    } else {
                        Err(format!("{n} is odd"))
                    }
                })
                .collect()
        })
        .expect("start");
        let results = futures::future::join_all((0..6).map(|n| writer.write(n))).await;
        assert_eq!(
            results,
            [
                Ok(0),
                Err("1 is odd".into()),
                Ok(20),
                Err("3 is odd".into()),
                Ok(40),
                Err("5 is odd".into())
            ]
        );
    }
}
