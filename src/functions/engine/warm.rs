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
use super::sandbox::lock;
use super::*;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Mutex, OnceLock};

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

struct Idle {
    context: WarmContext,
    bytes: usize,
    /// When it was last given back: the smallest goes first.
    tick: u64,
}

#[derive(Default)]
struct Instance {
    idle: Vec<Idle>,
    /// A classic script without `main`: it runs whole each time, in a fresh context.
    whole_script: bool,
}

#[derive(Default)]
struct Cache {
    instances: HashMap<u64, Instance>,
    bytes: usize,
    tick: u64,
}

fn cache() -> &'static Mutex<Cache> {
    static CACHE: OnceLock<Mutex<Cache>> = OnceLock::new();
    CACHE.get_or_init(Mutex::default)
}

/// Makes `id` an instance whose contexts are kept.
pub fn register(id: u64) {
    lock(cache()).instances.entry(id).or_default();
}

/// Drops the instance's contexts; a run of it still going drops its own when it ends.
pub fn retire(id: u64) {
    let gone = {
        let mut cache = lock(cache());
        let gone = cache.instances.remove(&id);
        if let Some(instance) = &gone {
            cache.bytes -= instance.idle.iter().map(|i| i.bytes).sum::<usize>();
        }
        gone
    };
    drop(gone);
}

/// What a run of an instance starts from.
enum Start {
    Warm(WarmContext),
    Build,
    /// Not kept (unregistered, retired, or a whole script): a fresh context.
    Fresh,
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
    let start = {
        let mut cache = lock(cache());
        match cache.instances.get_mut(&id) {
            Some(instance) if !instance.whole_script => match instance.idle.pop() {
                Some(idle) => {
                    cache.bytes -= idle.bytes;
                    Start::Warm(idle.context)
                }
                None => Start::Build,
            },
            _ => Start::Fresh,
        }
    };
    let mut context = match start {
        Start::Warm(context) => context,
        Start::Build => match WarmContext::build(source) {
            Ok(context) => context,
            Err(failure) => return Ran::failed(failure),
        },
        Start::Fresh => return run_fresh(source, input, globals, limits, host),
    };
    let ran = context.run(source, input, globals, limits, host);
    if ran.found == Found::WholeScript {
        if let Some(instance) = lock(cache()).instances.get_mut(&id) {
            instance.whole_script = true;
        }
    }
    if context.reusable(&ran) {
        give_back(id, context);
    }
    ran
}

/// Keeps `context` for the instance's next run, then drops the least recently used idle
/// contexts while they hold more than the cap.
fn give_back(id: u64, context: WarmContext) {
    let bytes = context.bytes();
    let cap = MEMORY_BYTES.load(Relaxed);
    let mut evicted = Vec::new();
    {
        let mut cache = lock(cache());
        cache.tick += 1;
        let tick = cache.tick;
        let Some(instance) = cache.instances.get_mut(&id) else {
            return;
        };
        instance.idle.push(Idle {
            context,
            bytes,
            tick,
        });
        cache.bytes += bytes;
        while cache.bytes > cap {
            let Some(oldest) = cache.least_recently_used() else {
                break;
            };
            if let Some(instance) = cache.instances.get_mut(&oldest.0) {
                let idle = instance.idle.remove(oldest.1);
                cache.bytes -= idle.bytes;
                evicted.push(idle);
            }
        }
    }
    // Runtimes are freed outside the lock.
    drop(evicted);
}

impl Cache {
    /// (instance, index) of the idle context given back longest ago.
    fn least_recently_used(&self) -> Option<(u64, usize)> {
        self.instances
            .iter()
            .flat_map(|(id, instance)| {
                instance
                    .idle
                    .iter()
                    .enumerate()
                    .map(move |(i, idle)| (idle.tick, *id, i))
            })
            .min()
            .map(|(_, id, i)| (id, i))
    }
}

/// How many contexts are idle and the bytes they hold (for tests and reports).
#[cfg(test)]
pub(super) fn idle() -> (usize, usize) {
    let cache = lock(cache());
    let count = cache.instances.values().map(|i| i.idle.len()).sum();
    (count, cache.bytes)
}
