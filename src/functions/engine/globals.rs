//! The globals a sandboxed run sees: `input`, the `svc` host API (tags, records, log) bridged
//! to the host, and `console`, with the run's log buffer.

use super::*;

// ---- globals -----------------------------------------------------------------------------

pub(super) fn install_globals<'js>(
    ctx: &Ctx<'js>,
    guard: &Guard,
    bridge: &Rc<Bridge>,
    logs: &Rc<RefCell<LogBuf>>,
) -> rquickjs::Result<()> {
    let globals = ctx.globals();
    let console = Object::new(ctx.clone())?;
    for (name, prefix) in [
        ("log", ""),
        ("info", ""),
        ("debug", ""),
        ("warn", "warn: "),
        ("error", "error: "),
    ] {
        console.set(name, log_fn(ctx, name, prefix, logs, guard)?)?;
    }
    globals.set("console", console)?;

    let svc = Object::new(ctx.clone())?;
    svc.set("log", log_fn(ctx, "log", "", logs, guard)?)?;

    let tag = Object::new(ctx.clone())?;
    tag.set(
        "read",
        host_fn(ctx, bridge, guard, "read", false, |ctx, args| {
            Ok(HostCall::TagRead {
                topic: string_arg(ctx, args, 0, "svc.tag.read: topic")?,
            })
        })?,
    )?;
    tag.set(
        "write",
        host_fn(ctx, bridge, guard, "write", true, |ctx, args| {
            Ok(HostCall::TagWrite {
                topic: string_arg(ctx, args, 0, "svc.tag.write: topic")?,
                value: json_arg(ctx, args.get(1), "svc.tag.write: value")?,
            })
        })?,
    )?;
    svc.set("tag", tag)?;

    let records = Object::new(ctx.clone())?;
    records.set(
        "create",
        host_fn(ctx, bridge, guard, "create", false, |ctx, args| {
            Ok(HostCall::RecordCreate {
                table: string_arg(ctx, args, 0, "svc.records.create: table")?,
                record: object_arg(ctx, args.get(1), "svc.records.create: record")?,
            })
        })?,
    )?;
    records.set(
        "get",
        host_fn(ctx, bridge, guard, "get", false, |ctx, args| {
            Ok(HostCall::RecordGet {
                id: string_arg(ctx, args, 0, "svc.records.get: id")?,
            })
        })?,
    )?;
    records.set(
        "list",
        host_fn(ctx, bridge, guard, "list", false, |ctx, args| {
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
        })?,
    )?;
    svc.set("records", records)?;
    globals.set("svc", svc)?;
    Ok(())
}

/// `function` with this context's `Function.prototype`. rquickjs hands every Rust function the
/// prototype it cached for the runtime's first context; in a runtime kept between runs that
/// would be a way into another run's realm (its globals, its input), so each run's host
/// functions get their own.
fn in_own_realm<'js>(ctx: &Ctx<'js>, function: Function<'js>) -> rquickjs::Result<Function<'js>> {
    let own = Function::prototype(ctx.clone());
    if let Some(object) = function.as_object() {
        object.set_prototype(Some(&own))?;
    }
    Ok(function)
}

/// A JS function that turns its arguments into a host call and the reply into its result.
/// Past the deadline it throws instead: host calls are slow enough that QuickJS's
/// instruction-count polling alone would let a loop of them overrun the limit.
pub(super) fn host_fn<'js, F>(
    ctx: &Ctx<'js>,
    bridge: &Rc<Bridge>,
    guard: &Guard,
    name: &str,
    returns_undefined: bool,
    make: F,
) -> rquickjs::Result<Function<'js>>
where
    F: Fn(&Ctx<'js>, &[Value<'js>]) -> rquickjs::Result<HostCall> + 'js,
{
    let bridge = bridge.clone();
    let interrupted = guard.interrupted.clone();
    let deadline = guard.deadline;
    let function = Function::new(
        ctx.clone(),
        move |ctx: Ctx<'js>, args: Rest<Value<'js>>| -> rquickjs::Result<Value<'js>> {
            if Instant::now() >= deadline {
                interrupted.set(true);
                return Err(Exception::throw_internal(&ctx, "interrupted"));
            }
            let call = make(&ctx, &args.0)?;
            match bridge.call(call) {
                Ok(Some(value)) => to_js(&ctx, &value),
                Ok(None) if returns_undefined => Ok(Value::new_undefined(ctx)),
                Ok(None) => Ok(Value::new_null(ctx)),
                Err(message) => Err(Exception::throw_message(&ctx, &message)),
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
    truncated: bool,
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

pub(super) fn log_fn<'js>(
    ctx: &Ctx<'js>,
    name: &str,
    prefix: &'static str,
    logs: &Rc<RefCell<LogBuf>>,
    guard: &Guard,
) -> rquickjs::Result<Function<'js>> {
    let logs = logs.clone();
    let interrupted = guard.interrupted.clone();
    let function = Function::new(
        ctx.clone(),
        move |ctx: Ctx<'js>, args: Rest<Value<'js>>| -> rquickjs::Result<()> {
            if logs.borrow().truncated {
                return Ok(());
            }
            let mut line = String::from(prefix);
            for (i, arg) in args.0.iter().enumerate() {
                if i > 0 {
                    line.push(' ');
                }
                line.push_str(&log_text(&ctx, arg, &interrupted)?);
            }
            logs.borrow_mut().push(line);
            Ok(())
        },
    )?;
    in_own_realm(ctx, function)?.with_name(name)
}

/// One `console.log` argument as text.
pub(super) fn log_text<'js>(
    ctx: &Ctx<'js>,
    value: &Value<'js>,
    interrupted: &Cell<bool>,
) -> rquickjs::Result<String> {
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
            let fatal = interrupted.get() || is_out_of_memory(&thrown);
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
        Err(rquickjs::Error::Exception) if interrupted.get() => Err(rquickjs::Error::Exception),
        Err(_) => {
            clear_exception(ctx);
            Ok(format!("[{}]", value.type_name()))
        }
    }
}
