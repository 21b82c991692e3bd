//! Thrown values as one line of text for run errors and logs (`Name: message (at frame)`),
//! and which of them mean the run hit a limit rather than failed on its own.

use super::*;

pub(super) fn is_out_of_memory(thrown: &Value<'_>) -> bool {
    error_is(thrown, "InternalError", "out of memory")
}

/// `thrown` is an error of this name with this message.
fn error_is(thrown: &Value<'_>, name: &str, message: &str) -> bool {
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
    text("name").as_deref() == Some(name) && text("message").as_deref() == Some(message)
}

/// A thrown value as one line: `Name: message (at frame)` for errors.
pub(super) fn describe<'js>(ctx: &Ctx<'js>, thrown: &Value<'js>) -> String {
    let text = describe_value(ctx, thrown, true);
    clear_exception(ctx);
    text
}

/// Drops an exception left by user code that ran while describing a value (a getter that
/// threw): it is not the one being reported.
pub(super) fn clear_exception(ctx: &Ctx<'_>) {
    if ctx.has_exception() {
        ctx.catch();
    }
}

pub(super) fn describe_value<'js>(ctx: &Ctx<'js>, thrown: &Value<'js>, with_frame: bool) -> String {
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

/// QuickJS's error for a JS stack past [`JS_STACK_BYTES`].
pub(super) fn is_stack_overflow(thrown: &Value<'_>) -> bool {
    error_is(thrown, "RangeError", "Maximum call stack size exceeded")
}
