//! A Sparkplug metric's value as JSON and back, by the metric's datatype (declared in BIRTH).
//!
//! Integers keep their width and sign: Sparkplug carries Int8/16/32 in a `uint32` and Int64 in
//! a `uint64` as two's complement, so an Int32 of −12 arrives as 4294967284 and reads −12; a
//! UInt64 keeps all 64 bits (JSON numbers in svc are exact integers). A Float reads as the
//! shortest decimal that gives the same `f32` (0.1, not 0.10000000149011612). DateTime is epoch
//! milliseconds, Bytes and File are base64, the arrays of Sparkplug 3.0 are JSON arrays,
//! datasets are `{"columns","types","rows"}` and templates
//! `{"template_ref","version","is_definition","parameters":{…},"metrics":{…}}`.

use base64::Engine as _;
use serde_json::{json, Map, Number, Value};
use srad_types::payload::data_set::{data_set_value, DataSetValue, Row};
use srad_types::payload::template::{parameter, Parameter};
use srad_types::payload::{
    metric, property_value, DataSet, DataType, Metric, PropertySet, Template,
};

// prost gives a metric, a dataset cell, a template parameter and a property value each an enum
// of its own with the same scalar variants: these two write the conversions once.

/// The [`Scalar`] a oneof value `$V` (in scope as `V`) holds; `None` for its other variants.
macro_rules! scalar_of {
    ($value:expr, $V:ident) => {
        match $value {
            $V::IntValue(n) => Some(Scalar::Int(*n)),
            $V::LongValue(n) => Some(Scalar::Long(*n)),
            $V::FloatValue(x) => Some(Scalar::Float(*x)),
            $V::DoubleValue(x) => Some(Scalar::Double(*x)),
            $V::BooleanValue(b) => Some(Scalar::Bool(*b)),
            $V::StringValue(s) => Some(Scalar::Text(s)),
            #[allow(unreachable_patterns)]
            _ => None,
        }
    };
}

/// A [`Scalar`] as the oneof value `$V`.
macro_rules! scalar_into {
    ($scalar:expr, $V:ident) => {
        match $scalar {
            Scalar::Int(n) => $V::IntValue(n),
            Scalar::Long(n) => $V::LongValue(n),
            Scalar::Float(x) => $V::FloatValue(x),
            Scalar::Double(x) => $V::DoubleValue(x),
            Scalar::Bool(b) => $V::BooleanValue(b),
            Scalar::Text(s) => $V::StringValue(s.to_string()),
            Scalar::String(s) => $V::StringValue(s),
        }
    };
}

/// The datatype named by a metric's `datatype` field.
pub fn datatype(code: u32) -> Option<DataType> {
    i32::try_from(code)
        .ok()
        .and_then(|c| DataType::try_from(c).ok())
        .filter(|t| *t != DataType::Unknown)
}

/// The metric's value as JSON, read as `datatype`; `null` for a null metric.
pub fn to_json(datatype: DataType, metric: &Metric) -> Result<Value, String> {
    if metric.is_null == Some(true) {
        return Ok(Value::Null);
    }
    let Some(value) = &metric.value else {
        return Ok(Value::Null);
    };
    use metric::Value as V;
    match (datatype, value) {
        (DataType::DataSet, V::DatasetValue(set)) => dataset_json(set),
        (DataType::Template, V::TemplateValue(template)) => template_json(template),
        (t, V::IntValue(n)) => scalar_json(t, Scalar::Int(*n)),
        (t, V::LongValue(n)) => scalar_json(t, Scalar::Long(*n)),
        (t, V::FloatValue(x)) => scalar_json(t, Scalar::Float(*x)),
        (t, V::DoubleValue(x)) => scalar_json(t, Scalar::Double(*x)),
        (t, V::BooleanValue(b)) => scalar_json(t, Scalar::Bool(*b)),
        (t, V::StringValue(s)) => scalar_json(t, Scalar::Text(s)),
        (t, V::BytesValue(bytes)) => bytes_json(t, bytes),
        (t, _) => Err(format!(
            "a {} metric carries a value of another kind",
            t.as_str_name()
        )),
    }
}

