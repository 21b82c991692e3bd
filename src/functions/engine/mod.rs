//! Sandboxed JavaScript runner on the embedded QuickJS engine (`rquickjs`), independent of
//! the server: the caller supplies the code, the input, the limits and a [`Host`].
//!
//! # Isolation
//! Every [`run`] gets a fresh QuickJS context, dropped at the end, so nothing survives between
//! runs (or between domains). The runtime under it is kept by the engine thread for its next
//! run while runs leave it clean (a run that hits a limit or leaves jobs queued drops it); the
//! host functions of a run belong to its own realm ([`Warm`]). The context holds only the ECMAScript
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
//! Host calls run synchronously on the thread that called [`run`] (the JS code itself runs
//! on an engine thread, kept between runs, that waits for each answer); a host `Err(message)` is thrown into JS
//! as an `Error` with that message, which the code may catch. Values cross as JSON.
//!
//! # Result
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

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, BTreeSet};
use std::ffi::CString;
use std::fmt;
use std::rc::Rc;
use std::sync::mpsc;
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

/// A run's code, input and globals, owned by the engine thread that runs it.
struct OwnedRun {
    code: String,
    modules: BTreeMap<String, String>,
    module: bool,
    input: Json,
    globals: Vec<(String, Json)>,
}

/// Largest JS stack (QuickJS's own check; deeper recursion throws a `RangeError`).
const JS_STACK_BYTES: usize = 512 << 10;
/// Stack of an engine thread: the JS stack plus room for the engine's Rust frames.
const WORKER_STACK_BYTES: usize = 4 << 20;
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
/// resolved `inputs`.
pub fn run_with_globals(
    source: &Source,
    input: &Json,
    globals: &[(&str, Json)],
    limits: &Limits,
    host: &dyn Host,
) -> Result<Outcome, RunError> {
    let limits = *limits;
    let now = Instant::now();
    let deadline = now
        .checked_add(limits.timeout)
        .unwrap_or(now + Duration::from_secs(365 * 24 * 3600));
    let (call_tx, call_rx) = mpsc::channel::<ToHost>();
    let done = call_tx.clone();
    let (reply_tx, reply_rx) = mpsc::channel::<HostReply>();
    let bridge = Bridge {
        calls: call_tx,
        replies: reply_rx,
    };
    // The JS runtime lives on an engine thread (kept between runs, see [`pool`]) so that its
    // closures own only 'static channel ends while the (borrowed, maybe !Send) host is served
    // here. The thread gets its own copies of the code, the input and the globals.
    let owned = OwnedRun {
        code: source.code.to_string(),
        modules: source.modules.clone(),
        module: source.module,
        input: input.clone(),
        globals: globals
            .iter()
            .map(|(name, value)| (name.to_string(), value.clone()))
            .collect(),
    };
    let job = Box::new(move || {
        let source = Source {
            code: &owned.code,
            modules: &owned.modules,
            module: owned.module,
        };
        let globals: Vec<(&str, Json)> = owned
            .globals
            .iter()
            .map(|(name, value)| (name.as_str(), value.clone()))
            .collect();
        let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            execute(&source, &owned.input, &globals, limits, deadline, bridge)
        }));
        let (result, logs) = ran.unwrap_or_else(|_| {
            let failure = Failure::Script("the engine failed".into());
            (Err(failure), Vec::new())
        });
        let _ = done.send(ToHost::Done(result, logs));
    });
    if let Err(e) = pool::spawn(WORKER_STACK_BYTES, job) {
        let failure = Failure::Script(format!("could not start the engine: {e}"));
        return Err(RunError {
            failure,
            logs: Vec::new(),
        });
    }
    // Host calls until the run says it is done (the bridge's closures may outlive the run in
    // a kept runtime until its next collection, so the end is a message, not a hang-up).
    let (result, logs) = loop {
        match call_rx.recv() {
            Ok(ToHost::Call(call)) => {
                if reply_tx.send(serve(host, call)).is_err() {
                    break (Err(stopped()), Vec::new());
                }
            }
            Ok(ToHost::Done(result, logs)) => break (result, logs),
            Err(_) => break (Err(stopped()), Vec::new()),
        }
    };
    match result {
        Ok(output) => Ok(Outcome { output, logs }),
        Err(failure) => Err(RunError { failure, logs }),
    }
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
            if bundle.loaded.borrow().contains(name) {
                continue;
            }
            bundle.loaded.borrow_mut().insert(name.clone());
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

