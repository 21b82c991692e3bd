//! Records, reports, tags and upstreams as the storage interface passes them, with the record
//! shapes both engines build the same way.

use crate::ids::TableRef;
use crate::store::{StoreError, StoreResult};
use serde_json::{Map, Value};
use std::time::Duration;

// ---- Records ----

/// An update's check, as [`Store::update_record`] takes it.
pub type UpdateCheck =
    Box<dyn FnOnce(&Map<String, Value>, &mut Map<String, Value>) -> Result<(), String> + Send>;

/// One record write of a group.
pub enum RecordWrite {
    Insert {
        table: TableRef,
        key: String,
        fields: Map<String, Value>,
    },
    Update {
        table: TableRef,
        key: String,
        patch: Map<String, Value>,
        check: UpdateCheck,
    },
    Delete {
        table: TableRef,
        key: String,
    },
}

impl RecordWrite {
    pub fn table(&self) -> &TableRef {
        match self {
            RecordWrite::Insert { table, .. }
            | RecordWrite::Update { table, .. }
            | RecordWrite::Delete { table, .. } => table,
        }
    }
}

/// What a committed write did.
#[derive(Debug)]
pub enum RecordWritten {
    /// The record as stored by an insert or an update.
    Record(Value),
    /// The update's or delete's record does not exist.
    Absent,
    /// The delete removed the record.
    Deleted,
}

/// Name of the system table holding a domain's collection definitions.
pub const COLLECTIONS: &str = "collections";

