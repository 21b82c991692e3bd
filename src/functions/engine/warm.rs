//! The QuickJS runtime an engine thread keeps between runs: building a runtime was most of a
//! trivial run's cost. Each run still gets a fresh context; the runtime is dropped instead of
//! kept when a run hits a limit or leaves jobs queued.

use super::*;

/// A QuickJS runtime an engine thread keeps between runs (each run gets a fresh context, so
/// no JS state survives), with the cells its allocator and interrupt handler read for the
/// current run.
pub(super) struct Warm {
    pub(super) rt: Runtime,
    pub(super) interrupted: Rc<Cell<bool>>,
    pub(super) refused: Rc<Cell<bool>>,
    deadline: Rc<Cell<Instant>>,
    limit: Rc<Cell<usize>>,
    runs: u32,
}

thread_local! {
    pub(super) static WARM: RefCell<Option<Warm>> = const { RefCell::new(None) };
}

/// Runs after which a runtime is replaced anyway (its atom table only grows).
const RUNS_PER_RUNTIME: u32 = 10_000;

impl Warm {
    pub(super) fn new() -> rquickjs::Result<Warm> {
        let interrupted = Rc::new(Cell::new(false));
        let refused = Rc::new(Cell::new(false));
        let deadline = Rc::new(Cell::new(Instant::now()));
        let limit = Rc::new(Cell::new(0));
        let rt = Runtime::new_with_alloc(CappedAllocator {
            used: 0,
            limit: limit.clone(),
            refused: refused.clone(),
        })?;
        let (flag, until) = (interrupted.clone(), deadline.clone());
        rt.set_interrupt_handler(Some(Box::new(move || {
            let stop = Instant::now() >= until.get();
            if stop {
                flag.set(true);
            }
            stop
        })));
        rt.set_max_stack_size(JS_STACK_BYTES);
        // rquickjs caches the prototype of Rust functions per runtime, from the first context
        // that makes one: let that be an empty context of its own, never a run's.
        Context::custom::<Builtins>(&rt)?.with(|ctx| Function::new(ctx, || ()).map(drop))?;
        Ok(Warm {
            rt,
            interrupted,
            refused,
            deadline,
            limit,
            runs: 0,
        })
    }

    pub(super) fn prepare(&mut self, deadline: Instant, memory_bytes: usize) {
        self.interrupted.set(false);
        self.refused.set(false);
        self.deadline.set(deadline);
        self.limit.set(memory_bytes);
    }

    /// Keeps the runtime for the thread's next run unless this run hit a limit or left jobs
    /// queued (they belong to its context, which they keep alive): such a runtime is dropped.
    pub(super) fn keep_if_clean(mut self, result: &Result<Json, Failure>) {
        let clean = matches!(result, Ok(_) | Err(Failure::Script(_)))
            && !self.rt.is_job_pending()
            && self.runs < RUNS_PER_RUNTIME;
        if clean {
            self.limit.set(0);
            self.rt.run_gc();
            self.runs += 1;
            WARM.with(|w| *w.borrow_mut() = Some(self));
        }
    }
}
