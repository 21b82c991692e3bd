//! The warm runtimes kept for deployed process versions ([`Instance`](super::instance::Instance)),
//! one pool per kind of runtime (a QuickJS context, a Python worker): each instance's idle
//! runtimes, taken by a run and given back after it, and the least recently given back dropped
//! while the idle ones together hold more than the cap. Runtimes are dropped outside the lock
//! (freeing a QuickJS heap or killing a worker takes a while).

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};

pub struct WarmPool<T> {
    state: Mutex<State<T>>,
}

struct State<T> {
    instances: HashMap<u64, Kept<T>>,
    /// What every idle runtime holds.
    bytes: usize,
    /// Counts the give-backs: the idle runtime with the smallest goes first.
    tick: u64,
}

struct Kept<T> {
    idle: Vec<Idle<T>>,
    /// The code has no `main`: it runs whole each time, on a fresh runtime.
    whole_script: bool,
}

struct Idle<T> {
    runtime: T,
    bytes: usize,
    tick: u64,
}

/// What a run of an instance starts from.
pub enum Taken<T> {
    /// A runtime an earlier run of the instance gave back.
    Warm(T),
    /// None is idle: build one, and give it back after the run.
    Build,
    /// The instance keeps no runtime (not registered, retired, or code without `main`).
    NotKept,
}

impl<T> Default for WarmPool<T> {
    fn default() -> WarmPool<T> {
        WarmPool {
            state: Mutex::new(State {
                instances: HashMap::new(),
                bytes: 0,
                tick: 0,
            }),
        }
    }
}

impl<T> WarmPool<T> {
    fn lock(&self) -> MutexGuard<'_, State<T>> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Makes `id` an instance whose runtimes are kept.
    pub fn register(&self, id: u64) {
        self.lock().instances.entry(id).or_insert(Kept {
            idle: Vec::new(),
            whole_script: false,
        });
    }

    /// Drops the instance's idle runtimes; one still running is not given back.
    pub fn retire(&self, id: u64) {
        let gone = {
            let mut state = self.lock();
            let gone = state.instances.remove(&id);
            if let Some(kept) = &gone {
                state.bytes -= kept.idle.iter().map(|i| i.bytes).sum::<usize>();
            }
            gone
        };
        drop(gone);
    }

    /// The runtime a run of instance `id` starts from.
    pub fn take(&self, id: u64) -> Taken<T> {
        let mut state = self.lock();
        let state = &mut *state;
        match state.instances.get_mut(&id) {
            Some(kept) if !kept.whole_script => match kept.idle.pop() {
                Some(idle) => {
                    state.bytes -= idle.bytes;
                    Taken::Warm(idle.runtime)
                }
                None => Taken::Build,
            },
            _ => Taken::NotKept,
        }
    }

    /// Instance `id`'s code turned out to have no `main`: its runs take fresh runtimes.
    pub fn runs_whole(&self, id: u64) {
        if let Some(kept) = self.lock().instances.get_mut(&id) {
            kept.whole_script = true;
        }
    }

    /// Keeps `runtime` (holding `bytes`) for instance `id`'s next run, unless the instance was
    /// retired meanwhile; then drops the least recently given back while all idle runtimes
    /// hold more than `cap` bytes.
    pub fn give_back(&self, id: u64, runtime: T, bytes: usize, cap: usize) {
        let mut dropped = Vec::new();
        {
            let mut state = self.lock();
            state.tick += 1;
            let tick = state.tick;
            let Some(kept) = state.instances.get_mut(&id) else {
                dropped.push(runtime);
                return;
            };
            kept.idle.push(Idle {
                runtime,
                bytes,
                tick,
            });
            state.bytes += bytes;
            while state.bytes > cap {
                let Some((id, i)) = state.least_recently_used() else {
                    break;
                };
                if let Some(kept) = state.instances.get_mut(&id) {
                    let idle = kept.idle.remove(i);
                    state.bytes -= idle.bytes;
                    dropped.push(idle.runtime);
                }
            }
        }
        drop(dropped);
    }

    /// How many runtimes are idle and the bytes they hold.
    #[cfg(test)]
    pub fn idle(&self) -> (usize, usize) {
        let state = self.lock();
        let count = state.instances.values().map(|k| k.idle.len()).sum();
        (count, state.bytes)
    }
}

impl<T> State<T> {
    /// (instance, index) of the idle runtime given back longest ago.
    fn least_recently_used(&self) -> Option<(u64, usize)> {
        self.instances
            .iter()
            .flat_map(|(id, kept)| {
                let idle = kept.idle.iter().enumerate();
                idle.map(move |(i, idle)| (idle.tick, *id, i))
            })
            .min()
            .map(|(_, id, i)| (id, i))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idle_runtimes_are_kept_per_instance_and_the_oldest_go_past_the_cap() {
        let pool: WarmPool<&str> = WarmPool::default();
        assert!(matches!(pool.take(1), Taken::NotKept));
        pool.register(1);
        pool.register(2);
        assert!(matches!(pool.take(1), Taken::Build));
        pool.give_back(1, "a", 10, 25);
        pool.give_back(2, "b", 10, 25);
        assert_eq!(pool.idle(), (2, 20));
        // Past the cap: instance 1's runtime, given back first, goes.
        pool.give_back(2, "c", 10, 25);
        assert_eq!(pool.idle(), (2, 20));
        assert!(matches!(pool.take(1), Taken::Build));
        assert!(matches!(pool.take(2), Taken::Warm("c")));
        pool.retire(2);
        assert_eq!(pool.idle(), (0, 0));
        assert!(matches!(pool.take(2), Taken::NotKept));
        pool.give_back(2, "d", 10, 25);
        assert_eq!(pool.idle(), (0, 0), "a retired instance keeps nothing");
        pool.runs_whole(1);
        assert!(matches!(pool.take(1), Taken::NotKept));
    }
}
