//! The globals a sandboxed run sees: `input`, the `svc` host API (tags, records, log) served
//! by the run's host, and `console`, writing to the run's log; and the log buffer itself.

use super::lent::{RunSlot, Unserved};
use super::runtime::Cells;
use super::*;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

// ---- globals -----------------------------------------------------------------------------

/// The host functions of a context (`console.*`, `svc.log`, `svc.tag.*`, `svc.records.*`),
/// made once per context and handed to each run in fresh `svc` and `console` objects, with the
/// context's own `Object.freeze` (code may replace the global one).
#[derive(Clone)]
pub(super) struct Kit<'js> {
    console: Vec<(&'static str, Function<'js>)>,
    log: Function<'js>,
    tag: [(&'static str, Function<'js>); 2],
    records: [(&'static str, Function<'js>); 3],
    freeze: Function<'js>,
}

// SAFETY: `Kit` holds only JS values of lifetime 'js, so changing 'js changes nothing else (what
// rquickjs's derive would write); it lets a warm context keep its kit as runtime user data.
unsafe impl<'js> rquickjs::JsLifetime<'js> for Kit<'js> {
    type Changed<'to> = Kit<'to>;
}

impl<'js> Kit<'js> {
    pub(super) fn new(
        ctx: &Ctx<'js>,
        slot: &Arc<RunSlot>,
        cells: &Arc<Cells>,
    ) -> rquickjs::Result<Kit<'js>> {
        let mut console = Vec::new();
        for (name, prefix) in [
            ("log", ""),
            ("info", ""),
            ("debug", ""),
            ("warn", "warn: "),
            ("error", "error: "),
        ] {
            console.push((name, log_fn(ctx, name, prefix, slot, cells)?));
        }
        let host = |name: &str, returns_undefined: bool, make: MakeCall<'js>| {
            host_fn(ctx, slot, cells, name, returns_undefined, make)
        };
        let tag = [
            (
                "read",
                host(
                    "read",
                    false,
                    Box::new(|ctx: &Ctx<'js>, args: &[Value<'js>]| {
                        Ok(HostCall::TagRead {
                            topic: string_arg(ctx, args, 0, "svc.tag.read: topic")?,
                        })
                    }),
                )?,
            ),
            (
                "write",
                host(
                    "write",
                    true,
                    Box::new(|ctx: &Ctx<'js>, args: &[Value<'js>]| {
                        Ok(HostCall::TagWrite {
                            topic: string_arg(ctx, args, 0, "svc.tag.write: topic")?,
                            value: json_arg(ctx, args.get(1), "svc.tag.write: value")?,
                        })
                    }),
                )?,
            ),
        ];
        let records = [
            (
                "create",
                host(
                    "create",
                    false,
                    Box::new(|ctx: &Ctx<'js>, args: &[Value<'js>]| {
                        Ok(HostCall::RecordCreate {
                            table: string_arg(ctx, args, 0, "svc.records.create: table")?,
                            record: object_arg(ctx, args.get(1), "svc.records.create: record")?,
                        })
                    }),
                )?,
            ),
            (
                "get",
                host(
                    "get",
                    false,
                    Box::new(|ctx: &Ctx<'js>, args: &[Value<'js>]| {
                        Ok(HostCall::RecordGet {
                            id: string_arg(ctx, args, 0, "svc.records.get: id")?,
                        })
                    }),
                )?,
            ),
            (
                "list",
                host(
                    "list",
                    false,
                    Box::new(|ctx: &Ctx<'js>, args: &[Value<'js>]| {
                        let query = match args.get(1) {
                            Some(q) if !q.is_undefined() && !q.is_null() => {
                                object_arg(ctx, Some(q), "svc.records.list: query")?
                            }
                            _ => Json::Object(Default::default()),
                        };
                        Ok(HostCall::RecordList {
                            table: string_arg(ctx, args, 0, "svc.records.list: table")?,
                            query,
                        })
                    }),
                )?,
            ),
        ];
        let freeze = ctx
            .globals()
            .get::<_, Object>("Object")
            .and_then(|object| object.get("freeze"))?;
        Ok(Kit {
            console,
            log: log_fn(ctx, "log", "", slot, cells)?,
            tag,
            records,
            freeze,
        })
    }

    /// Sets a run's globals: fresh `svc` and `console` objects over the kit's functions,
    /// `input`, and each of `globals` frozen. Returns the input as a JS value.
    pub(super) fn hand_out(
        &self,
        ctx: &Ctx<'js>,
        input: &Json,
        globals: &[(&str, Json)],
    ) -> rquickjs::Result<Value<'js>> {
        let object = |members: &[(&'static str, Function<'js>)]| {
            let object = Object::new(ctx.clone())?;
            for (name, function) in members {
                object.set(*name, function.clone())?;
            }
            Ok::<_, rquickjs::Error>(object)
        };
        let global = ctx.globals();
        global.set("console", object(&self.console)?)?;
        let svc = object(&[("log", self.log.clone())])?;
        svc.set("tag", object(&self.tag)?)?;
        svc.set("records", object(&self.records)?)?;
        global.set("svc", svc)?;
        let input = to_js(ctx, input)?;
        global.set("input", input.clone())?;
        for (name, value) in globals {
            let frozen: Value = self.freeze.call((to_js(ctx, value)?,))?;
            global.set(*name, frozen)?;
        }
        Ok(input)
    }
}

