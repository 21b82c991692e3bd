//! A QuickJS runtime fenced for runs: the allocator's cap, the interrupt handler's deadline and
//! the flags they raise when they stop the code, shared with the run through [`Cells`]. Warm
//! contexts own one each ([`super::warm`]); runs that want a fresh context borrow an idle
//! scratch runtime ([`with_scratch`]).

use super::*;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Mutex, OnceLock};

/// What the runtime's allocator and interrupt handler read and raise for the current run.
/// Atomics, not cells, because the runtime may serve its next run on another thread.
#[derive(Default)]
pub(super) struct Cells {
    /// Set by the interrupt handler (or a late host call) when it stopped the code.
    pub(super) interrupted: AtomicBool,
    /// Set by the allocator when it refused memory past the limit.
    pub(super) refused: AtomicBool,
    /// The run's deadline, in nanoseconds since [`epoch`].
    deadline_ns: AtomicU64,
    /// The run's heap cap in bytes (`0`: none).
    pub(super) limit: AtomicUsize,
    /// Bytes the runtime holds now: what a warm context costs the cache.
    pub(super) used: AtomicUsize,
}

fn epoch() -> Instant {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

impl Cells {
    pub(super) fn deadline_passed(&self) -> bool {
        let now = Instant::now().saturating_duration_since(epoch()).as_nanos();
        now >= u128::from(self.deadline_ns.load(Relaxed))
    }

    fn set_deadline(&self, deadline: Instant) {
        let nanos = deadline.saturating_duration_since(epoch()).as_nanos();
        self.deadline_ns
            .store(u64::try_from(nanos).unwrap_or(u64::MAX), Relaxed);
    }

    pub(super) fn interrupted(&self) -> bool {
        self.interrupted.load(Relaxed)
    }

    pub(super) fn refused(&self) -> bool {
        self.refused.load(Relaxed)
    }

    pub(super) fn used(&self) -> usize {
        self.used.load(Relaxed)
    }
}

/// A QuickJS runtime with its fences.
pub(super) struct Sandbox {
    pub(super) rt: Runtime,
    pub(super) cells: Arc<Cells>,
}

impl Sandbox {
    pub(super) fn new() -> Result<Sandbox, Failure> {
        let cells = Arc::new(Cells::default());
        let rt = Runtime::new_with_alloc(CappedAllocator {
            cells: cells.clone(),
        })
        .map_err(engine_failed)?;
        let flags = cells.clone();
        rt.set_interrupt_handler(Some(Box::new(move || {
            let stop = flags.deadline_passed();
            if stop {
                flags.interrupted.store(true, Relaxed);
            }
            stop
        })));
        rt.set_max_stack_size(JS_STACK_BYTES);
        // rquickjs caches the prototype of Rust functions per runtime, from the first context
        // that makes one: let that be an empty context of its own, never a run's.
        Context::custom::<Builtins>(&rt)
            .and_then(|c| c.with(|ctx| Function::new(ctx, || ()).map(drop)))
            .map_err(engine_failed)?;
        Ok(Sandbox { rt, cells })
    }

    /// Arms the fences for a run.
    pub(super) fn prepare(&self, deadline: Instant, memory_bytes: usize) {
        self.cells.interrupted.store(false, Relaxed);
        self.cells.refused.store(false, Relaxed);
        self.cells.set_deadline(deadline);
        self.cells.limit.store(memory_bytes, Relaxed);
    }

    /// A new context with the sandbox's built-ins.
    pub(super) fn context(&self) -> Result<Context, Failure> {
        Context::custom::<Builtins>(&self.rt).map_err(|e| match self.cells.refused() {
            true => Failure::Memory,
            false => engine_failed(e),
        })
    }
}

pub(super) fn engine_failed(e: rquickjs::Error) -> Failure {
    Failure::Script(format!("could not start the engine: {e}"))
}

/// A scratch runtime and the runs it has served.
struct Scratch {
    sandbox: Sandbox,
    runs: u32,
}

/// Idle scratch runtimes, shared by every thread: a run lands on whichever blocking thread is
/// free, and a runtime per thread would be built again and again as threads come and go.
fn scratches() -> &'static Mutex<Vec<Scratch>> {
    static SCRATCHES: OnceLock<Mutex<Vec<Scratch>>> = OnceLock::new();
    SCRATCHES.get_or_init(Mutex::default)
}

/// Idle scratch runtimes kept at most (as many as runs may go on at once, give or take).
const MAX_IDLE_SCRATCHES: usize = 8;
/// Runs after which a scratch runtime is replaced anyway (its atom table only grows).
const RUNS_PER_SCRATCH: u32 = 10_000;

/// Lends `run` an idle scratch runtime (building one if none is idle), then keeps it for the
/// next fresh-context run unless the run hit a limit or left jobs queued.
pub(super) fn with_scratch(run: impl FnOnce(&Sandbox) -> Ran) -> Ran {
    let scratch = lock(scratches()).pop();
    let scratch = match scratch {
        Some(scratch) => scratch,
        None => match Sandbox::new() {
            Ok(sandbox) => Scratch { sandbox, runs: 0 },
            Err(failure) => return Ran::failed(failure),
        },
    };
    let ran = run(&scratch.sandbox);
    let clean = !ran.hit_limit() && !scratch.sandbox.rt.is_job_pending();
    if clean && scratch.runs < RUNS_PER_SCRATCH {
        scratch.sandbox.cells.limit.store(0, Relaxed);
        // The run's context is gone; its cycles go now rather than at some later run.
        scratch.sandbox.rt.run_gc();
        let kept = Scratch {
            runs: scratch.runs + 1,
            ..scratch
        };
        let mut idle = lock(scratches());
        if idle.len() < MAX_IDLE_SCRATCHES {
            idle.push(kept);
        }
    }
    ran
}
