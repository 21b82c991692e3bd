//! Sandboxed JavaScript runner on the embedded QuickJS engine (`rquickjs`), independent of
//! the server: the caller supplies the code, the input, the limits and a [`Host`].
//!
//! # Isolation
//! [`run`] and [`run_with_globals`] use a fresh QuickJS context, dropped at the end, in an idle
//! scratch runtime kept for the next such run while runs leave it clean (a run that hits a
//! limit or leaves jobs queued drops it). [`run_kept`] runs in the warm context of a
//! deployed process version ([`warm`]): a runtime and context of its own, kept between the
//! version's runs, so module-level state persists from one run to the next and nothing is
//! shared with any other version, process or domain. Either way the `svc` and `console` objects,
//! `input` and the other globals are new for each run, and the host functions reach only the
//! run in progress ([`lent`]). The JS runs on the thread that called, which serves its host
//! calls itself. A context holds only the ECMAScript
//! built-ins (`Object`, `Array`, `JSON`, `Math`, `Date`, `RegExp`, `Map`/`Set`, typed arrays,
//! `Promise`, `Proxy`, `WeakRef`, `eval`, …) plus the globals below: no filesystem, network,
//! environment, timers or process. `import` (static or dynamic) resolves only to the files of
//! the bundle ([`Source::modules`]); anything else fails with a script error.
//!
//! # Limits
//! - Time: an interrupt handler stops the code once `limits.timeout` has passed since the
//!   call began ([`Failure::Timeout`]); it cannot be caught by `try`. QuickJS polls it every
//!   few thousand instructions, so a single long built-in call (one huge `sort`) finishes
//!   first. The job queue (promises) is driven under the same deadline, and host calls
//!   past it throw instead of reaching the host.
//! - Memory: `limits.memory_bytes` caps what the runtime's allocator hands out (`0`: no
//!   cap). An allocation past it fails, QuickJS throws `InternalError: out of memory` (or
//!   `null` when even that error cannot be allocated), and a run that then fails is a
//!   [`Failure::Memory`] (the allocator flags the refusal, so a script's own `throw null` stays
//!   a script error). Code may catch the error and go on. The JS stack is capped at 512 KiB
//!   (deep recursion is a script error, `RangeError: Maximum call stack size exceeded`).
//! - [`check`] compiles the entry and every bundle file (imports must resolve to the bundle)
//!   without running anything.
//!
//! # Globals
//! - `input`: the JSON input as a JS value.
//! - `svc.tag.read(topic)` → the tag's value or `null`; `svc.tag.write(topic, value)` →
//!   `undefined`.
//! - `svc.records.create(table, obj)` → the created record; `svc.records.get(id)` → the
//!   record or `null`; `svc.records.list(table, query?)` → what the host returns (an array of
//!   records); `query` is an object of list parameters such as
//!   `{"filter[status][eq]": "on", "limit": 5}`.
//! - `svc.log(...args)`, `console.log/info/debug/warn/error(...args)`: one log line each;
//!   strings as they are, errors as `Name: message`, anything else `JSON.stringify`'d, joined
//!   by spaces; `warn`/`error` lines start with `warn: ` / `error: `. At most 1000 lines and
//!   64 KiB in all; past that one last line `… logs truncated` is added and the rest dropped.
//!
//! Host calls run synchronously on the thread that called [`run`], which runs the JS too; a
//! host `Err(message)` is thrown into JS as an `Error` with that message, which the code may
//! catch. Values cross as JSON.
//!
//! # Result
//! In a warm context the code is evaluated by the first run only; later runs call the `main`
//! (or default export) that evaluation found, so top-level code runs once per context. A
//! classic script without `main` is the run itself: it runs whole, in a fresh context, each time.
//! - Classic script ([`Source::module`] false): if the script defines a global function
//!   `main` (a `function` declaration or a top-level `const`/`let`), the output is
//!   `main(input)`; otherwise it is the script's completion value (its last expression).
//!   Scripts run in sloppy mode unless they say `"use strict"`; the file is named `main.js`.
//! - ES module: the entry is the module `main.js` at the bundle root (a bundle file of that
//!   name is shadowed); relative imports resolve against the importer's folder and may omit
//!   `.js`/`.mjs`. The output is `default(input)` when the default export is a function,
//!   else the default export itself (`null` without one). Top-level `await` is allowed.
//! - A Promise result (`async main`) is awaited by driving the job queue; a rejection is a
//!   script failure, a promise that can never settle too. Jobs still queued after the result
//!   settles run to the end (within the time limit).
//! - The output is converted with `JSON.stringify` semantics (`undefined` → `null`); a value
//!   JSON cannot hold (a BigInt, a cycle, a function) is a script failure.