// ---- the run, on an engine thread ---------------------------------------------------------

fn execute(
    source: &Source,
    input: &Json,
    globals: &[(&str, Json)],
    limits: Limits,
    deadline: Instant,
    bridge: Bridge,
) -> (Result<Json, Failure>, Vec<String>) {
    let logs = Rc::new(RefCell::new(LogBuf::default()));
    let result = evaluate(source, input, globals, limits, deadline, bridge, &logs);
    let lines = std::mem::take(&mut logs.borrow_mut().lines);
    (result, lines)
}

fn evaluate(
    source: &Source,
    input: &Json,
    globals: &[(&str, Json)],
    limits: Limits,
    deadline: Instant,
    bridge: Bridge,
    logs: &Rc<RefCell<LogBuf>>,
) -> Result<Json, Failure> {
    let mut warm = match WARM.with(|w| w.borrow_mut().take()) {
        Some(warm) => warm,
        None => Warm::new().map_err(engine_failed)?,
    };
    warm.prepare(deadline, limits.memory_bytes);
    let guard = Guard {
        interrupted: warm.interrupted.clone(),
        refused: warm.refused.clone(),
        deadline,
    };
    let bundle = Bundle::new(source.modules);
    warm.rt.set_loader(bundle.clone(), bundle);
    let result = in_fresh_context(&warm.rt, &guard, source, input, globals, bridge, logs);
    warm.keep_if_clean(&result);
    result
}

fn engine_failed(e: rquickjs::Error) -> Failure {
    Failure::Script(format!("could not start the engine: {e}"))
}

/// One run in a new context of `rt`, dropped at the end.
fn in_fresh_context(
    rt: &Runtime,
    guard: &Guard,
    source: &Source,
    input: &Json,
    globals: &[(&str, Json)],
    bridge: Bridge,
    logs: &Rc<RefCell<LogBuf>>,
) -> Result<Json, Failure> {
    let context = Context::custom::<Builtins>(rt).map_err(|e| match guard.refused.get() {
        true => Failure::Memory,
        false => engine_failed(e),
    })?;
    let bridge = Rc::new(bridge);
    context.with(|ctx| {
        let fail = |e: rquickjs::Error| guard.failure(&ctx, e);
        install_globals(&ctx, guard, &bridge, logs).map_err(fail)?;
        let input = to_js(&ctx, input).map_err(fail)?;
        ctx.globals().set("input", input.clone()).map_err(fail)?;
        let freeze: rquickjs::Function = ctx
            .globals()
            .get::<_, rquickjs::Object>("Object")
            .and_then(|object| object.get("freeze"))
            .map_err(fail)?;
        for (name, value) in globals {
            let value = to_js(&ctx, value).map_err(fail)?;
            let frozen: Value = freeze.call((value,)).map_err(fail)?;
            ctx.globals().set(*name, frozen).map_err(fail)?;
        }
        let result = if source.module {
            run_module(&ctx, source.code, input, guard)?
        } else {
            run_script(&ctx, source.code, input).map_err(fail)?
        };
        let result = guard.settle(&ctx, result)?;
        let output = guard.output(&ctx, result)?;
        guard.drain(&ctx)?;
        Ok(output)
    })
}

