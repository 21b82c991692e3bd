//! One run of code in a context: the run's globals handed out, the code's entry evaluated (or,
//! in a warm context, the entry an earlier run found called again), its promise settled, its
//! result turned into JSON, its leftover jobs drained; and the [`Guard`] that tells a run that
//! hit a limit from one that failed on its own.

use super::describe::{clear_exception, describe, is_out_of_memory, is_stack_overflow};
use super::globals::Kit;
use super::runtime::Cells;
use super::*;
use std::sync::Arc;

/// What a run calls: `main` (or the module's default export), or a module's default export
/// that is not a function, which is the output of every run.
#[derive(Clone)]
pub(super) enum Entry<'js> {
    Call(Function<'js>),
    Value(Value<'js>),
}

/// A run's end as the engine sees it.
pub(super) struct Ran {
    pub(super) result: Result<Json, Failure>,
    pub(super) logs: Vec<String>,
    /// The code overflowed the JS stack (an uncaught `RangeError`, a script failure for the
    /// caller, but a limit for whoever keeps the context).
    pub(super) stack_hit: bool,
    /// What the code's evaluation found: [`Found::Entry`] keeps the context callable.
    pub(super) found: Found,
}

/// What evaluating the code left for later runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Found {
    /// Nothing evaluated yet, or the evaluation failed.
    Nothing,
    /// `main`, or a module's default export: later runs call it.
    Entry,
    /// A classic script without `main`: the script itself is the run, evaluated anew each time.
    WholeScript,
}

impl Ran {
    pub(super) fn failed(failure: Failure) -> Ran {
        Ran {
            result: Err(failure),
            logs: Vec::new(),
            stack_hit: false,
            found: Found::Nothing,
        }
    }

    /// The run hit its time, memory or stack limit: its context may be in any state.
    pub(super) fn hit_limit(&self) -> bool {
        self.stack_hit || matches!(self.result, Err(Failure::Timeout | Failure::Memory))
    }
}

/// Runs the code in `ctx`: calls `entry` when an earlier run found it, else evaluates
/// `source` (whose entry is returned for later runs).
pub(super) fn run_code<'js>(
    ctx: &Ctx<'js>,
    guard: &Guard,
    kit: &Kit<'js>,
    source: &Source,
    entry: Option<Entry<'js>>,
    input: &Json,
    globals: &[(&str, Json)],
) -> (Result<Json, Failure>, Option<Entry<'js>>, Found) {
    let fail = |e: rquickjs::Error| guard.failure(ctx, e);
    let input = match kit.hand_out(ctx, input, globals) {
        Ok(input) => input,
        Err(e) => return (Err(fail(e)), entry, Found::Nothing),
    };
    let (called, entry, found) = match entry {
        Some(entry) => {
            let called = call(ctx, guard, &entry, input);
            (called, Some(entry), Found::Entry)
        }
        None => {
            let evaluated = if source.module {
                run_module(ctx, source.code, input, guard)
            } else {
                run_script(ctx, source.code, input).map_err(|(e, entry)| (fail(e), entry))
            };
            match evaluated {
                Ok((value, Some(entry))) => (Ok(value), Some(entry), Found::Entry),
                Ok((value, None)) => (Ok(value), None, Found::WholeScript),
                Err((failure, Some(entry))) => (Err(failure), Some(entry), Found::Entry),
                Err((failure, None)) => (Err(failure), None, Found::Nothing),
            }
        }
    };
    let result = called
        .and_then(|value| guard.settle(ctx, value))
        .and_then(|value| guard.output(ctx, value))
        .and_then(|output| guard.drain(ctx).map(|()| output));
    (result, entry, found)
}

type Evaluated<'js, E> = Result<(Value<'js>, Option<Entry<'js>>), (E, Option<Entry<'js>>)>;