use std::cell::Cell;
use std::collections::{BTreeMap, BTreeSet};
use std::ffi::CString;
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rquickjs::allocator::{Allocator, RustAllocator};
use rquickjs::context::intrinsic;
use rquickjs::function::Rest;
use rquickjs::loader::{ImportAttributes, Loader, Resolver};
use rquickjs::{qjs, Coerced, Context, Ctx, Exception, Function, Module, Object, Runtime, Value};
use serde_json::Value as Json;

/// What a run may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub timeout: Duration,
    /// Heap cap of the run's QuickJS runtime; `0` means no cap.
    pub memory_bytes: usize,
}

/// What a function may do outside its sandbox; every method runs synchronously on the calling thread.
pub trait Host {
    fn tag_read(&self, topic: &str) -> Result<Option<Json>, String>;
    fn tag_write(&self, topic: &str, value: &Json) -> Result<(), String>;
    fn record_create(&self, table: &str, record: &Json) -> Result<Json, String>;
    fn record_get(&self, id: &str) -> Result<Option<Json>, String>;
    /// `query` is a JSON object of list parameters (e.g. {"filter[status][eq]":"on","limit":5}).
    fn record_list(&self, table: &str, query: &Json) -> Result<Json, String>;
}

/// The code of a function.
#[derive(Debug, Clone, Copy)]
pub struct Source<'a> {
    pub code: &'a str,
    /// other files of a bundle, by module name (e.g. "lib.js")
    pub modules: &'a BTreeMap<String, String>,
    /// true: ES module (entry uses `export default function(input){…}`), false: classic script
    pub module: bool,
}

static NO_MODULES: BTreeMap<String, String> = BTreeMap::new();

impl<'a> Source<'a> {
    /// A classic script without bundled files.
    pub fn script(code: &'a str) -> Source<'a> {
        Source {
            code,
            modules: &NO_MODULES,
            module: false,
        }
    }

    /// An ES module entry with the other files of its bundle.
    #[cfg(test)]
    pub fn module(code: &'a str, modules: &'a BTreeMap<String, String>) -> Source<'a> {
        Source {
            code,
            modules,
            module: true,
        }
    }
}

/// A run that finished.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    pub output: Json,
    pub logs: Vec<String>,
}

/// Why a run did not finish.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    Timeout,
    Memory,
    /// a thrown error or a syntax error, with message (and JS stack line if cheap)
    Script(String),
}

/// A run that failed, with the lines it logged before.
#[derive(Debug, Clone, PartialEq)]
pub struct RunError {
    pub failure: Failure,
    pub logs: Vec<String>,
}

impl RunError {
    /// The message naming the limit that was hit, e.g. "the function ran longer than its
    /// 100 ms time limit" (`Display` says the same without the numbers, which a `RunError`
    /// does not carry).
    pub fn explain(&self, limits: &Limits) -> String {
        match &self.failure {
            Failure::Timeout => format!(
                "the function ran longer than its {} ms time limit",
                limits.timeout.as_millis()
            ),
            Failure::Memory => format!(
                "the function exceeded its {} memory limit",
                megabytes(limits.memory_bytes)
            ),
            Failure::Script(_) => self.to_string(),
        }
    }
}

