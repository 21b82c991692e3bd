//! Warm Python workers: each deployed process version (instance) gets an interpreter of its own,
//! started in the same fences as a zygote (Landlock over its own scratch directory, seccomp,
//! rlimits, an empty environment) plus the run's (no fork, exec, signals or limit raising,
//! its address-space cap), which runs the code's top level once and then each call in place:
//! module-level state persists between runs of the version, and nothing is shared with any
//! other. A run's files still go when it ends. svc times each run itself (the worker is killed
//! at the deadline) and raises the worker's CPU-time limit by the run's allowance before each
//! run. A worker is dropped instead of kept after a time or memory failure, a failed or
//! `main`-less first run (such code runs forked per run, fresh), after `process_warm_runs`
//! runs, when its instance is retired, and (least recently used first) when the idle workers'
//! resident memory passes `process_warm_memory`.

use super::protocol::{Found, Request, Zygote};
use super::{Python, RUNNER};
use crate::functions::engine::{warm as engine_warm, Failure, Host, Limits, Outcome, RunError};
use crate::functions::warm_pool::{Taken, WarmPool};
use serde_json::Value as Json;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

/// A warm worker and its scratch directory, removed once the worker is gone.
struct Worker {
    zygote: Zygote,
    dir: PathBuf,
    runs: u32,
    /// Its first run found `main`: later runs call it.
    established: bool,
    /// Its resident memory when last read.
    bytes: usize,
}

/// Runs between two reads of a worker's resident memory.
const RESIDENT_EVERY: u32 = 32;

impl Worker {
    fn start(python: &Python) -> Result<Worker, String> {
        static STARTED: AtomicU64 = AtomicU64::new(0);
        let n = STARTED.fetch_add(1, Ordering::Relaxed);
        let dir = python.scratch_base.join(format!("warm-{n}"));
        let zygote = Zygote::spawn(&python.interpreter, RUNNER, &dir, &python.run_filters, true)
            .inspect_err(|_| {
                let _ = std::fs::remove_dir_all(&dir);
            })?;
        Ok(Worker {
            zygote,
            dir,
            runs: 0,
            established: false,
            bytes: 0,
        })
    }