/// The metric value of `datatype` that `value` is (a write, or a tag published as a metric).
pub fn from_json(datatype: DataType, value: &Value) -> Result<metric::Value, String> {
    use metric::Value as V;
    Ok(match datatype {
        DataType::DataSet => V::DatasetValue(dataset_from_json(value)?),
        DataType::Template => V::TemplateValue(template_from_json(value)?),
        t if is_array(t) => V::BytesValue(array_from_json(t, value)?),
        DataType::Bytes | DataType::File => V::BytesValue(bytes_from_json(value)?),
        t => scalar_into!(scalar_from_json(t, value)?, V),
    })
}

/// The datatype a JSON value is published as when nothing declared one (the edge-node role:
/// a tag's value becomes a metric).
pub fn datatype_of(value: &Value) -> DataType {
    match value {
        Value::Bool(_) => DataType::Boolean,
        Value::Number(n) if n.is_i64() => DataType::Int64,
        Value::Number(n) if n.is_u64() => DataType::UInt64,
        Value::Number(_) => DataType::Double,
        Value::String(_) | Value::Null => DataType::String,
        Value::Array(_) | Value::Object(_) => DataType::Text,
    }
}

/// One value of the scalar kinds a metric, a dataset cell or a template parameter holds.
enum Scalar<'a> {
    Int(u32),
    Long(u64),
    Float(f32),
    Double(f64),
    Bool(bool),
    Text(&'a str),
    String(String),
}

fn scalar_json(datatype: DataType, scalar: Scalar<'_>) -> Result<Value, String> {
    let wrong = || {
        format!(
            "a {} metric carries a value of another kind",
            datatype.as_str_name()
        )
    };
    let int = match scalar {
        Scalar::Int(n) => Some(u64::from(n)),
        Scalar::Long(n) => Some(n),
        _ => None,
    };
    Ok(match datatype {
        // Two's complement of the datatype's width (Tahu sends −12 as 4294967284, others as 244).
        DataType::Int8 => json!(int.ok_or_else(wrong)? as i8),
        DataType::Int16 => json!(int.ok_or_else(wrong)? as i16),
        DataType::Int32 => json!(int.ok_or_else(wrong)? as i32),
        DataType::Int64 => json!(int.ok_or_else(wrong)? as i64),
        DataType::UInt8 => json!(unsigned(int.ok_or_else(wrong)?, u8::MAX.into(), datatype)?),
        DataType::UInt16 => json!(unsigned(int.ok_or_else(wrong)?, u16::MAX.into(), datatype)?),
        DataType::UInt32 => json!(unsigned(int.ok_or_else(wrong)?, u32::MAX.into(), datatype)?),
        DataType::UInt64 | DataType::DateTime => json!(int.ok_or_else(wrong)?),
        DataType::Float => match scalar {
            Scalar::Float(x) => float_json(x),
            _ => return Err(wrong()),
        },
        DataType::Double => match scalar {
            Scalar::Double(x) => Number::from_f64(x).map_or(Value::Null, Value::Number),
            Scalar::Float(x) => float_json(x),
            _ => return Err(wrong()),
        },
        DataType::Boolean => match scalar {
            Scalar::Bool(b) => json!(b),
            _ => return Err(wrong()),
        },
        DataType::String | DataType::Text | DataType::Uuid => match scalar {
            Scalar::Text(s) => json!(s),
            _ => return Err(wrong()),
        },
        _ => return Err(wrong()),
    })
}

fn unsigned(n: u64, max: u64, datatype: DataType) -> Result<u64, String> {
    if n > max {
        return Err(format!(
            "{n} is out of range for a {}",
            datatype.as_str_name()
        ));
    }
    Ok(n)
}

/// An `f32` as the shortest decimal that reads back as the same `f32`; non-finite → null.
fn float_json(x: f32) -> Value {
    x.to_string()
        .parse::<f64>()
        .ok()
        .and_then(Number::from_f64)
        .map_or(Value::Null, Value::Number)
}