impl fmt::Display for RunError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.failure {
            Failure::Timeout => f.write_str("the function ran longer than its time limit"),
            Failure::Memory => f.write_str("the function exceeded its memory limit"),
            Failure::Script(message) => write!(f, "the function failed: {message}"),
        }
    }
}

impl std::error::Error for RunError {}

fn megabytes(bytes: usize) -> String {
    const MB: usize = 1 << 20;
    if bytes.is_multiple_of(MB) {
        format!("{} MB", bytes / MB)
    } else {
        format!("{:.1} MB", bytes as f64 / MB as f64)
    }
}

/// Largest JS stack (QuickJS's own check; deeper recursion throws a `RangeError`).
const JS_STACK_BYTES: usize = 512 << 10;
/// Heap cap while compiling for [`check`].
const CHECK_MEMORY_BYTES: usize = 64 << 20;
/// Name of the entry file (scripts and modules).
const ENTRY: &str = "main.js";
const MAX_LOG_LINES: usize = 1000;
const MAX_LOG_BYTES: usize = 64 << 10;
const LOGS_TRUNCATED: &str = "… logs truncated";

/// The built-ins of a sandbox: ECMAScript only (no `performance`, no `DOMException`).
type Builtins = (
    intrinsic::Date,
    intrinsic::Eval,
    intrinsic::RegExpCompiler,
    intrinsic::RegExp,
    intrinsic::Json,
    intrinsic::Proxy,
    intrinsic::MapSet,
    intrinsic::TypedArrays,
    intrinsic::Promise,
    intrinsic::WeakRef,
);

/// Runs `source` on `input` under `limits`; host calls go to `host` on this thread.
pub fn run(
    source: &Source,
    input: &Json,
    limits: &Limits,
    host: &dyn Host,
) -> Result<Outcome, RunError> {
    run_with_globals(source, input, &[], limits, host)
}

/// [`run`] with more read-only globals (frozen objects), such as a process's `config` and
/// resolved `inputs`; in a fresh context that is dropped at the end.
pub fn run_with_globals(
    source: &Source,
    input: &Json,
    globals: &[(&str, Json)],
    limits: &Limits,
    host: &dyn Host,
) -> Result<Outcome, RunError> {
    finish(guarded(|| run_fresh(source, input, globals, limits, host)))
}

/// [`run_with_globals`] in the warm context of instance `id` (see [`register`]): the context
/// an earlier run of the instance left, with its module-level state, or a new one.
pub fn run_kept(
    id: u64,
    source: &Source,
    input: &Json,
    globals: &[(&str, Json)],
    limits: &Limits,
    host: &dyn Host,
) -> Result<Outcome, RunError> {
    finish(guarded(|| {
        warm::run(id, source, input, globals, limits, host)
    }))
}

/// `run`, with a panic in the engine turned into the run's failure (the runtime it held is
/// dropped on the way), so a caller never unwinds through a run.
fn guarded(run: impl FnOnce() -> Ran) -> Ran {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(run))
        .unwrap_or_else(|_| Ran::failed(Failure::Script("the engine failed".into())))
}

fn finish(ran: Ran) -> Result<Outcome, RunError> {
    match ran.result {
        Ok(output) => Ok(Outcome {
            output,
            logs: ran.logs,
        }),
        Err(failure) => Err(RunError {
            failure,
            logs: ran.logs,
        }),
    }
}

/// When a run that starts now must have ended.
fn deadline(limits: &Limits) -> Instant {
    let now = Instant::now();
    now.checked_add(limits.timeout)
        .unwrap_or(now + Duration::from_secs(365 * 24 * 3600))
}

