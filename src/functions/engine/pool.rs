//! The threads runs execute on, kept between runs: starting a thread (its stack, its
//! allocator heap) for every run cost more than many runs themselves. A run takes an idle
//! thread, or a new one when none is idle, so a run never waits behind another (a runaway
//! script holds its thread until its time limit, not anyone else's run). A thread idle for a
//! minute ends.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

type Job = Box<dyn FnOnce() + Send + 'static>;

/// How long an idle thread waits for work before it ends.
const IDLE_LIFETIME: Duration = Duration::from_secs(60);

struct Pool {
    jobs: Mutex<mpsc::Sender<Job>>,
    queue: Arc<Mutex<mpsc::Receiver<Job>>>,
    /// Threads waiting for a job and not yet promised to one.
    idle: Arc<AtomicUsize>,
    stack_bytes: usize,
}

fn pool(stack_bytes: usize) -> &'static Pool {
    static POOL: OnceLock<Pool> = OnceLock::new();
    POOL.get_or_init(|| {
        let (jobs, queue) = mpsc::channel();
        Pool {
            jobs: Mutex::new(jobs),
            queue: Arc::new(Mutex::new(queue)),
            idle: Arc::default(),
            stack_bytes,
        }
    })
}

/// Runs `job` on an engine thread of `stack_bytes` of stack (the first call's size counts).
pub fn spawn(stack_bytes: usize, job: Job) -> std::io::Result<()> {
    let pool = pool(stack_bytes);
    let promised = pool
        .idle
        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
        .is_ok();
    if !promised {
        let (queue, idle) = (pool.queue.clone(), pool.idle.clone());
        std::thread::Builder::new()
            .name("svc-function".into())
            .stack_size(pool.stack_bytes)
            .spawn(move || serve(&queue, &idle))?;
    }
    pool.jobs
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .send(job)
        .map_err(|_| std::io::Error::other("the engine threads have stopped"))
}

/// A thread's life: the job it was started for, then whatever comes while it is idle.
fn serve(queue: &Mutex<mpsc::Receiver<Job>>, idle: &AtomicUsize) {
    let mut promised = true;
    loop {
        if !promised {
            idle.fetch_add(1, Ordering::SeqCst);
        }
        let next = queue
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .recv_timeout(IDLE_LIFETIME);
        match next {
            Ok(job) => {
                job();
                promised = false;
            }
            Err(RecvTimeoutError::Timeout) => {
                // Leave only if no run was promised this thread meanwhile.
                let left = idle
                    .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
                    .is_ok();
                if left {
                    return;
                }
                promised = true;
            }
            Err(RecvTimeoutError::Disconnected) => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_reuse_idle_threads_and_never_wait_for_a_busy_one() {
        let (done_tx, done_rx) = mpsc::channel();
        let (release_tx, release_rx) = mpsc::channel::<()>();
        // A long job holds its thread …
        let tx = done_tx.clone();
        spawn(
            1 << 20,
            Box::new(move || {
                let _ = release_rx.recv();
                let _ = tx.send(std::thread::current().id());
            }),
        )
        .expect("spawn");
        // … and short ones still run meanwhile.
        let mut short = Vec::new();
        for _ in 0..10 {
            // Time for the last thread to say it is idle again.
            std::thread::sleep(Duration::from_millis(20));
            let tx = done_tx.clone();
            spawn(
                1 << 20,
                Box::new(move || {
                    let _ = tx.send(std::thread::current().id());
                }),
            )
            .expect("spawn");
            short.push(
                done_rx
                    .recv_timeout(Duration::from_secs(5))
                    .expect("not blocked"),
            );
        }
        // Other tests run code on the same threads meanwhile, so only reuse is certain.
        let distinct: std::collections::HashSet<_> = short.iter().collect();
        assert!(distinct.len() <= 5, "idle threads are reused: {short:?}");
        release_tx.send(()).expect("release");
        let long = done_rx
            .recv_timeout(Duration::from_secs(5))
            .expect("long job");
        assert!(!short.contains(&long), "the busy thread took no other job");
    }
}
