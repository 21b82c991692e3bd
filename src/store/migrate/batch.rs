//! What `svc migrate` moves between the engines: a table's copy plan ([`TableCopy`]: its
//! columns with their PostgreSQL types, its key, how the target takes it) and one batch of its
//! rows, column by column ([`Batch`]), as PostgreSQL's `unnest` takes them. Engine-neutral: the
//! SQLite side fills batches, the PostgreSQL side inserts them.

use crate::store::{StoreError, StoreResult};
use rusqlite::types::ValueRef;
use tokio_postgres::types::ToSql;

/// A column's type in PostgreSQL, and how an SQLite value becomes one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Text,
    /// Text in SQLite, `jsonb` in PostgreSQL (a record's document).
    Json,
    BigInt,
    Int,
    SmallInt,
    Float,
    /// An integer 0/1 in SQLite.
    Bool,
    Bytes,
}

impl Kind {
    /// The array type `unnest` reads the column's values from.
    pub fn array_type(self) -> &'static str {
        match self {
            Kind::Text | Kind::Json => "text[]",
            Kind::BigInt | Kind::Int | Kind::SmallInt => "bigint[]",
            Kind::Float => "float8[]",
            Kind::Bool => "boolean[]",
            Kind::Bytes => "bytea[]",
        }
    }

    /// The cast from the array's element type to the column's.
    pub fn cast(self) -> &'static str {
        match self {
            Kind::Json => "::jsonb",
            Kind::Int => "::integer",
            Kind::SmallInt => "::smallint",
            _ => "",
        }
    }
}

/// One column of a copied table (the same name on both sides).
#[derive(Debug, Clone)]
pub struct Column {
    pub name: &'static str,
    pub kind: Kind,
    /// What the column reads as where the source lacks it (an SQL literal).
    pub absent: &'static str,
}

pub const fn col(name: &'static str, kind: Kind) -> Column {
    Column {
        name,
        kind,
        absent: "NULL",
    }
}

/// A column that an older database may lack, read as `absent` (an SQL literal) there.
pub const fn col_or(name: &'static str, kind: Kind, absent: &'static str) -> Column {
    Column { name, kind, absent }
}

/// How a copied table is partitioned in PostgreSQL: the column that routes a row, and which of
/// the historian's partitioned tables it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Partitioning {
    /// `hist_points`, by `ts`.
    Points,
    /// `hist_blocks`, by `start_ts`.
    Blocks,
}

impl Partitioning {
    pub fn column(self) -> &'static str {
        match self {
            Partitioning::Points => "ts",
            Partitioning::Blocks => "start_ts",
        }
    }
}

/// How one table is copied.
#[derive(Debug, Clone)]
pub struct TableCopy {
    /// What the progress bar, the progress table and the summary call it.
    pub label: String,
    /// The SQLite table (unquoted; quoted where used).
    pub source: String,
    /// The PostgreSQL relation, quoted (and schema-qualified where it has a schema).
    pub target: String,
    pub columns: Vec<Column>,
    /// The columns that order and resume the copy: the source's primary key.
    pub key: Vec<&'static str>,
    /// The target has an `instance` column: per-instance state, copied as this instance's.
    pub per_instance: bool,
    /// An identity column given explicit values (`OVERRIDING SYSTEM VALUE`), whose sequence is
    /// moved past them afterwards.
    pub identity: Option<&'static str>,
    /// The `ON CONFLICT` clause: rows already copied are left as they are.
    pub on_conflict: &'static str,
    /// Rows per batch (one statement and one transaction each).
    pub batch_rows: usize,
    /// The historian's points and blocks: each batch first creates the partitions its times
    /// need.
    pub partitioned: Option<Partitioning>,
}

pub const DO_NOTHING: &str = "ON CONFLICT DO NOTHING";

/// The values of one column of a batch.
#[derive(Debug)]
pub enum Values {
    Text(Vec<Option<String>>),
    Int(Vec<Option<i64>>),
    Float(Vec<Option<f64>>),
    Bool(Vec<Option<bool>>),
    Bytes(Vec<Option<Vec<u8>>>),
}

impl Values {
    pub fn new(kind: Kind) -> Values {
        match kind {
            Kind::Text | Kind::Json => Values::Text(Vec::new()),
            Kind::BigInt | Kind::Int | Kind::SmallInt => Values::Int(Vec::new()),
            Kind::Float => Values::Float(Vec::new()),
            Kind::Bool => Values::Bool(Vec::new()),
            Kind::Bytes => Values::Bytes(Vec::new()),
        }
    }

    /// Appends an SQLite value; one of another type than the column's is an error naming it.
    pub fn push(&mut self, value: ValueRef<'_>, column: &str) -> StoreResult<()> {
        let wrong = |what: &str| {
            StoreError::Internal(format!(
                "column `{column}` holds {what} where the migration expects another type"
            ))
        };
        match (self, value) {
            (Values::Text(v), ValueRef::Null) => v.push(None),
            (Values::Int(v), ValueRef::Null) => v.push(None),
            (Values::Float(v), ValueRef::Null) => v.push(None),
            (Values::Bool(v), ValueRef::Null) => v.push(None),
            (Values::Bytes(v), ValueRef::Null) => v.push(None),
            (Values::Text(v), ValueRef::Text(t)) => v.push(Some(
                std::str::from_utf8(t)
                    .map_err(|_| wrong("text that is not UTF-8"))?
                    .to_string(),
            )),
            (Values::Text(v), ValueRef::Integer(n)) => v.push(Some(n.to_string())),
            (Values::Text(v), ValueRef::Real(x)) => v.push(Some(x.to_string())),
            (Values::Int(v), ValueRef::Integer(n)) => v.push(Some(n)),
            (Values::Float(v), ValueRef::Real(x)) => v.push(Some(x)),
            (Values::Float(v), ValueRef::Integer(n)) => v.push(Some(n as f64)),
            (Values::Bool(v), ValueRef::Integer(n)) => v.push(Some(n != 0)),
            (Values::Bytes(v), ValueRef::Blob(b) | ValueRef::Text(b)) => v.push(Some(b.to_vec())),
            (_, ValueRef::Text(_)) => return Err(wrong("text")),
            (_, ValueRef::Integer(_)) => return Err(wrong("an integer")),
            (_, ValueRef::Real(_)) => return Err(wrong("a real number")),
            (_, ValueRef::Blob(_)) => return Err(wrong("a blob")),
        }
        Ok(())
    }

    /// The values as a statement parameter (an array).
    pub fn as_param(&self) -> &(dyn ToSql + Sync) {
        match self {
            Values::Text(v) => v,
            Values::Int(v) => v,
            Values::Float(v) => v,
            Values::Bool(v) => v,
            Values::Bytes(v) => v,
        }
    }
}

/// Rows of one table, column by column, with the key of the last one (where the next batch
/// starts, kept in the progress table as JSON).
#[derive(Debug)]
pub struct Batch {
    pub columns: Vec<Values>,
    pub rows: usize,
    pub last_key: Option<serde_json::Value>,
}

impl Batch {
    /// The values of column `name` of `table`, when they are integers.
    pub fn ints(&self, table: &TableCopy, name: &str) -> Option<&[Option<i64>]> {
        let at = table.columns.iter().position(|c| c.name == name)?;
        match self.columns.get(at)? {
            Values::Int(v) => Some(v),
            _ => None,
        }
    }
}
