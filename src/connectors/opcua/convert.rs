//! Values between OPC UA and JSON: a [`Variant`] as the JSON a reading carries ([`to_json`]),
//! and the JSON of a write as a [`Variant`] of the node's exact type ([`to_variant`]), with
//! range checks. 64-bit integers stay exact; NaN and infinities read as null.

use base64::Engine;
use opcua::types::json::{JsonStreamWriter, JsonWriter};
use opcua::types::type_loader::{ByteStringBody, XmlBody};
use opcua::types::{
    Array, ByteString, Context, DateTime, ExtensionObject, Guid, LocalizedText, NodeId,
    QualifiedName, StatusCode, UAString, Variant, VariantScalarTypeId,
};
use serde_json::{json, Map, Value};
use std::str::FromStr;

const BASE64: base64::engine::GeneralPurpose = base64::engine::general_purpose::STANDARD;

/// A value as JSON; `ctx` decodes the structures of extension objects.
pub fn to_json(variant: &Variant, ctx: &Context<'_>) -> Value {
    match variant {
        Variant::Empty => Value::Null,
        Variant::Boolean(v) => Value::Bool(*v),
        Variant::SByte(v) => Value::from(*v),
        Variant::Byte(v) => Value::from(*v),
        Variant::Int16(v) => Value::from(*v),
        Variant::UInt16(v) => Value::from(*v),
        Variant::Int32(v) => Value::from(*v),
        Variant::UInt32(v) => Value::from(*v),
        Variant::Int64(v) => Value::from(*v),
        Variant::UInt64(v) => Value::from(*v),
        Variant::Float(v) => float(f64::from(*v)),
        Variant::Double(v) => float(*v),
        Variant::String(s) => text(s),
        Variant::DateTime(d) => Value::String(rfc3339(d)),
        Variant::Guid(g) => Value::String(g.to_string()),
        Variant::StatusCode(s) => Value::String(status_name(*s)),
        Variant::ByteString(b) => bytes(b),
        Variant::XmlElement(x) => Value::String(x.to_string()),
        Variant::QualifiedName(q) => Value::String(qualified_name(q)),
        Variant::LocalizedText(t) => text(&t.text),
        Variant::NodeId(n) => Value::String(n.to_string()),
        Variant::ExpandedNodeId(n) => Value::String(n.to_string()),
        Variant::ExtensionObject(o) => extension_object(o, ctx),
        Variant::Variant(v) => to_json(v, ctx),
        Variant::DataValue(d) => d.value.as_ref().map_or(Value::Null, |v| to_json(v, ctx)),
        Variant::DiagnosticInfo(_) => Value::Null,
        Variant::Array(array) => {
            let values: Vec<Value> = array.values.iter().map(|v| to_json(v, ctx)).collect();
            match array.dimensions.as_deref() {
                Some(dims) if dims.len() > 1 => nest(values, dims),
                _ => Value::Array(values),
            }
        }
    }
}

/// The name of a status code (`BadNodeIdUnknown`), without its info bits.
pub fn status_name(code: StatusCode) -> String {
    if code.is_good() && code.sub_code().to_string() == "Good" {
        return "Good".into();
    }
    code.sub_code().to_string()
}

/// `ns:Name` (`Name` in namespace 0).
pub fn qualified_name(q: &QualifiedName) -> String {
    let name = q.name.as_ref();
    if q.namespace_index == 0 {
        name.to_string()
    } else {
        format!("{}:{}", q.namespace_index, name)
    }
}

fn float(v: f64) -> Value {
    serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number)
}

fn text(s: &UAString) -> Value {
    s.value()
        .as_ref()
        .map_or(Value::Null, |s| Value::String(s.clone()))
}

fn bytes(b: &ByteString) -> Value {
    b.value
        .as_ref()
        .map_or(Value::Null, |b| Value::String(BASE64.encode(b)))
}

fn rfc3339(d: &DateTime) -> String {
    d.as_chrono()
        .to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true)
}

/// Row-major values into nested arrays of `dims` (outermost first).
fn nest(values: Vec<Value>, dims: &[u32]) -> Value {
    let expected: usize = dims.iter().map(|d| *d as usize).product();
    if dims.is_empty() || expected != values.len() || dims.contains(&0) {
        return Value::Array(values);
    }
    fn build(values: &mut std::vec::IntoIter<Value>, dims: &[u32]) -> Value {
        if dims.len() == 1 {
            return Value::Array(values.take(dims[0] as usize).collect());
        }
        Value::Array((0..dims[0]).map(|_| build(values, &dims[1..])).collect())
    }
    build(&mut values.into_iter(), dims)
}