fn scalar_from_json(datatype: DataType, value: &Value) -> Result<Scalar<'_>, String> {
    let name = datatype.as_str_name();
    let wrong = || format!("a {name} takes {}, not {value}", expected(datatype));
    let signed = |min: i64, max: i64| -> Result<i64, String> {
        integer(value)
            .and_then(|n| i64::try_from(n).ok())
            .filter(|n| (min..=max).contains(n))
            .ok_or_else(wrong)
    };
    let unsigned = |max: u64| -> Result<u64, String> {
        integer(value)
            .and_then(|n| u64::try_from(n).ok())
            .filter(|n| *n <= max)
            .ok_or_else(wrong)
    };
    Ok(match datatype {
        DataType::Int8 => Scalar::Int(signed(i8::MIN.into(), i8::MAX.into())? as i32 as u32),
        DataType::Int16 => Scalar::Int(signed(i16::MIN.into(), i16::MAX.into())? as i32 as u32),
        DataType::Int32 => Scalar::Int(signed(i32::MIN.into(), i32::MAX.into())? as i32 as u32),
        DataType::Int64 => Scalar::Long(signed(i64::MIN, i64::MAX)? as u64),
        DataType::UInt8 => Scalar::Int(unsigned(u8::MAX.into())? as u32),
        DataType::UInt16 => Scalar::Int(unsigned(u16::MAX.into())? as u32),
        DataType::UInt32 => Scalar::Int(unsigned(u32::MAX.into())? as u32),
        DataType::UInt64 => Scalar::Long(unsigned(u64::MAX)?),
        DataType::DateTime => Scalar::Long(datetime_ms(value).ok_or_else(wrong)?),
        DataType::Float => Scalar::Float(value.as_f64().ok_or_else(wrong)? as f32),
        DataType::Double => Scalar::Double(value.as_f64().ok_or_else(wrong)?),
        DataType::Boolean => Scalar::Bool(match value {
            Value::Bool(b) => *b,
            Value::Number(n) if n.as_f64() == Some(0.0) => false,
            Value::Number(n) if n.as_f64() == Some(1.0) => true,
            _ => return Err(wrong()),
        }),
        DataType::String | DataType::Text | DataType::Uuid => match value {
            Value::String(s) => Scalar::Text(s),
            Value::Null => return Err(wrong()),
            other => Scalar::String(other.to_string()),
        },
        _ => return Err(format!("a {name} cannot be written")),
    })
}

/// What a datatype takes, for the error sentence.
fn expected(datatype: DataType) -> &'static str {
    match datatype {
        DataType::Float | DataType::Double => "a number",
        DataType::Boolean => "true or false",
        DataType::DateTime => "epoch milliseconds or an RFC 3339 time",
        DataType::String | DataType::Text | DataType::Uuid => "a string",
        _ => "an integer in its range",
    }
}

