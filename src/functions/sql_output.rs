//! A process's `sql` output, parsed (sqlparser, the SQLite dialect) when the process is saved:
//! exactly one `INSERT INTO <table> (<columns>) VALUES (<values>)` or `UPDATE <table> SET
//! <column> = <value>, … WHERE id = <value>`, whose values are named parameters (`:name`,
//! `$name`, `@name`) taken from the run's output, or literals. It is never run as SQL: after
//! a run it becomes the same validated record create or update as the REST routes make, in the
//! process's own domain. Anything else is refused with a sentence saying what is allowed.

use serde_json::{Map, Value};
use sqlparser::ast::{
    AssignmentTarget, BinaryOperator, Expr, ObjectName, ObjectNamePart, SetExpr, Statement,
    TableFactor, TableObject, UnaryOperator, Value as SqlValue,
};
use sqlparser::dialect::SQLiteDialect;
use sqlparser::parser::Parser;

/// Where a value comes from.
#[derive(Debug, Clone, PartialEq)]
pub enum Source {
    /// A member of the run's output.
    Param(String),
    Literal(Value),
}

/// The record write a `sql` output stands for.
#[derive(Debug, Clone, PartialEq)]
pub enum SqlWrite {
    Insert {
        table: String,
        columns: Vec<(String, Source)>,
    },
    Update {
        table: String,
        sets: Vec<(String, Source)>,
        id: Source,
    },
}

const SHAPE: &str =
    "an sql output must be one `INSERT INTO <table> (<columns>) VALUES (<values>)` \
    or `UPDATE <table> SET <column> = <value>, … WHERE id = <value>`, values being named \
    parameters (:name) or literals";

fn refuse(what: &str) -> String {
    format!("{what}: {SHAPE}")
}

/// Parses an output's query.
pub fn parse(query: &str) -> Result<SqlWrite, String> {
    let mut statements =
        Parser::parse_sql(&SQLiteDialect {}, query).map_err(|e| format!("invalid SQL: {e}"))?;
    if statements.len() != 1 {
        return Err(refuse("one statement only"));
    }
    match statements.remove(0) {
        Statement::Insert(insert) => {
            if insert.or.is_some()
                || insert.on.is_some()
                || insert.returning.is_some()
                || !insert.assignments.is_empty()
                || insert.replace_into
            {
                return Err(refuse("no OR/ON CONFLICT/RETURNING clauses"));
            }
            let TableObject::TableName(name) = &insert.table else {
                return Err(refuse("a plain table name"));
            };
            let table = table_name(name)?;
            let Some(source) = insert.source else {
                return Err(refuse("VALUES are required"));
            };
            let SetExpr::Values(values) = *source.body else {
                return Err(refuse("VALUES, not a query"));
            };
            let [row] = values.rows.as_slice() else {
                return Err(refuse("exactly one row of VALUES"));
            };
            if insert.columns.is_empty() || insert.columns.len() != row.len() {
                return Err(refuse("as many named columns as values"));
            }
            let columns = insert
                .columns
                .iter()
                .zip(row)
                .map(|(column, value)| Ok((column.value.clone(), source_of(value)?)))
                .collect::<Result<_, String>>()?;
            Ok(SqlWrite::Insert { table, columns })
        }
        Statement::Update {
            table,
            assignments,
            from,
            selection,
            returning,
            or,
            limit,
        } => {
            if from.is_some() || returning.is_some() || or.is_some() || limit.is_some() {
                return Err(refuse("no FROM/RETURNING/OR/LIMIT clauses"));
            }
            let TableFactor::Table { name, .. } = &table.relation else {
                return Err(refuse("a plain table name"));
            };
            if !table.joins.is_empty() {
                return Err(refuse("no joins"));
            }
            let table = table_name(name)?;
            let sets = assignments
                .iter()
                .map(|assignment| match &assignment.target {
                    AssignmentTarget::ColumnName(column) => {
                        Ok((table_name(column)?, source_of(&assignment.value)?))
                    }
                    AssignmentTarget::Tuple(_) => Err(refuse("one column per assignment")),
                })
                .collect::<Result<Vec<_>, String>>()?;
            let id = match selection {
                Some(Expr::BinaryOp {
                    left,
                    op: BinaryOperator::Eq,
                    right,
                }) if matches!(&*left, Expr::Identifier(ident) if ident.value.eq_ignore_ascii_case("id")) => {
                    source_of(&right)?
                }
                _ => return Err(refuse("WHERE id = <value>")),
            };
            Ok(SqlWrite::Update { table, sets, id })
        }
        _ => Err(refuse("INSERT or UPDATE only")),
    }
}

fn table_name(name: &ObjectName) -> Result<String, String> {
    match name.0.as_slice() {
        [ObjectNamePart::Identifier(ident)] => Ok(ident.value.clone()),
        _ => Err(refuse(
            "a name of the process's own domain, without a schema",
        )),
    }
}