fn run_script<'js>(ctx: &Ctx<'js>, code: &str, input: Value<'js>) -> rquickjs::Result<Value<'js>> {
    let mut options = rquickjs::context::EvalOptions::default();
    options.strict = false;
    options.filename = Some(ENTRY.into());
    let completion: Value = ctx.eval_with_options(code, options)?;
    // Sees `function main` and top-level `const main = …` alike.
    let main: Value = ctx.eval("typeof main === 'function' ? main : undefined")?;
    match main.into_function() {
        Some(main) => main.call((input,)),
        None => Ok(completion),
    }
}

fn run_module<'js>(
    ctx: &Ctx<'js>,
    code: &str,
    input: Value<'js>,
    guard: &Guard,
) -> Result<Value<'js>, Failure> {
    let fail = |e: rquickjs::Error| guard.failure(ctx, e);
    let (module, evaluated) = Module::declare(ctx.clone(), ENTRY, code)
        .and_then(Module::eval)
        .map_err(fail)?;
    guard.settle(ctx, evaluated.into_value())?;
    let export: Value = module.get("default").map_err(fail)?;
    match export.as_function() {
        Some(function) => function.call((input,)).map_err(fail),
        None => Ok(export),
    }
}

/// Deadline bookkeeping and error classification of one run.
struct Guard {
    /// Set by the interrupt handler when it stopped the code.
    interrupted: Rc<Cell<bool>>,
    /// Set by the allocator when it refused memory past the limit.
    refused: Rc<Cell<bool>>,
    deadline: Instant,
}

impl Guard {
    fn timed_out(&self) -> bool {
        self.interrupted.get() || Instant::now() >= self.deadline
    }

    /// Turns an engine error (with the pending JS exception) into a failure.
    fn failure(&self, ctx: &Ctx<'_>, error: rquickjs::Error) -> Failure {
        let failure = match error {
            rquickjs::Error::Exception => {
                let thrown = ctx.catch();
                if self.interrupted.get() {
                    return Failure::Timeout;
                }
                if is_out_of_memory(&thrown) {
                    clear_exception(ctx);
                    return Failure::Memory;
                }
                Failure::Script(describe(ctx, &thrown))
            }
            rquickjs::Error::Allocation => Failure::Memory,
            rquickjs::Error::InvalidString(_) => {
                Failure::Script("the code contains a NUL character".into())
            }
            other => Failure::Script(other.to_string()),
        };
        if self.interrupted.get() {
            Failure::Timeout
        } else if self.refused.get() {
            Failure::Memory
        } else {
            failure
        }
    }

    /// Awaits `value` if it is a promise, driving the job queue until the deadline.
    fn settle<'js>(&self, ctx: &Ctx<'js>, value: Value<'js>) -> Result<Value<'js>, Failure> {
        let Some(promise) = value.as_promise().cloned() else {
            return Ok(value);
        };
        loop {
            if let Some(result) = promise.result::<Value>() {
                return result.map_err(|e| self.failure(ctx, e));
            }
            if self.timed_out() {
                return Err(Failure::Timeout);
            }
            if !ctx.execute_pending_job() {
                return Err(Failure::Script(
                    "the function's promise never settled (it awaits something that never happens)"
                        .into(),
                ));
            }
        }
    }

    /// Runs the jobs still queued once the result is known. Their errors go unseen (as
    /// unhandled rejections), except running out of time or memory.
    fn drain(&self, ctx: &Ctx<'_>) -> Result<(), Failure> {
        let refused_before = self.refused.get();
        loop {
            if self.timed_out() {
                return Err(Failure::Timeout);
            }
            if !refused_before && self.refused.get() {
                return Err(Failure::Memory);
            }
            if !ctx.execute_pending_job() {
                return Ok(());
            }
        }
    }