fn call<'js>(
    ctx: &Ctx<'js>,
    guard: &Guard,
    entry: &Entry<'js>,
    input: Value<'js>,
) -> Result<Value<'js>, Failure> {
    match entry {
        Entry::Call(function) => function.call((input,)).map_err(|e| guard.failure(ctx, e)),
        Entry::Value(value) => Ok(value.clone()),
    }
}

/// Evaluates a classic script, then calls its `main` when it defines one.
fn run_script<'js>(
    ctx: &Ctx<'js>,
    code: &str,
    input: Value<'js>,
) -> Evaluated<'js, rquickjs::Error> {
    let mut options = rquickjs::context::EvalOptions::default();
    options.strict = false;
    options.filename = Some(ENTRY.into());
    let completion: Value = ctx
        .eval_with_options(code, options)
        .map_err(|e| (e, None))?;
    // Sees `function main` and top-level `const main = …` alike.
    let main: Value = ctx
        .eval("typeof main === 'function' ? main : undefined")
        .map_err(|e| (e, None))?;
    match main.into_function() {
        Some(main) => {
            let entry = Some(Entry::Call(main.clone()));
            match main.call((input,)) {
                Ok(value) => Ok((value, entry)),
                Err(e) => Err((e, entry)),
            }
        }
        None => Ok((completion, None)),
    }
}

/// Evaluates the entry module, then calls its default export (or returns it).
fn run_module<'js>(
    ctx: &Ctx<'js>,
    code: &str,
    input: Value<'js>,
    guard: &Guard,
) -> Evaluated<'js, Failure> {
    let fail = |e: rquickjs::Error| (guard.failure(ctx, e), None);
    let (module, evaluated) = Module::declare(ctx.clone(), ENTRY, code)
        .and_then(Module::eval)
        .map_err(fail)?;
    guard
        .settle(ctx, evaluated.into_value())
        .map_err(|failure| (failure, None))?;
    let export: Value = module.get("default").map_err(fail)?;
    let entry = match export.as_function() {
        Some(function) => Entry::Call(function.clone()),
        None => Entry::Value(export),
    };
    match call(ctx, guard, &entry, input) {
        Ok(value) => Ok((value, Some(entry))),
        Err(failure) => Err((failure, Some(entry))),
    }
}

/// Deadline bookkeeping and error classification of one run.
pub(super) struct Guard {
    cells: Arc<Cells>,
    stack_hit: Cell<bool>,
}

impl Guard {
    pub(super) fn new(cells: &Arc<Cells>) -> Guard {
        Guard {
            cells: cells.clone(),
            stack_hit: Cell::new(false),
        }
    }

    pub(super) fn stack_hit(&self) -> bool {
        self.stack_hit.get()
    }

    fn timed_out(&self) -> bool {
        self.cells.interrupted() || self.cells.deadline_passed()
    }

    /// Turns an engine error (with the pending JS exception) into a failure.
    pub(super) fn failure(&self, ctx: &Ctx<'_>, error: rquickjs::Error) -> Failure {
        let failure = match error {
            rquickjs::Error::Exception => {
                let thrown = ctx.catch();
                if self.cells.interrupted() {
                    return Failure::Timeout;
                }
                if is_out_of_memory(&thrown) {
                    clear_exception(ctx);
                    return Failure::Memory;
                }
                if is_stack_overflow(&thrown) {
                    self.stack_hit.set(true);
                }
                Failure::Script(describe(ctx, &thrown))
            }
            rquickjs::Error::Allocation => Failure::Memory,
            rquickjs::Error::InvalidString(_) => {
                Failure::Script("the code contains a NUL character".into())
            }
            other => Failure::Script(other.to_string()),
        };
        if self.cells.interrupted() {
            Failure::Timeout
        } else if self.cells.refused() {
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
        let refused_before = self.cells.refused();
        loop {
            if self.timed_out() {
                return Err(Failure::Timeout);
            }
            if !refused_before && self.cells.refused() {
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
