//! Warm contexts: each deployed process version (an *instance*, by the id its deployment
//! registers) keeps a QuickJS runtime and context of its own between runs, as Lambda and
//! Workers keep an execution environment, so module-level state persists from one run of the
//! version to the next and nothing is shared between instances. A context is dropped instead of
//! kept when a run hits its time, memory or stack limit, leaves jobs queued or fails before the
//! code's entry was found; after [`Settings::max_runs`] runs; when its instance is retired
//! (redeployed, disabled, deleted); and, least recently used first, when the idle contexts
//! together hold more than [`Settings::memory_bytes`].
//!
//! Runs of one instance that overlap get a context each (Lambda's one environment per
//! concurrent invocation): up to that many are kept, each with its own state.

use super::execute::{run_code, Entry, Found, Guard, Ran};
use super::globals::Kit;
use super::lent::RunSlot;
use super::runtime::Sandbox;
use super::*;
use crate::functions::warm_pool::{Taken, WarmPool};
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, OnceLock};

/// What the warm contexts may take, server-wide.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Settings {
    /// Runs after which a context is built anew (`0`: never kept).
    pub max_runs: u32,
    /// Bytes the idle contexts may hold together; past it the least recently used go.
    pub memory_bytes: usize,
}

const DEFAULT_MAX_RUNS: u32 = 10_000;
const DEFAULT_MEMORY_BYTES: usize = 128 << 20;

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            max_runs: DEFAULT_MAX_RUNS,
            memory_bytes: DEFAULT_MEMORY_BYTES,
        }
    }
}

static MAX_RUNS: AtomicU32 = AtomicU32::new(DEFAULT_MAX_RUNS);
static MEMORY_BYTES: AtomicUsize = AtomicUsize::new(DEFAULT_MEMORY_BYTES);

/// Runs after which a warm runtime is built anew.
pub fn max_runs() -> u32 {
    MAX_RUNS.load(Relaxed)
}

/// Bytes the idle warm runtimes (of each language) may hold together.
pub fn memory_bytes() -> usize {
    MEMORY_BYTES.load(Relaxed)
}

/// Sets what the warm contexts may take (at server start).
pub fn configure(settings: Settings) {
    MAX_RUNS.store(settings.max_runs, Relaxed);
    MEMORY_BYTES.store(settings.memory_bytes, Relaxed);
}

/// A process version's own runtime and context, with what the code's evaluation found (as the
/// runtime's user data: it must go before the runtime does, and goes with it).
struct WarmContext {
    // Dropped in this order: the context, then its runtime.
    context: Context,
    slot: Arc<RunSlot>,
    sandbox: Sandbox,
    runs: u32,
}

/// What a warm context keeps between runs.
struct Kept<'js> {
    kit: Kit<'js>,
    entry: Option<Entry<'js>>,
}

// SAFETY: `Kept` holds only JS values of lifetime 'js (see `Kit`).
unsafe impl<'js> rquickjs::JsLifetime<'js> for Kept<'js> {
    type Changed<'to> = Kept<'to>;
}

impl WarmContext {
    fn build(source: &Source) -> Result<WarmContext, Failure> {
        let sandbox = Sandbox::new()?;
        // Set once: later runs' dynamic `import()`s load from the same bundle.
        let bundle = Bundle::new(source.modules);
        sandbox.rt.set_loader(bundle.clone(), bundle);
        let context = sandbox.context()?;
        let slot = Arc::new(RunSlot::default());
        context.with(|ctx| {
            let kit = Kit::new(&ctx, &slot, &sandbox.cells).map_err(engine_failed)?;
            ctx.store_userdata(Kept { kit, entry: None })
                .map_err(|_| stopped())
                .map(drop)
        })?;
        Ok(WarmContext {
            context,
            slot,
            sandbox,
            runs: 0,
        })
    }

    fn run(
        &mut self,
        source: &Source,
        input: &Json,
        globals: &[(&str, Json)],
        limits: &Limits,
        host: &dyn Host,
    ) -> Ran {
        self.sandbox.prepare(deadline(limits), limits.memory_bytes);
        self.runs += 1;
        let lend = self.slot.lend(host);
        let guard = Guard::new(&self.sandbox.cells);
        let (result, found) = self.context.with(|ctx| {
            let Some((kit, entry)) = ctx
                .userdata::<Kept>()
                .map(|kept| (kept.kit.clone(), kept.entry.clone()))
            else {
                return (Err(stopped()), Found::Nothing);
            };
            let first = entry.is_none();
            let (result, entry, found) =
                run_code(&ctx, &guard, &kit, source, entry, input, globals);
            if first && found == Found::Entry {
                if let Ok(Some(mut kept)) = ctx.remove_userdata::<Kept>() {
                    kept.entry = entry;
                    let _ = ctx.store_userdata(*kept);
                }
            }
            (result, found)
        });
        Ran {
            result,
            logs: lend.finish(),
            stack_hit: guard.stack_hit(),
            found,
        }
    }

    /// Whether the context may serve the next run after `ran`.
    fn reusable(&self, ran: &Ran) -> bool {
        ran.found == Found::Entry
            && !ran.hit_limit()
            && !self.sandbox.rt.is_job_pending()
            && self.runs < MAX_RUNS.load(Relaxed)
    }

    fn bytes(&self) -> usize {
        self.sandbox.cells.used()
    }
}

fn stopped() -> Failure {
    Failure::Script("the engine lost the function's context".into())
}

/// The idle contexts of every instance.
fn pool() -> &'static WarmPool<WarmContext> {
    static POOL: OnceLock<WarmPool<WarmContext>> = OnceLock::new();
    POOL.get_or_init(WarmPool::default)
}

/// Makes `id` an instance whose contexts are kept.
pub fn register(id: u64) {
    pool().register(id);
}

/// Drops the instance's contexts; a run of it still going drops its own when it ends.
pub fn retire(id: u64) {
    pool().retire(id);
}

/// Runs `source` in instance `id`'s warm context (see the module doc).
pub(super) fn run(
    id: u64,
    source: &Source,
    input: &Json,
    globals: &[(&str, Json)],
    limits: &Limits,
    host: &dyn Host,
) -> Ran {
    let mut context = match pool().take(id) {
        Taken::Warm(context) => context,
        Taken::Build => match WarmContext::build(source) {
            Ok(context) => context,
            Err(failure) => return Ran::failed(failure),
        },
        Taken::NotKept => return run_fresh(source, input, globals, limits, host),
    };
    let ran = context.run(source, input, globals, limits, host);
    if ran.found == Found::WholeScript {
        pool().runs_whole(id);
    }
    if context.reusable(&ran) {
        let bytes = context.bytes();
        pool().give_back(id, context, bytes, MEMORY_BYTES.load(Relaxed));
    }
    ran
}

/// How many contexts are idle and the bytes they hold (for tests and reports).
#[cfg(test)]
pub(super) fn idle() -> (usize, usize) {
    pool().idle()
}