/// Turns a host function's arguments into its host call.
type MakeCall<'js> = Box<dyn Fn(&Ctx<'js>, &[Value<'js>]) -> rquickjs::Result<HostCall> + 'js>;

/// `function` with this context's `Function.prototype`. rquickjs hands every Rust function the
/// prototype it cached for the runtime's first context; in a runtime kept between runs that
/// would be a way into another run's realm (its globals, its input), so each context's host
/// functions get their own.
fn in_own_realm<'js>(ctx: &Ctx<'js>, function: Function<'js>) -> rquickjs::Result<Function<'js>> {
    let own = Function::prototype(ctx.clone());
    if let Some(object) = function.as_object() {
        object.set_prototype(Some(&own))?;
    }
    Ok(function)
}

/// A JS function that turns its arguments into a host call of the run in progress and the
/// reply into its result. Past the deadline it throws instead: host calls are slow enough that
/// QuickJS's instruction-count polling alone would let a loop of them overrun the limit.
fn host_fn<'js>(
    ctx: &Ctx<'js>,
    slot: &Arc<RunSlot>,
    cells: &Arc<Cells>,
    name: &str,
    returns_undefined: bool,
    make: MakeCall<'js>,
) -> rquickjs::Result<Function<'js>> {
    let (slot, cells) = (slot.clone(), cells.clone());
    let function = Function::new(
        ctx.clone(),
        move |ctx: Ctx<'js>, args: Rest<Value<'js>>| -> rquickjs::Result<Value<'js>> {
            if cells.deadline_passed() {
                cells.interrupted.store(true, Relaxed);
                return Err(Exception::throw_internal(&ctx, "interrupted"));
            }
            let call = make(&ctx, &args.0)?;
            match slot.call(&cells, call) {
                Ok(Ok(Some(value))) => to_js(&ctx, &value),
                Ok(Ok(None)) if returns_undefined => Ok(Value::new_undefined(ctx)),
                Ok(Ok(None)) => Ok(Value::new_null(ctx)),
                Ok(Err(message)) => Err(Exception::throw_message(&ctx, &message)),
                Err(Unserved::Late) => {
                    cells.interrupted.store(true, Relaxed);
                    Err(Exception::throw_internal(&ctx, "interrupted"))
                }
                Err(Unserved::NoRun) => Err(Exception::throw_message(
                    &ctx,
                    "the host is no longer available",
                )),
            }
        },
    )?;
    in_own_realm(ctx, function)?.with_name(name)
}

pub(super) fn string_arg<'js>(
    ctx: &Ctx<'js>,
    args: &[Value<'js>],
    index: usize,
    what: &str,
) -> rquickjs::Result<String> {
    match args.get(index).and_then(Value::as_string) {
        Some(text) => text.to_string(),
        None => Err(Exception::throw_type(
            ctx,
            &format!("{what} must be a string"),
        )),
    }
}

