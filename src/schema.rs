//! Collections (table schemas): their definition, its validation, and the validation of records
//! against it. Pure logic; storing definitions and building indexes is the store's job.

use crate::ids::{is_identifier, RecordId};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Collection {
    pub name: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub fields: Vec<FieldDef>,
    #[serde(default, rename = "indexDetails")]
    pub index_details: Vec<IndexDef>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FieldDef {
    pub name: String,
    #[serde(rename = "type")]
    pub field_type: FieldType,
    #[serde(default)]
    pub required: bool,
    /// Full-text indexed: `@@` filters on it use an FTS5 index instead of scanning.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub searchable: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FieldType {
    String,
    Number,
    Boolean,
    Date,
    Json,
    File,
    Url,
    Editor,
    Relation,
    Record,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IndexDef {
    pub fields: Vec<String>,
    #[serde(default, rename = "isUnique")]
    pub is_unique: bool,
}

/// Names a collection may not take: they are system tables with their own rules.
pub const RESERVED_TABLES: &[&str] = &["users", "groups", "api_keys"];

impl Collection {
    /// Checks the definition itself; the error names the offending part.
    pub fn validate(&self) -> Result<(), String> {
        if !is_identifier(&self.name) {
            return Err(format!("invalid collection name `{}`", self.name));
        }
        if matches!(self.name.as_str(), "collections" | "tags")
            || RESERVED_TABLES.contains(&self.name.as_str())
        {
            return Err(format!("`{}` is a system table name", self.name));
        }
        let mut seen = std::collections::HashSet::new();
        for field in &self.fields {
            if !is_identifier(&field.name) || is_system_field(&field.name) {
                return Err(format!("invalid field name `{}`", field.name));
            }
            if !seen.insert(field.name.as_str()) {
                return Err(format!("field `{}` is defined twice", field.name));
            }
        }
        for index in &self.index_details {
            if index.fields.is_empty() {
                return Err("an index needs at least one field".into());
            }
            for name in &index.fields {
                if !is_identifier(name) {
                    return Err(format!("invalid index field `{name}`"));
                }
            }
        }
        Ok(())
    }

    /// Checks a complete record (after merging an update) against the definition.
    pub fn check_record(&self, record: &Map<String, Value>) -> Result<(), String> {
        for field in &self.fields {
            match record.get(&field.name) {
                None | Some(Value::Null) if field.required => {
                    return Err(format!("field `{}` is required", field.name));
                }
                None | Some(Value::Null) => {}
                Some(value) => check_type(&field.name, field.field_type, value)?,
            }
        }
        Ok(())
    }
}

/// Fields the server owns on every record.
pub fn is_system_field(name: &str) -> bool {
    matches!(name, "id" | "created_dt" | "updated_dt")
}

fn check_type(name: &str, expected: FieldType, value: &Value) -> Result<(), String> {
    let ok = match expected {
        FieldType::String | FieldType::Editor => value.is_string(),
        FieldType::Number => value.is_number(),
        FieldType::Boolean => value.is_boolean(),
        FieldType::Date => value
            .as_str()
            .is_some_and(|s| crate::time::parse_rfc3339(s).is_some()),
        FieldType::Json => true,
        FieldType::Url => value.as_str().is_some_and(is_url),
        FieldType::File => is_one_or_many(value, |v| v.is_string()),
        FieldType::Relation | FieldType::Record => is_one_or_many(value, |v| {
            v.as_str().is_some_and(|s| RecordId::parse(s).is_ok())
        }),
    };
    if ok {
        Ok(())
    } else {
        Err(format!("field `{name}` must be {}", describe(expected)))
    }
}

fn is_one_or_many(value: &Value, item: impl Fn(&Value) -> bool) -> bool {
    match value {
        Value::Array(items) => items.iter().all(item),
        other => item(other),
    }
}

fn is_url(s: &str) -> bool {
    s.split_once("://").is_some_and(|(scheme, rest)| {
        !rest.is_empty()
            && scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
            && !scheme.is_empty()
    })
}

fn describe(t: FieldType) -> &'static str {
    match t {
        FieldType::String | FieldType::Editor => "a string",
        FieldType::Number => "a number",
        FieldType::Boolean => "a boolean",
        FieldType::Date => "an RFC 3339 date string",
        FieldType::Json => "JSON",
        FieldType::Url => "a URL",
        FieldType::File => "a file name or a list of them",
        FieldType::Relation | FieldType::Record => "a record id or a list of them",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn products() -> Collection {
        serde_json::from_value(json!({
            "name": "products",
            "fields": [
                {"name": "sku", "type": "string", "required": true},
                {"name": "price", "type": "number"},
                {"name": "active", "type": "boolean"},
                {"name": "launched", "type": "date"},
                {"name": "site", "type": "relation"},
                {"name": "manual", "type": "url"}
            ],
            "indexDetails": [{"fields": ["sku"], "isUnique": true}]
        }))
        .unwrap()
    }

    fn obj(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn accepts_valid_records() {
        let c = products();
        c.validate().unwrap();
        c.check_record(&obj(json!({"sku": "A1", "price": 3.5, "active": true,
            "launched": "2026-01-01T00:00:00Z", "site": "demo.sites:s1",
            "manual": "https://example.com/m.pdf", "extra": [1, 2]})))
            .unwrap();
    }

    #[test]
    fn names_the_bad_field() {
        let c = products();
        let err = c
            .check_record(&obj(json!({"sku": "A1", "price": "cheap"})))
            .unwrap_err();
        assert!(err.contains("`price`"), "{err}");
        let err = c.check_record(&obj(json!({"price": 1}))).unwrap_err();
        assert!(err.contains("`sku` is required"), "{err}");
        let err = c
            .check_record(&obj(json!({"sku": "A", "launched": "soon"})))
            .unwrap_err();
        assert!(err.contains("`launched`"), "{err}");
        let err = c
            .check_record(&obj(json!({"sku": "A", "site": "nope"})))
            .unwrap_err();
        assert!(err.contains("`site`"), "{err}");
        let err = c
            .check_record(&obj(json!({"sku": "A", "manual": "file.pdf"})))
            .unwrap_err();
        assert!(err.contains("`manual`"), "{err}");
    }

    #[test]
    fn rejects_bad_definitions() {
        let mut c = products();
        c.name = "x;drop".into();
        assert!(c.validate().is_err());
        let mut c = products();
        c.fields[0].name = "created_dt".into();
        assert!(c.validate().is_err());
        let mut c = products();
        c.index_details[0].fields = vec!["a'--".into()];
        assert!(c.validate().is_err());
        let mut c = products();
        c.name = "users".into();
        assert!(c.validate().is_err());
        let unknown_type = serde_json::from_value::<Collection>(
            json!({"name": "t", "fields": [{"name": "a", "type": "int"}]}),
        );
        assert!(unknown_type.is_err());
    }
}
