//! A point as the shared layer runs it: its tag, how a raw device value becomes the tag's
//! value (scale and offset) and back for writes, and which changes are worth publishing
//! (the deadband).

use serde_json::{Map, Number, Value};

#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    pub tag: String,
    pub scale: f64,
    pub offset: f64,
    pub deadband: f64,
    pub writable: bool,
    pub write_topic: Option<String>,
}

impl Point {
    /// The point of a normalised record's `points[i]`.
    pub fn of(fields: &Map<String, Value>) -> Point {
        let real =
            |name: &str, default: f64| fields.get(name).and_then(Value::as_f64).unwrap_or(default);
        Point {
            tag: fields
                .get("tag")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
            scale: real("scale", 1.0),
            offset: real("offset", 0.0),
            deadband: real("deadband", 0.0),
            writable: fields.get("writable") == Some(&Value::Bool(true)),
            write_topic: fields
                .get("write_topic")
                .and_then(Value::as_str)
                .map(str::to_string),
        }
    }

    fn scaled(&self) -> bool {
        self.scale != 1.0 || self.offset != 0.0
    }

    /// The tag's value for a raw device value: numbers (and arrays of numbers) times `scale`
    /// plus `offset`; other values as they are. Unscaled integers keep every bit (a UInt64).
    pub fn engineering(&self, raw: Value) -> Value {
        if !self.scaled() {
            return raw;
        }
        match raw {
            Value::Number(n) => n
                .as_f64()
                .map(|x| number(x * self.scale + self.offset))
                .unwrap_or(Value::Number(n)),
            Value::Array(items) => {
                Value::Array(items.into_iter().map(|v| self.engineering(v)).collect())
            }
            other => other,
        }
    }

    /// The raw value to write for a tag value: the inverse of [`Point::engineering`].
    pub fn raw(&self, value: Value) -> Value {
        if !self.scaled() {
            return value;
        }
        match value {
            Value::Number(n) => n
                .as_f64()
                .map(|x| number((x - self.offset) / self.scale))
                .unwrap_or(Value::Number(n)),
            Value::Array(items) => Value::Array(items.into_iter().map(|v| self.raw(v)).collect()),
            other => other,
        }
    }

    /// Whether `value` differs enough from the last published one to publish: always for a
    /// first value or a non-number; beyond the deadband for numbers.
    pub fn passes_deadband(&self, last: Option<&Value>, value: &Value) -> bool {
        let Some(last) = last else { return true };
        match (last.as_f64(), value.as_f64()) {
            (Some(a), Some(b)) if self.deadband > 0.0 => (a - b).abs() > self.deadband,
            _ => last != value,
        }
    }
}

/// A float as JSON, rounded to 15 significant digits so scaling adds no binary noise
/// (7 × 0.1 is 0.7, not 0.7000000000000001); whole results stay whole (20 × 0.5 is 10, not
/// 10.0); NaN and infinities become null.
fn number(x: f64) -> Value {
    let x = format!("{x:.14e}").parse::<f64>().unwrap_or(x);
    if x.fract() == 0.0 && x.abs() < 9.0e15 {
        Value::Number(Number::from(x as i64))
    } else {
        Number::from_f64(x)
            .map(Value::Number)
            .unwrap_or(Value::Null)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn point(scale: f64, offset: f64, deadband: f64) -> Point {
        Point {
            tag: "a/b".into(),
            scale,
            offset,
            deadband,
            writable: true,
            write_topic: None,
        }
    }

    #[test]
    fn scaling_goes_both_ways() {
        let p = point(0.1, -40.0, 0.0);
        assert_eq!(p.engineering(json!(650)), json!(25));
        assert_eq!(p.raw(json!(25)), json!(650));
        assert_eq!(p.engineering(json!([0, 10])), json!([-40, -39]));
        assert_eq!(p.engineering(json!(true)), json!(true));
        let tenth = point(0.1, 0.0, 0.0);
        assert_eq!(tenth.engineering(json!(7)), json!(0.7));
        assert_eq!(tenth.engineering(json!(123)), json!(12.3));
        assert_eq!(tenth.raw(json!(-4.2)), json!(-42));
        let plain = point(1.0, 0.0, 0.0);
        assert_eq!(plain.engineering(json!(u64::MAX)), json!(u64::MAX));
        assert_eq!(plain.raw(json!(-12)), json!(-12));
    }

    #[test]
    fn the_deadband_holds_back_small_changes_only() {
        let p = point(1.0, 0.0, 0.5);
        assert!(p.passes_deadband(None, &json!(1)));
        assert!(!p.passes_deadband(Some(&json!(1.0)), &json!(1.4)));
        assert!(p.passes_deadband(Some(&json!(1.0)), &json!(1.6)));
        assert!(p.passes_deadband(Some(&json!("a")), &json!("b")));
        let none = point(1.0, 0.0, 0.0);
        assert!(!none.passes_deadband(Some(&json!(1)), &json!(1)));
        assert!(none.passes_deadband(Some(&json!(1)), &json!(2)));
    }
}