/// One run in a new context of an idle scratch runtime, dropped at the end.
fn run_fresh(
    source: &Source,
    input: &Json,
    globals: &[(&str, Json)],
    limits: &Limits,
    host: &dyn Host,
) -> Ran {
    with_scratch(|sandbox| {
        sandbox.prepare(deadline(limits), limits.memory_bytes);
        let bundle = Bundle::new(source.modules);
        sandbox.rt.set_loader(bundle.clone(), bundle);
        let context = match sandbox.context() {
            Ok(context) => context,
            Err(failure) => return Ran::failed(failure),
        };
        let slot = Arc::new(RunSlot::default());
        let lend = slot.lend(host);
        let guard = Guard::new(&sandbox.cells);
        let result = context.with(|ctx| {
            let kit = Kit::new(&ctx, &slot, &sandbox.cells).map_err(|e| guard.failure(&ctx, e))?;
            run_code(&ctx, &guard, &kit, source, None, input, globals).0
        });
        Ran {
            result,
            logs: lend.finish(),
            stack_hit: guard.stack_hit(),
            found: Found::Nothing,
        }
    })
}

/// Compiles without running (deploy-time check); Err(message) names the syntax error.
pub fn check(source: &Source) -> Result<(), String> {
    let rt = Runtime::new().map_err(|e| format!("could not start the engine: {e}"))?;
    rt.set_max_stack_size(JS_STACK_BYTES);
    let bundle = Bundle::new(source.modules);
    rt.set_loader(bundle.clone(), bundle.clone());
    let context =
        Context::custom::<Builtins>(&rt).map_err(|e| format!("could not start the engine: {e}"))?;
    rt.set_memory_limit(CHECK_MEMORY_BYTES);
    context.with(|ctx| {
        // Compiling a module also compiles (through the loader) the files it imports.
        let entry = if source.module {
            Module::declare(ctx.clone(), ENTRY, source.code).map(drop)
        } else {
            compile_script(&ctx, source.code)
        };
        entry.map_err(|e| compile_error(&ctx, e))?;
        for (name, code) in bundle.files.iter() {
            if !lock(&bundle.loaded).insert(name.clone()) {
                continue;
            }
            Module::declare(ctx.clone(), name.as_str(), code.as_str())
                .map_err(|e| format!("{name}: {}", compile_error(&ctx, e)))?;
        }
        Ok(())
    })
}

/// Compiles a classic script without running it; rquickjs has no safe call for that.
fn compile_script(ctx: &Ctx<'_>, code: &str) -> rquickjs::Result<()> {
    let text = CString::new(code)?;
    let flags = (qjs::JS_EVAL_TYPE_GLOBAL | qjs::JS_EVAL_FLAG_COMPILE_ONLY) as i32;
    // SAFETY: `ctx` is a live context of a runtime locked by `Context::with`; `text` is
    // NUL-terminated right after `code.len()` bytes, as JS_Eval requires; the returned value
    // (compiled bytecode or the exception marker) is owned by us and handed to `Value`, whose
    // drop frees it.
    let compiled = unsafe {
        let raw = qjs::JS_Eval(
            ctx.as_raw().as_ptr(),
            text.as_ptr(),
            code.len() as _,
            c"main.js".as_ptr(),
            flags,
        );
        Value::from_raw(ctx.clone(), raw)
    };
    if compiled.is_exception() || ctx.has_exception() {
        return Err(rquickjs::Error::Exception);
    }
    Ok(())
}

fn compile_error(ctx: &Ctx<'_>, error: rquickjs::Error) -> String {
    match error {
        rquickjs::Error::Exception => describe(ctx, &ctx.catch()),
        rquickjs::Error::InvalidString(_) => "the code contains a NUL character".into(),
        other => other.to_string(),
    }
}

mod describe;
mod execute;
mod globals;
mod lent;
mod runtime;
mod sandbox;
pub mod warm;

use describe::{clear_exception, describe, describe_value, is_out_of_memory};
use execute::{run_code, Found, Guard, Ran};
use globals::Kit;
pub(crate) use globals::LogBuf;
use lent::RunSlot;
pub(crate) use lent::{serve, HostCall};
use runtime::{engine_failed, with_scratch};
use sandbox::{lock, Bundle, CappedAllocator};
pub use warm::{register, retire};

#[cfg(test)]
#[path = "../engine_tests.rs"]
mod tests;
#[cfg(test)]
#[path = "../engine_warm_tests.rs"]
mod warm_tests;