fn extension_object(o: &ExtensionObject, ctx: &Context<'_>) -> Value {
    let Some(body) = o.body.as_ref() else {
        return Value::Null;
    };
    if let Some(raw) = o.inner_as::<ByteStringBody>() {
        return json!({
            "type_id": raw.encoding_id().to_string(),
            "body": bytes(raw.raw_body()),
        });
    }
    if let Some(xml) = o.inner_as::<XmlBody>() {
        return json!({
            "type_id": xml.encoding_id().to_string(),
            "body": String::from_utf8_lossy(xml.raw_body()),
        });
    }
    let mut buffer: Vec<u8> = Vec::new();
    let encoded = {
        let mut writer = JsonStreamWriter::new(&mut buffer as &mut dyn std::io::Write);
        body.encode_json(&mut writer, ctx).is_ok() && writer.finish_document().is_ok()
    };
    match encoded
        .then(|| serde_json::from_slice::<Value>(&buffer).ok())
        .flatten()
    {
        Some(value) => value,
        None => json!({"type_id": body.data_type_id().to_string(), "body": Value::Null}),
    }
}

/// How a write's JSON becomes the node's value: its built-in type and value rank.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WriteType {
    pub scalar: VariantScalarTypeId,
    /// OPC UA ValueRank: -1 scalar, 1 one dimension, -2 any, -3 scalar or one dimension, ...
    pub value_rank: i32,
}

/// The value to write, or why `value` does not fit the type.
pub fn to_variant(value: &Value, ty: WriteType) -> Result<Variant, String> {
    match value {
        Value::Array(items) if ty.value_rank != -1 => {
            let values = items
                .iter()
                .map(|item| scalar(item, ty.scalar))
                .collect::<Result<Vec<_>, _>>()?;
            Array::new(ty.scalar, values)
                .map(|a| Variant::Array(Box::new(a)))
                .map_err(|e| format!("not an array of {}: {e}", ty.scalar))
        }
        Value::Array(_) => Err(format!("the node holds one {}, not an array", ty.scalar)),
        _ if ty.value_rank >= 0 => Err(format!("the node holds an array of {}", ty.scalar)),
        _ => scalar(value, ty.scalar),
    }
}

fn scalar(value: &Value, ty: VariantScalarTypeId) -> Result<Variant, String> {
    use VariantScalarTypeId as T;
    let wrong = || format!("{value} is not a {ty}");
    let int = |min: i128, max: i128| -> Result<i128, String> {
        let n = match value {
            Value::Number(n) => crate::fields::whole_number(n),
            _ => None,
        }
        .ok_or_else(wrong)?;
        if n < min || n > max {
            return Err(format!("{n} is out of range for {ty} ({min} to {max})"));
        }
        Ok(n)
    };
    Ok(match ty {
        T::Boolean => Variant::Boolean(value.as_bool().ok_or_else(wrong)?),
        T::SByte => Variant::SByte(int(i8::MIN.into(), i8::MAX.into())? as i8),
        T::Byte => Variant::Byte(int(0, u8::MAX.into())? as u8),
        T::Int16 => Variant::Int16(int(i16::MIN.into(), i16::MAX.into())? as i16),
        T::UInt16 => Variant::UInt16(int(0, u16::MAX.into())? as u16),
        T::Int32 => Variant::Int32(int(i32::MIN.into(), i32::MAX.into())? as i32),
        T::UInt32 => Variant::UInt32(int(0, u32::MAX.into())? as u32),
        T::Int64 => Variant::Int64(int(i64::MIN.into(), i64::MAX.into())? as i64),
        T::UInt64 => Variant::UInt64(int(0, u64::MAX.into())? as u64),
        T::Float => {
            let f = value.as_f64().ok_or_else(wrong)?;
            if f.is_finite() && f.abs() > f64::from(f32::MAX) {
                return Err(format!("{f} is out of range for Float"));
            }
            Variant::Float(f as f32)
        }
        T::Double => Variant::Double(value.as_f64().ok_or_else(wrong)?),
        T::String => Variant::String(UAString::from(value.as_str().ok_or_else(wrong)?)),
        T::DateTime => {
            let s = value.as_str().ok_or_else(wrong)?;
            let d = chrono::DateTime::parse_from_rfc3339(s)
                .map_err(|_| format!("`{s}` is not an RFC 3339 date and time"))?;
            Variant::DateTime(Box::new(DateTime::from(d.with_timezone(&chrono::Utc))))
        }
        T::Guid => {
            let s = value.as_str().ok_or_else(wrong)?;
            Variant::Guid(Box::new(
                Guid::from_str(s).map_err(|_| format!("`{s}` is not a GUID"))?,
            ))
        }
        T::ByteString => {
            let s = value.as_str().ok_or_else(wrong)?;
            let b = BASE64
                .decode(s)
                .map_err(|_| format!("`{s}` is not base64"))?;
            Variant::ByteString(ByteString::from(b))
        }
        T::NodeId => {
            let s = value.as_str().ok_or_else(wrong)?;
            Variant::NodeId(Box::new(
                NodeId::from_str(s).map_err(|_| format!("`{s}` is not a node id"))?,
            ))
        }
        T::StatusCode => Variant::StatusCode(StatusCode::from(int(0, u32::MAX.into())? as u32)),
        T::QualifiedName => {
            let s = value.as_str().ok_or_else(wrong)?;
            let (ns, name) = match s.split_once(':') {
                Some((ns, name)) if ns.parse::<u16>().is_ok() => {
                    (ns.parse::<u16>().unwrap_or(0), name)
                }
                _ => (0, s),
            };
            Variant::QualifiedName(Box::new(QualifiedName::new(ns, name)))
        }
        T::LocalizedText => {
            let s = value.as_str().ok_or_else(wrong)?;
            Variant::LocalizedText(Box::new(LocalizedText::new("", s)))
        }
        other => return Err(format!("svc cannot write values of type {other}")),
    })
}

