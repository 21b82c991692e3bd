//! Group commit: one thread owns a kind of store write and applies every request waiting at
//! that moment with one call (one transaction), so under load many writers share a commit
//! instead of each taking SQLite's write lock in turn (a writer that finds it taken sleeps in
//! SQLite's busy handler for a millisecond or more). A request may wait for its commit, or be
//! sent and forgotten.

use std::sync::mpsc;
use tokio::sync::oneshot;

type Reply = oneshot::Sender<Result<(), String>>;

pub struct GroupCommit<T> {
    requests: mpsc::Sender<(T, Option<Reply>)>,
}

impl<T> Clone for GroupCommit<T> {
    fn clone(&self) -> Self {
        GroupCommit {
            requests: self.requests.clone(),
        }
    }
}

impl<T: Send + 'static> GroupCommit<T> {
    /// Starts the writer thread `name`: `write` gets up to `max_group` requests at once. The
    /// thread ends when the last `GroupCommit` is dropped.
    pub fn start(
        name: &str,
        max_group: usize,
        write: impl Fn(&[T]) -> Result<(), String> + Send + 'static,
    ) -> std::io::Result<GroupCommit<T>> {
        let (requests, incoming) = mpsc::channel::<(T, Option<Reply>)>();
        std::thread::Builder::new()
            .name(name.into())
            .spawn(move || {
                while let Ok(first) = incoming.recv() {
                    let (items, replies): (Vec<T>, Vec<Option<Reply>>) = std::iter::once(first)
                        .chain(incoming.try_iter().take(max_group.saturating_sub(1)))
                        .unzip();
                    let result = write(&items);
                    for reply in replies.into_iter().flatten() {
                        let _ = reply.send(result.clone());
                    }
                }
            })?;
        Ok(GroupCommit { requests })
    }

    /// Writes `item` with the next group; `Ok` once that group is committed.
    pub async fn write(&self, item: T) -> Result<(), String> {
        let (reply, committed) = oneshot::channel();
        self.requests
            .send((item, Some(reply)))
            .map_err(|_| "the store writer has stopped".to_string())?;
        committed
            .await
            .map_err(|_| "the store writer has stopped".to_string())?
    }

    /// Writes `item` with the next group, without waiting for it.
    pub fn send(&self, item: T) {
        let _ = self.requests.send((item, None));
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
}