/// An integer given as a JSON integer, a whole float, or a decimal string (64-bit values
/// survive JavaScript that way).
fn integer(value: &Value) -> Option<i128> {
    match value {
        Value::Number(n) => crate::fields::whole_number(n),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

fn datetime_ms(value: &Value) -> Option<u64> {
    match value {
        Value::String(s) => crate::time::parse_rfc3339(s)
            .and_then(|t| u64::try_from(t.timestamp_millis()).ok())
            .or_else(|| s.trim().parse().ok()),
        other => integer(other).and_then(|n| u64::try_from(n).ok()),
    }
}

fn bytes_json(datatype: DataType, bytes: &[u8]) -> Result<Value, String> {
    match datatype {
        DataType::Bytes | DataType::File => Ok(json!(
            base64::engine::general_purpose::STANDARD.encode(bytes)
        )),
        t if is_array(t) => array_json(t, bytes),
        t => Err(format!("a {} metric carries bytes", t.as_str_name())),
    }
}

fn bytes_from_json(value: &Value) -> Result<Vec<u8>, String> {
    value
        .as_str()
        .and_then(|s| base64::engine::general_purpose::STANDARD.decode(s).ok())
        .ok_or_else(|| format!("Bytes take a base64 string, not {value}"))
}

fn is_array(datatype: DataType) -> bool {
    (DataType::Int8Array as i32..=DataType::DateTimeArray as i32).contains(&(datatype as i32))
}

/// The width in bytes of one element of a fixed-width array type.
fn element_width(datatype: DataType) -> usize {
    match datatype {
        DataType::Int8Array | DataType::UInt8Array => 1,
        DataType::Int16Array | DataType::UInt16Array => 2,
        DataType::Int32Array | DataType::UInt32Array | DataType::FloatArray => 4,
        _ => 8,
    }
}

/// A Sparkplug 3.0 array (little-endian elements; booleans as a 4-byte count and bits, most
/// significant first; strings NUL-terminated) as a JSON array.
fn array_json(datatype: DataType, bytes: &[u8]) -> Result<Value, String> {
    let malformed = || format!("a malformed {}", datatype.as_str_name());
    match datatype {
        DataType::BooleanArray => {
            let count = bytes
                .get(..4)
                .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
                .ok_or_else(malformed)?;
            let bits = &bytes[4..];
            if bits.len() * 8 < count {
                return Err(malformed());
            }
            Ok(Value::Array(
                (0..count)
                    .map(|i| json!(bits[i / 8] & (0x80 >> (i % 8)) != 0))
                    .collect(),
            ))
        }
        DataType::StringArray => {
            let text = bytes.strip_suffix(&[0]).unwrap_or(bytes);
            if text.is_empty() {
                return Ok(json!([]));
            }
            text.split(|b| *b == 0)
                .map(|s| {
                    std::str::from_utf8(s)
                        .map(|s| json!(s))
                        .map_err(|_| malformed())
                })
                .collect::<Result<Vec<_>, _>>()
                .map(Value::Array)
        }
        t => {
            let width = element_width(t);
            if !bytes.len().is_multiple_of(width) {
                return Err(malformed());
            }
            Ok(Value::Array(
                bytes
                    .chunks_exact(width)
                    .map(|c| element_json(t, c))
                    .collect(),
            ))
        }
    }
}

fn element_json(datatype: DataType, c: &[u8]) -> Value {
    let mut wide = [0u8; 8];
    wide[..c.len()].copy_from_slice(c);
    let raw = u64::from_le_bytes(wide);
    match datatype {
        DataType::Int8Array => json!(raw as u8 as i8),
        DataType::Int16Array => json!(raw as u16 as i16),
        DataType::Int32Array => json!(raw as u32 as i32),
        DataType::Int64Array | DataType::DateTimeArray => json!(raw as i64),
        DataType::FloatArray => float_json(f32::from_bits(raw as u32)),
        DataType::DoubleArray => {
            Number::from_f64(f64::from_bits(raw)).map_or(Value::Null, Value::Number)
        }
        _ => json!(raw),
    }
}

fn array_from_json(datatype: DataType, value: &Value) -> Result<Vec<u8>, String> {
    let name = datatype.as_str_name();
    let items = value
        .as_array()
        .ok_or_else(|| format!("a {name} takes an array, not {value}"))?;
    let mut out = Vec::new();
    match datatype {
        DataType::BooleanArray => {
            out.extend_from_slice(&(items.len() as u32).to_le_bytes());
            let mut bits = vec![0u8; items.len().div_ceil(8)];
            for (i, item) in items.iter().enumerate() {
                if let Scalar::Bool(true) = scalar_from_json(DataType::Boolean, item)? {
                    bits[i / 8] |= 0x80 >> (i % 8);
                }
            }
            out.extend(bits);
        }
        DataType::StringArray => {
            for item in items {
                let text = item
                    .as_str()
                    .ok_or_else(|| format!("a {name} takes strings, not {item}"))?;
                if text.contains('\0') {
                    return Err(format!("a {name} cannot hold a NUL character"));
                }
                out.extend_from_slice(text.as_bytes());
                out.push(0);
            }
        }
        t => {
            let scalar = scalar_type(t);
            let width = element_width(t);
            for item in items {
                let bytes: u64 = match scalar_from_json(scalar, item)? {
                    Scalar::Int(n) => n.into(),
                    Scalar::Long(n) => n,
                    Scalar::Float(x) => x.to_bits().into(),
                    Scalar::Double(x) => x.to_bits(),
                    _ => unreachable!("array elements are numbers"),
                };
                out.extend_from_slice(&bytes.to_le_bytes()[..width]);
            }
        }
    }
    Ok(out)
}

/// The element type of a fixed-width array type.
fn scalar_type(array: DataType) -> DataType {
    match array {
        DataType::Int8Array => DataType::Int8,
        DataType::Int16Array => DataType::Int16,
        DataType::Int32Array => DataType::Int32,
        DataType::Int64Array => DataType::Int64,
        DataType::UInt8Array => DataType::UInt8,
        DataType::UInt16Array => DataType::UInt16,
        DataType::UInt32Array => DataType::UInt32,
        DataType::UInt64Array => DataType::UInt64,
        DataType::FloatArray => DataType::Float,
        DataType::DoubleArray => DataType::Double,
        _ => DataType::DateTime,
    }
}

fn dataset_json(set: &DataSet) -> Result<Value, String> {
    let types: Vec<DataType> = set
        .types
        .iter()
        .map(|t| datatype(*t).ok_or_else(|| format!("a dataset column has datatype {t}")))
        .collect::<Result<_, _>>()?;
    if types.len() != set.columns.len() {
        return Err("a dataset has not one type per column".into());
    }
    let mut rows = Vec::with_capacity(set.rows.len());
    for row in &set.rows {
        if row.elements.len() != types.len() {
            return Err("a dataset row has not one value per column".into());
        }
        let cells = row
            .elements
            .iter()
            .zip(&types)
            .map(|(cell, t)| match &cell.value {
                None => Ok(Value::Null),
                Some(v) => scalar_json(*t, cell_scalar(v)?),
            })
            .collect::<Result<Vec<_>, _>>()?;
        rows.push(Value::Array(cells));
    }
    Ok(json!({
        "columns": set.columns,
        "types": types.iter().map(|t| t.as_str_name()).collect::<Vec<_>>(),
        "rows": rows,
    }))
}

fn cell_scalar(value: &data_set_value::Value) -> Result<Scalar<'_>, String> {
    use data_set_value::Value as V;
    scalar_of!(value, V).ok_or_else(|| "a dataset cell holds an extension".into())
}

fn dataset_from_json(value: &Value) -> Result<DataSet, String> {
    let bad = || "a DataSet takes {\"columns\":[…],\"types\":[…],\"rows\":[[…]]}".to_string();
    let columns: Vec<String> = value
        .get("columns")
        .and_then(Value::as_array)
        .ok_or_else(bad)?
        .iter()
        .map(|c| c.as_str().map(str::to_string).ok_or_else(bad))
        .collect::<Result<_, _>>()?;
    let types: Vec<DataType> = value
        .get("types")
        .and_then(Value::as_array)
        .ok_or_else(bad)?
        .iter()
        .map(|t| t.as_str().and_then(DataType::from_str_name).ok_or_else(bad))
        .collect::<Result<_, _>>()?;
    if types.len() != columns.len() {
        return Err(bad());
    }
    let mut rows = Vec::new();
    for row in value
        .get("rows")
        .and_then(Value::as_array)
        .ok_or_else(bad)?
    {
        let cells = row
            .as_array()
            .filter(|r| r.len() == types.len())
            .ok_or_else(bad)?;
        let elements = cells
            .iter()
            .zip(&types)
            .map(|(cell, t)| {
                if cell.is_null() {
                    return Ok(DataSetValue { value: None });
                }
                use data_set_value::Value as V;
                let value = scalar_into!(scalar_from_json(*t, cell)?, V);
                Ok(DataSetValue { value: Some(value) })
            })
            .collect::<Result<Vec<_>, String>>()?;
        rows.push(Row { elements });
    }
    Ok(DataSet {
        num_of_columns: Some(columns.len() as u64),
        columns,
        types: types.iter().map(|t| *t as u32).collect(),
        rows,
    })
}

fn template_json(template: &Template) -> Result<Value, String> {
    let mut metrics = Map::new();
    for member in &template.metrics {
        let name = member.name.clone().unwrap_or_default();
        let t = member
            .datatype
            .and_then(datatype)
            .ok_or_else(|| format!("template member `{name}` has no datatype"))?;
        metrics.insert(name, to_json(t, member)?);
    }
    let mut parameters = Map::new();
    for parameter in &template.parameters {
        let name = parameter.name.clone().unwrap_or_default();
        let value = match (&parameter.value, parameter.r#type.and_then(datatype)) {
            (Some(v), Some(t)) => scalar_json(t, parameter_scalar(v)?)?,
            _ => Value::Null,
        };
        parameters.insert(name, value);
    }
    let mut out = Map::new();
    if let Some(reference) = &template.template_ref {
        out.insert("template_ref".into(), json!(reference));
    }
    if let Some(version) = &template.version {
        out.insert("version".into(), json!(version));
    }
    if let Some(definition) = template.is_definition {
        out.insert("is_definition".into(), json!(definition));
    }
    out.insert("parameters".into(), Value::Object(parameters));
    out.insert("metrics".into(), Value::Object(metrics));
    Ok(Value::Object(out))
}

fn parameter_scalar(value: &parameter::Value) -> Result<Scalar<'_>, String> {
    use parameter::Value as V;
    scalar_of!(value, V).ok_or_else(|| "a template parameter holds an extension".into())
}