/// A JSON object of one field per member, for a description.
pub fn object(pairs: &[(&str, Value)]) -> Value {
    let mut map = Map::new();
    for (key, value) in pairs {
        if !value.is_null() {
            map.insert((*key).to_string(), value.clone());
        }
    }
    Value::Object(map)
}

#[cfg(test)]
mod tests {
    use super::*;
    use opcua::types::{ContextOwned, DecodingOptions, NamespaceMap};

    fn json_of(v: Variant) -> Value {
        let owned = ContextOwned::new_default(NamespaceMap::new(), DecodingOptions::default());
        to_json(&v, &owned.context())
    }

    #[test]
    fn scalars_to_json() {
        assert_eq!(
            json_of(Variant::Int64(-9007199254740993)),
            json!(-9007199254740993i64)
        );
        assert_eq!(json_of(Variant::UInt64(u64::MAX)), json!(u64::MAX));
        assert_eq!(json_of(Variant::Double(f64::NAN)), Value::Null);
        assert_eq!(json_of(Variant::Float(f32::INFINITY)), Value::Null);
        assert_eq!(
            json_of(Variant::ByteString(ByteString::from(vec![0u8, 255]))),
            json!("AP8=")
        );
        assert_eq!(
            json_of(Variant::StatusCode(StatusCode::BadNodeIdUnknown)),
            json!("BadNodeIdUnknown")
        );
        assert_eq!(
            json_of(Variant::QualifiedName(Box::new(QualifiedName::new(
                2, "Temp"
            )))),
            json!("2:Temp")
        );
        let matrix = Array::new_multi(
            VariantScalarTypeId::Int32,
            (1..=6).map(Variant::Int32).collect::<Vec<_>>(),
            vec![2u32, 3],
        )
        .unwrap();
        assert_eq!(
            json_of(Variant::Array(Box::new(matrix))),
            json!([[1, 2, 3], [4, 5, 6]])
        );
    }

    #[test]
    fn writes_are_range_checked() {
        let scalar = |s| WriteType {
            scalar: s,
            value_rank: -1,
        };
        assert_eq!(
            to_variant(&json!(-12), scalar(VariantScalarTypeId::Int16)),
            Ok(Variant::Int16(-12))
        );
        assert!(to_variant(&json!(40000), scalar(VariantScalarTypeId::Int16)).is_err());
        assert!(to_variant(&json!(-1), scalar(VariantScalarTypeId::UInt64)).is_err());
        assert_eq!(
            to_variant(&json!(u64::MAX), scalar(VariantScalarTypeId::UInt64)),
            Ok(Variant::UInt64(u64::MAX))
        );
        assert!(to_variant(&json!(1.5), scalar(VariantScalarTypeId::Int32)).is_err());
        assert!(to_variant(&json!("x"), scalar(VariantScalarTypeId::Double)).is_err());
        assert!(to_variant(&json!(1e300), scalar(VariantScalarTypeId::Float)).is_err());
        assert!(to_variant(&json!([1.0]), scalar(VariantScalarTypeId::Double)).is_err());
        let array = WriteType {
            scalar: VariantScalarTypeId::Double,
            value_rank: 1,
        };
        assert!(matches!(
            to_variant(&json!([1.0, 2.0]), array),
            Ok(Variant::Array(_))
        ));
        assert!(to_variant(&json!(1.0), array).is_err());
    }
}