    /// Whether the worker may serve the next run after `result`.
    fn reusable(&mut self, result: &Result<Outcome, RunError>) -> bool {
        let limit_hit = matches!(
            result,
            Err(RunError {
                failure: Failure::Timeout | Failure::Memory,
                ..
            })
        );
        self.established && !limit_hit && self.zygote.alive() && self.runs < engine_warm::max_runs()
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        self.zygote.kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The idle workers of every instance.
fn pool() -> &'static WarmPool<Worker> {
    static POOL: OnceLock<WarmPool<Worker>> = OnceLock::new();
    POOL.get_or_init(WarmPool::default)
}

/// Makes `id` an instance whose workers are kept.
pub fn register(id: u64) {
    pool().register(id);
}

/// Drops the instance's workers; one still running drops itself when its run ends.
pub fn retire(id: u64) {
    pool().retire(id);
}

/// Runs `code` in instance `id`'s warm worker; `None` when the instance does not keep one
/// (unregistered, retired, or code without `main`), so the run is forked as usual.
pub(super) fn run(
    python: &Python,
    id: u64,
    code: &str,
    input: &Json,
    globals: &[(&str, Json)],
    limits: &Limits,
    host: &dyn Host,
) -> Option<Result<Outcome, RunError>> {
    let kept = match pool().take(id) {
        Taken::Warm(worker) => Some(worker),
        Taken::Build => None,
        Taken::NotKept => return None,
    };
    // A worker that died while idle (a thread of its code used up its CPU time) is replaced.
    let kept = kept.and_then(|mut worker| {
        let running = worker.zygote.alive();
        running.then_some(worker)
    });
    let mut worker = match kept {
        Some(worker) => worker,
        None => match Worker::start(python) {
            Ok(worker) => worker,
            Err(message) => {
                return Some(Err(RunError {
                    failure: Failure::Script(message),
                    logs: Vec::new(),
                }))
            }
        },
    };
    allow_cpu(worker.zygote.pid(), limits);
    // An established worker has the code loaded: it need not read it again.
    let code = if worker.established { "" } else { code };
    let request = Request::run(code, input, globals, limits, worker.zygote.baseline_bytes);
    worker.runs += 1;
    let result = worker.zygote.run(&request, limits, host);
    match worker.zygote.found {
        Some(Found::Main) => worker.established = true,
        Some(Found::WholeScript) => pool().runs_whole(id),
        None => {}
    }
    if worker.reusable(&result) {
        give_back(id, worker);
    }
    Some(result)
}

/// Keeps `worker` for the instance's next run, then drops the least recently used idle
/// workers while their resident memory passes the cap.
fn give_back(id: u64, mut worker: Worker) {
    // Resident memory changes slowly: read again every few runs, not after each one.
    if worker.runs == 1 || worker.runs.is_multiple_of(RESIDENT_EVERY) {
        worker.bytes = resident_bytes(worker.zygote.pid()).unwrap_or(worker.bytes);
    }
    let bytes = worker.bytes;
    pool().give_back(id, worker, bytes, engine_warm::memory_bytes());
}

/// Raises the worker's CPU-time limit to what it has used plus the run's allowance (the
/// timeout rounded up, plus a second), as a zygote's child gets for its one run; the code
/// itself cannot raise it (seccomp). Two syscalls: the process's CPU clock, then prlimit.
fn allow_cpu(pid: u32, limits: &Limits) {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return;
    };
    let mut clock: libc::clockid_t = 0;
    let mut used = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: plain calls on our own child with valid pointers to plain structs.
    let read = unsafe {
        libc::clock_getcpuclockid(pid, &mut clock) == 0
            && libc::clock_gettime(clock, &mut used) == 0
    };
    if !read {
        return;
    }
    // Whole seconds, rounded up, as RLIMIT_CPU counts them.
    let used = u64::try_from(used.tv_sec).unwrap_or(0) + u64::from(used.tv_nsec > 0);
    let mut wanted = libc::rlimit {
        rlim_cur: used + limits.timeout.as_secs() + 1,
        rlim_max: libc::RLIM_INFINITY,
    };
    // SAFETY: as above.
    unsafe {
        if libc::prlimit(pid, libc::RLIMIT_CPU, &wanted, std::ptr::null_mut()) == 0 {
            return;
        }
        // svc itself runs under a hard CPU limit (which no one may lift): keep it.
        let mut current = wanted;
        if libc::prlimit(pid, libc::RLIMIT_CPU, std::ptr::null(), &mut current) == 0 {
            wanted.rlim_max = current.rlim_max;
            wanted.rlim_cur = wanted.rlim_cur.min(current.rlim_max);
            libc::prlimit(pid, libc::RLIMIT_CPU, &wanted, std::ptr::null_mut());
        }
    }
}

/// Resident bytes of process `pid` (`/proc/<pid>/statm`).
fn resident_bytes(pid: u32) -> Option<usize> {
    let statm = std::fs::read_to_string(format!("/proc/{pid}/statm")).ok()?;
    let pages: usize = statm.split_whitespace().nth(1)?.parse().ok()?;
    // SAFETY: sysconf has no preconditions.
    let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).ok()?;
    Some(pages * page)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn cpu_limit(pid: u32) -> libc::rlimit {
        let mut limit = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: reading a limit of our own child into a plain struct.
        let read = unsafe {
            libc::prlimit(
                pid as libc::pid_t,
                libc::RLIMIT_CPU,
                std::ptr::null(),
                &mut limit,
            )
        };
        assert_eq!(read, 0, "prlimit");
        limit
    }

    #[test]
    fn each_run_gets_its_cpu_allowance_on_top_of_what_the_worker_used() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .expect("sleep");
        let limits = |ms| Limits {
            timeout: Duration::from_millis(ms),
            memory_bytes: 0,
        };
        // A sleeping process has used (almost) no CPU: the allowance is the run's alone.
        allow_cpu(child.id(), &limits(2500));
        let after = cpu_limit(child.id()).rlim_cur;
        assert!((3..=4).contains(&after), "{after}");
        allow_cpu(child.id(), &limits(10_000));
        let after = cpu_limit(child.id()).rlim_cur;
        assert!((11..=12).contains(&after), "{after}");
        let _ = child.kill();
        let _ = child.wait();
    }
}