/// A template from JSON: its members' datatypes are inferred from their JSON values (a write
/// to a template metric names members by name, as in BIRTH).
fn template_from_json(value: &Value) -> Result<Template, String> {
    let object = value
        .as_object()
        .ok_or_else(|| format!("a Template takes an object, not {value}"))?;
    let mut metrics = Vec::new();
    if let Some(members) = object.get("metrics").and_then(Value::as_object) {
        for (name, member) in members {
            let t = datatype_of(member);
            let mut m = Metric::new();
            m.set_name(name.clone()).set_datatype(t);
            match member {
                Value::Null => {
                    m.set_null();
                }
                Value::Array(_) | Value::Object(_) => {
                    m.set_value(metric::Value::StringValue(member.to_string()));
                }
                other => {
                    m.set_value(from_json(t, other)?);
                }
            }
            metrics.push(m);
        }
    }
    let mut parameters = Vec::new();
    if let Some(given) = object.get("parameters").and_then(Value::as_object) {
        for (name, value) in given {
            let t = datatype_of(value);
            use parameter::Value as V;
            let v = scalar_into!(scalar_from_json(t, value)?, V);
            parameters.push(Parameter {
                name: Some(name.clone()),
                r#type: Some(t as u32),
                value: Some(v),
            });
        }
    }
    Ok(Template {
        version: object
            .get("version")
            .and_then(Value::as_str)
            .map(str::to_string),
        metrics,
        parameters,
        template_ref: object
            .get("template_ref")
            .and_then(Value::as_str)
            .map(str::to_string),
        is_definition: object.get("is_definition").and_then(Value::as_bool),
    })
}

/// A metric's properties as a JSON object (nested property sets as objects, lists as arrays).
pub fn properties_json(set: &PropertySet) -> Value {
    let mut out = Map::new();
    for (key, value) in set.keys.iter().zip(&set.values) {
        use property_value::Value as V;
        let json = match (&value.value, value.r#type.and_then(datatype)) {
            (_, _) if value.is_null == Some(true) => Value::Null,
            (Some(V::PropertysetValue(inner)), _) => properties_json(inner),
            (Some(V::PropertysetsValue(list)), _) => {
                Value::Array(list.propertyset.iter().map(properties_json).collect())
            }
            (Some(v), Some(t)) => property_scalar(v)
                .and_then(|s| scalar_json(t, s).ok())
                .unwrap_or(Value::Null),
            _ => Value::Null,
        };
        out.insert(key.clone(), json);
    }
    Value::Object(out)
}

fn property_scalar(value: &property_value::Value) -> Option<Scalar<'_>> {
    use property_value::Value as V;
    scalar_of!(value, V)
}

#[cfg(test)]
#[path = "value_tests.rs"]
mod tests;