pub(super) fn json_arg<'js>(
    ctx: &Ctx<'js>,
    value: Option<&Value<'js>>,
    what: &str,
) -> rquickjs::Result<Json> {
    let not_json = || Exception::throw_type(ctx, &format!("{what} must be a JSON value"));
    let Some(value) = value else {
        return Err(not_json());
    };
    let Some(text) = ctx.json_stringify(value.clone())? else {
        return Err(not_json());
    };
    serde_json::from_str(&text.to_string()?).map_err(|e| {
        Exception::throw_type(ctx, &format!("{what} cannot be converted to JSON: {e}"))
    })
}

pub(super) fn object_arg<'js>(
    ctx: &Ctx<'js>,
    value: Option<&Value<'js>>,
    what: &str,
) -> rquickjs::Result<Json> {
    match json_arg(ctx, value, what)? {
        object @ Json::Object(_) => Ok(object),
        _ => Err(Exception::throw_type(
            ctx,
            &format!("{what} must be an object"),
        )),
    }
}

pub(super) fn to_js<'js>(ctx: &Ctx<'js>, value: &Json) -> rquickjs::Result<Value<'js>> {
    let text = serde_json::to_string(value)
        .map_err(|e| Exception::throw_internal(ctx, &format!("cannot convert a value: {e}")))?;
    ctx.json_parse(text)
}

// ---- logs --------------------------------------------------------------------------------

#[derive(Default)]
pub(crate) struct LogBuf {
    pub(crate) lines: Vec<String>,
    bytes: usize,
    pub(super) truncated: bool,
}

impl LogBuf {
    pub(crate) fn push(&mut self, mut line: String) {
        if self.truncated {
            return;
        }
        let room = MAX_LOG_BYTES.saturating_sub(self.bytes);
        if self.lines.len() >= MAX_LOG_LINES || line.len() > room {
            let mut cut = room.min(line.len());
            while !line.is_char_boundary(cut) {
                cut -= 1;
            }
            line.truncate(cut);
            if !line.is_empty() && self.lines.len() < MAX_LOG_LINES {
                self.lines.push(line);
            }
            self.lines.push(LOGS_TRUNCATED.into());
            self.truncated = true;
            return;
        }
        self.bytes += line.len();
        self.lines.push(line);
    }
}

fn log_fn<'js>(
    ctx: &Ctx<'js>,
    name: &str,
    prefix: &'static str,
    slot: &Arc<RunSlot>,
    cells: &Arc<Cells>,
) -> rquickjs::Result<Function<'js>> {
    let (slot, cells) = (slot.clone(), cells.clone());
    let function = Function::new(
        ctx.clone(),
        move |ctx: Ctx<'js>, args: Rest<Value<'js>>| -> rquickjs::Result<()> {
            if slot.log_full() {
                return Ok(());
            }
            let mut line = String::from(prefix);
            for (i, arg) in args.0.iter().enumerate() {
                if i > 0 {
                    line.push(' ');
                }
                line.push_str(&log_text(&ctx, arg, &cells)?);
            }
            slot.log(line);
            Ok(())
        },
    )?;
    in_own_realm(ctx, function)?.with_name(name)
}

/// One `console.log` argument as text.
fn log_text<'js>(ctx: &Ctx<'js>, value: &Value<'js>, cells: &Cells) -> rquickjs::Result<String> {
    if let Some(text) = value.as_string() {
        return text.to_string();
    }
    if value.is_error() {
        let text = describe_value(ctx, value, false);
        clear_exception(ctx);
        return Ok(text);
    }
    if value.is_undefined() {
        return Ok("undefined".into());
    }
    match ctx.json_stringify(value.clone()) {
        Ok(Some(text)) => return text.to_string(),
        Ok(None) => {}
        Err(rquickjs::Error::Exception) => {
            let thrown = ctx.catch();
            let fatal = cells.interrupted() || is_out_of_memory(&thrown);
            clear_exception(ctx);
            if fatal {
                return Err(ctx.throw(thrown));
            }
        }
        Err(e) => return Err(e),
    }
    // Not JSON (a BigInt, a cycle, a function): `String(value)`.
    match value.get::<Coerced<String>>() {
        Ok(text) => Ok(text.0),
        Err(rquickjs::Error::Exception) if cells.interrupted() => Err(rquickjs::Error::Exception),
        Err(_) => {
            clear_exception(ctx);
            Ok(format!("[{}]", value.type_name()))
        }
    }
}