/// Drops the server-owned fields from a document before it is stored.
pub fn stored_fields(fields: &Map<String, Value>) -> Map<String, Value> {
    fields
        .iter()
        .filter(|(k, _)| !crate::schema::is_system_field(k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// The record as the API returns it, as JSON text, spliced from its stored document's text
/// (an object) without parsing it: the id and both dates first, then the document's members.
/// Keys and dates are validated text that JSON needs no escape for.
pub fn record_text(
    table: &TableRef,
    key: &str,
    data: &str,
    created: &str,
    updated: &str,
) -> String {
    let members = data
        .trim()
        .strip_prefix('{')
        .and_then(|d| d.strip_suffix('}'))
        .unwrap_or_default()
        .trim();
    let mut text = String::with_capacity(data.len() + 128);
    text.push_str("{\"id\":\"");
    text.push_str(&table.record_id(key));
    text.push_str("\",\"created_dt\":\"");
    text.push_str(created);
    text.push_str("\",\"updated_dt\":\"");
    text.push_str(updated);
    text.push('"');
    if !members.is_empty() {
        text.push(',');
        text.push_str(members);
    }
    text.push('}');
    text
}

/// `json` without the whitespace between its tokens, as serde_json prints it: PostgreSQL's
/// `jsonb` text puts a space after every `:` and `,`, and a record must read the same,
/// byte for byte, whichever engine stored it. One pass; strings are copied as they are.
pub fn compact_json(json: &str) -> String {
    let mut out = String::with_capacity(json.len());
    let mut in_string = false;
    let mut escaped = false;
    for c in json.chars() {
        if in_string {
            out.push(c);
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_string = false;
            }
        } else if c == '"' {
            in_string = true;
            out.push(c);
        } else if !c.is_ascii_whitespace() {
            out.push(c);
        }
    }
    out
}

/// The record as the API returns it, from what was just written (no read back); the same
/// members in the same order as the engines' record texts give.
pub fn written_record(
    table: &TableRef,
    key: &str,
    stored: Map<String, Value>,
    created: &str,
    updated: &str,
) -> Value {
    let mut record = Map::new();
    record.insert("id".into(), Value::String(table.record_id(key)));
    record.insert("created_dt".into(), Value::String(created.into()));
    record.insert("updated_dt".into(), Value::String(updated.into()));
    record.extend(stored);
    Value::Object(record)
}

/// A collection definition from its record in the domain's `collections` table.
pub fn collection_of_record(
    record: Option<Value>,
) -> StoreResult<Option<crate::schema::Collection>> {
    let Some(Value::Object(mut doc)) = record else {
        return Ok(None);
    };
    for system in ["id", "created_dt", "updated_dt"] {
        doc.remove(system);
    }
    Ok(Some(serde_json::from_value(Value::Object(doc))?))
}

// ---- Reports ----

/// How long a report may run, how many rows it may return and how many historian points it
/// may read.
#[derive(Debug, Clone, Copy)]
pub struct ReportLimits {
    pub timeout: Duration,
    pub max_rows: usize,
    /// Historian points the `historian` relation may be made of (each read from its block).
    pub max_points: u64,
}

impl ReportLimits {
    /// The limits of every report svc runs for a caller: `POST /svc/historian/query` and a
    /// process's query inputs.
    pub const API: ReportLimits = ReportLimits {
        timeout: Duration::from_secs(5),
        max_rows: 10_000,
        max_points: 5_000_000,
    };
}

/// A relation a report names, resolved in the active domain.
pub enum ReportRelation {
    Historian,
    Table(TableRef),
}

/// Each relation of a report query as the historian or one of `tables` (the domain's; names
/// match case-insensitively); anything else → 400.
pub fn resolve_report_relations(
    domain: &str,
    query: &crate::report_sql::CheckedQuery,
    tables: &[String],
) -> StoreResult<Vec<(String, ReportRelation)>> {
    use crate::report_sql::HISTORIAN;
    let mut relations = Vec::with_capacity(query.relations.len());
    for relation in &query.relations {
        if relation == HISTORIAN {
            relations.push((relation.clone(), ReportRelation::Historian));
            continue;
        }
        let Some(table) = tables.iter().find(|t| t.to_lowercase() == *relation) else {
            return Err(StoreError::Invalid(format!(
                "relation `{relation}` is neither `{HISTORIAN}` nor a table of domain `{domain}`"
            )));
        };
        let table = TableRef::new(domain, table).map_err(StoreError::Invalid)?;
        relations.push((relation.clone(), ReportRelation::Table(table)));
    }
    Ok(relations)
}

// ---- Tags ----

/// Name of the system table holding a domain's tags.
pub const TAGS: &str = "tags";
/// Name of the per-domain system table holding the domain's namespaces (UNS branches).
pub const NAMESPACES: &str = "namespaces";
/// Name of the per-domain system table holding upstreams.
pub const UPSTREAMS: &str = "upstreams";
/// Name of the per-domain system table holding connectors (OPC UA, Modbus).
pub const CONNECTORS: &str = "connectors";

/// What the registry keeps of a tag record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TagRow {
    pub path: String,
    pub historize: bool,
    /// The tag's own historian retention (a duration such as `30d`), if it has one.
    pub retention: Option<String>,
    /// When the tag was declared (RFC 3339), which decides ownership between old duplicates.
    pub created: String,
    pub unit: Option<String>,
    /// The tag's `compression` member when it is an object (checked when written).
    pub compression: Option<Value>,
}

// ---- Upstreams ----

/// An upstream record's key, fields and password.
pub type StoredUpstream = (String, Map<String, Value>, Option<String>);

/// Sorted runs of consecutive numbers, as (first, last).
pub fn seq_runs(seqs: &[i64]) -> Vec<(i64, i64)> {
    let mut sorted = seqs.to_vec();
    sorted.sort_unstable();
    let mut runs: Vec<(i64, i64)> = Vec::new();
    for seq in sorted {
        match runs.last_mut() {
            Some((_, last)) if seq <= *last + 1 => *last = seq.max(*last),
            _ => runs.push((seq, seq)),
        }
    }
    runs
}

#[cfg(test)]
mod compact_tests {
    use super::compact_json;
    use proptest::prelude::*;
    use serde_json::Value;

    #[test]
    fn spaces_go_and_strings_stay() {
        assert_eq!(
            compact_json(r#"{"a": 1, "b": [true, null], "c": "x: y, \"z\" "}"#),
            r#"{"a":1,"b":[true,null],"c":"x: y, \"z\" "}"#
        );
    }

    fn json_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            "[ -~\\n\\t\"\\\\é]{0,12}".prop_map(Value::from),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
                prop::collection::btree_map("[a-z :,]{0,5}", inner, 0..4)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #[test]
        fn a_spaced_document_compacts_to_serde_jsons_text(value in json_value()) {
            let pretty = serde_json::to_string_pretty(&value).unwrap();
            prop_assert_eq!(compact_json(&pretty), value.to_string());
        }
    }
}

/// A server certificate a domain's connectors met (`GET /svc/connectors/certificates`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ServerCertificate {
    /// SHA-1 of the DER, in hex (as OPC UA tools show it).
    pub thumbprint: String,
    #[serde(skip)]
    pub der: Vec<u8>,
    /// `pending`, `trusted` or `rejected`.
    pub state: String,
    pub first_seen_ms: i64,
}