    /// The result as JSON (`JSON.stringify` semantics, `undefined` → `null`).
    fn output<'js>(&self, ctx: &Ctx<'js>, value: Value<'js>) -> Result<Json, Failure> {
        let refuse = |what: String| {
            Failure::Script(format!("the result cannot be converted to JSON: {what}"))
        };
        if value.is_undefined() {
            return Ok(Json::Null);
        }
        if value.is_function() || value.is_symbol() {
            return Err(refuse(format!("it is a {}", value.type_name())));
        }
        let text = match ctx.json_stringify(value) {
            Ok(Some(text)) => text.to_string().map_err(|e| self.failure(ctx, e))?,
            Ok(None) => return Ok(Json::Null),
            Err(e) => {
                return Err(match self.failure(ctx, e) {
                    Failure::Script(message) => refuse(message),
                    other => other,
                })
            }
        };
        serde_json::from_str(&text).map_err(|e| refuse(e.to_string()))
    }
}

fn is_out_of_memory(thrown: &Value<'_>) -> bool {
    let Some(error) = thrown.as_object().filter(|_| thrown.is_error()) else {
        return false;
    };
    let text = |key: &str| {
        error
            .get::<_, Option<Coerced<String>>>(key)
            .ok()
            .flatten()
            .map(|s| s.0)
    };
    text("name").as_deref() == Some("InternalError")
        && text("message").as_deref() == Some("out of memory")
}

/// A thrown value as one line: `Name: message (at frame)` for errors.
fn describe<'js>(ctx: &Ctx<'js>, thrown: &Value<'js>) -> String {
    let text = describe_value(ctx, thrown, true);
    clear_exception(ctx);
    text
}

/// Drops an exception left by user code that ran while describing a value (a getter that
/// threw): it is not the one being reported.
fn clear_exception(ctx: &Ctx<'_>) {
    if ctx.has_exception() {
        ctx.catch();
    }
}

fn describe_value<'js>(ctx: &Ctx<'js>, thrown: &Value<'js>, with_frame: bool) -> String {
    if let Some(text) = thrown.as_string().and_then(|s| s.to_string().ok()) {
        return text;
    }
    let error = thrown
        .as_object()
        .filter(|_| thrown.is_error())
        .and_then(|o| Exception::from_object(o.clone()));
    let Some(error) = error else {
        return show_value(ctx, thrown).unwrap_or_else(|| "a value that cannot be shown".into());
    };
    let name = error
        .get::<_, Option<Coerced<String>>>("name")
        .ok()
        .flatten()
        .map(|s| s.0)
        .unwrap_or_else(|| "Error".into());
    let message = error.message().unwrap_or_default();
    let mut text = if message.is_empty() {
        name
    } else {
        format!("{name}: {message}")
    };
    if !with_frame {
        return text;
    }
    let frame = error.stack().and_then(|stack| {
        stack
            .lines()
            .map(str::trim)
            .find(|line| line.starts_with("at "))
            .map(str::to_string)
    });
    if let Some(frame) = frame {
        text.push_str(&format!(" ({frame})"));
    }
    text
}

/// `JSON.stringify(value)`, else `String(value)`; `None` when both fail.
fn show_value<'js>(ctx: &Ctx<'js>, value: &Value<'js>) -> Option<String> {
    if value.is_undefined() {
        return Some("undefined".into());
    }
    if let Ok(Some(text)) = ctx.json_stringify(value.clone()) {
        if let Ok(text) = text.to_string() {
            return Some(text);
        }
    }
    clear_exception(ctx);
    let text = value.get::<Coerced<String>>().ok().map(|text| text.0);
    clear_exception(ctx);
    text
}

mod bridge;
mod globals;
mod pool;
mod sandbox;
mod warm;

pub(crate) use bridge::{serve, HostCall, HostReply};
use bridge::{stopped, Bridge, ToHost};
pub(crate) use globals::LogBuf;
use globals::{install_globals, to_js};
use sandbox::{Bundle, CappedAllocator};
use warm::{Warm, WARM};

#[cfg(test)]
#[path = "../engine_tests.rs"]
mod tests;