fn source_of(expr: &Expr) -> Result<Source, String> {
    match expr {
        Expr::Value(value) => match &value.value {
            SqlValue::Placeholder(placeholder) => {
                let name = placeholder
                    .strip_prefix([':', '$', '@'])
                    .filter(|name| {
                        name.starts_with(|c: char| c == '_' || c.is_ascii_alphabetic())
                            && name.chars().all(|c| c == '_' || c.is_ascii_alphanumeric())
                    })
                    .ok_or_else(|| refuse("named parameters (:name), not `?` or numbers"))?;
                Ok(Source::Param(name.to_string()))
            }
            SqlValue::Number(text, _) => number(text),
            SqlValue::SingleQuotedString(text) => Ok(Source::Literal(Value::String(text.clone()))),
            SqlValue::Boolean(b) => Ok(Source::Literal(Value::Bool(*b))),
            SqlValue::Null => Ok(Source::Literal(Value::Null)),
            other => Err(refuse(&format!("unsupported value `{other}`"))),
        },
        Expr::UnaryOp {
            op: UnaryOperator::Minus,
            expr,
        } => match &**expr {
            Expr::Value(value) => match &value.value {
                SqlValue::Number(text, _) => number(&format!("-{text}")),
                _ => Err(refuse("a number after `-`")),
            },
            _ => Err(refuse("a number after `-`")),
        },
        other => Err(refuse(&format!(
            "`{other}` is not a parameter or a literal"
        ))),
    }
}

fn number(text: &str) -> Result<Source, String> {
    serde_json::from_str::<serde_json::Number>(text)
        .map(|n| Source::Literal(Value::Number(n)))
        .map_err(|_| refuse(&format!("`{text}` is not a number")))
}

impl Source {
    /// The value from a run's output (an object).
    pub fn value(&self, output: &Value) -> Result<Value, String> {
        match self {
            Source::Literal(value) => Ok(value.clone()),
            Source::Param(name) => output
                .get(name)
                .cloned()
                .ok_or_else(|| format!("the output has no `{name}` for the sql output")),
        }
    }
}

/// The fields of columns (or assignments) bound to a run's output.
pub fn bind(pairs: &[(String, Source)], output: &Value) -> Result<Map<String, Value>, String> {
    pairs
        .iter()
        .map(|(column, source)| Ok((column.clone(), source.value(output)?)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn inserts_and_updates_become_record_writes() {
        assert_eq!(
            parse("INSERT INTO orders (line, qty, note) VALUES (:line, $qty, 'rush')").unwrap(),
            SqlWrite::Insert {
                table: "orders".into(),
                columns: vec![
                    ("line".into(), Source::Param("line".into())),
                    ("qty".into(), Source::Param("qty".into())),
                    ("note".into(), Source::Literal(json!("rush"))),
                ],
            }
        );
        assert_eq!(
            parse("update orders set qty = :qty, done = true, delta = -2.5 where id = :id")
                .unwrap(),
            SqlWrite::Update {
                table: "orders".into(),
                sets: vec![
                    ("qty".into(), Source::Param("qty".into())),
                    ("done".into(), Source::Literal(json!(true))),
                    ("delta".into(), Source::Literal(json!(-2.5))),
                ],
                id: Source::Param("id".into()),
            }
        );
    }

    #[test]
    fn anything_else_is_refused() {
        for bad in [
            "DELETE FROM orders WHERE id = :id",
            "SELECT * FROM orders",
            "INSERT INTO orders (a) VALUES (:a); INSERT INTO orders (a) VALUES (:a)",
            "INSERT INTO orders VALUES (:a)",
            "INSERT INTO orders (a, b) VALUES (:a)",
            "INSERT INTO orders (a) VALUES (:a), (:b)",
            "INSERT INTO orders (a) SELECT x FROM t",
            "INSERT INTO other.orders (a) VALUES (:a)",
            "INSERT INTO orders (a) VALUES (:a + 1)",
            "INSERT INTO orders (a) VALUES (?)",
            "INSERT OR REPLACE INTO orders (a) VALUES (:a)",
            "UPDATE orders SET a = :a",
            "UPDATE orders SET a = :a WHERE qty > 1",
            "UPDATE orders SET a = (SELECT 1) WHERE id = :id",
            "not sql at all",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn parameters_bind_from_the_output() {
        let SqlWrite::Insert { columns, .. } =
            parse("INSERT INTO t (a, b) VALUES (:a, 7)").unwrap()
        else {
            panic!("an insert");
        };
        let fields = bind(&columns, &json!({"a": "x", "extra": 1})).unwrap();
        assert_eq!(Value::Object(fields), json!({"a": "x", "b": 7}));
        assert!(bind(&columns, &json!({})).unwrap_err().contains("`a`"));
    }
}
