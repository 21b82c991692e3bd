//! Report SQL: the read-only query a plant engineer sends to `POST /svc/historian/query`.
//! Parsed with `sqlparser` (SQLite dialect) and accepted only when it is one `SELECT` (joins,
//! aggregates, `GROUP BY`, window functions and its own `WITH` are fine) whose relations are
//! names the caller's domain provides (`historian` and the domain's tables) or its own CTEs, and
//! whose functions are on a list of pure SQL functions. Anything else is refused with a sentence
//! naming it. The store then defines each relation as a CTE over the domain's rows only, so
//! another domain's data is unreachable by construction: no name in the checked query can reach
//! a physical table.

pub mod scope;

use sqlparser::ast::{
    Cte, Expr, ObjectName, Query, SetExpr, Statement, TableFactor, Value, Visit, Visitor, With,
};
use sqlparser::dialect::SQLiteDialect;
use sqlparser::parser::Parser;
use std::collections::BTreeSet;
use std::ops::ControlFlow;

/// The relation holding the domain's historized values.
pub const HISTORIAN: &str = "historian";

/// Longest query text accepted.
const MAX_SQL: usize = 64 * 1024;

/// Functions a report may call: SQLite's pure scalar, aggregate, window, date and JSON functions.
const FUNCTIONS: &[&str] = &[
    "abs",
    "avg",
    "ceil",
    "ceiling",
    "char",
    "coalesce",
    "count",
    "cume_dist",
    "date",
    "datetime",
    "dense_rank",
    "exp",
    "first_value",
    "floor",
    "format",
    "glob",
    "group_concat",
    "hex",
    "ifnull",
    "iif",
    "instr",
    "json",
    "json_array",
    "json_array_length",
    "json_extract",
    "json_group_array",
    "json_group_object",
    "json_object",
    "json_type",
    "json_valid",
    "julianday",
    "lag",
    "last_value",
    "lead",
    "length",
    "like",
    "ln",
    "log",
    "log10",
    "log2",
    "lower",
    "ltrim",
    "max",
    "min",
    "mod",
    "nth_value",
    "ntile",
    "nullif",
    "percent_rank",
    "pi",
    "pow",
    "power",
    "printf",
    "quote",
    "rank",
    "replace",
    "round",
    "row_number",
    "rtrim",
    "sign",
    "sqrt",
    "strftime",
    "string_agg",
    "substr",
    "substring",
    "sum",
    "time",
    "timediff",
    "total",
    "trim",
    "trunc",
    "typeof",
    "unicode",
    "unixepoch",
    "upper",
];

/// Table-valued functions a report may use in `FROM` (they read only their arguments).
const TABLE_FUNCTIONS: &[&str] = &["json_each", "json_tree"];

/// A query that passed the checks.
#[derive(Debug)]
pub struct CheckedQuery {
    query: Query,
    /// The domain relations it names (`historian`, table names), lower case.
    pub relations: BTreeSet<String>,
}

/// Parses and checks a report query; the error is one sentence naming what was refused.
pub fn check(sql: &str) -> Result<CheckedQuery, String> {
    if sql.len() > MAX_SQL {
        return Err(format!("the query is longer than {MAX_SQL} bytes"));
    }
    let mut statements = Parser::parse_sql(&SQLiteDialect {}, sql)
        .map_err(|e| format!("the query is not valid SQL: {e}"))?;
    let statement = match statements.len() {
        1 => statements.remove(0),
        0 => return Err("the query is empty".into()),
        n => return Err(format!("only one statement is allowed, got {n}")),
    };
    let Statement::Query(query) = statement else {
        return Err(format!(
            "only a SELECT is allowed, not `{}`",
            first_words(&statement.to_string())
        ));
    };
    let mut checker = Checker::default();
    if let ControlFlow::Break(refused) = query.visit(&mut checker) {
        return Err(refused);
    }
    let relations = checker
        .relations
        .into_iter()
        .filter(|r| !checker.ctes.contains(r))
        .collect();
    Ok(CheckedQuery {
        query: *query,
        relations,
    })
}

impl CheckedQuery {
    /// The historian points the query can read (see [`crate::report_sql::scope`]).
    pub fn historian_scope(&self) -> crate::report_sql::scope::HistorianScope {
        crate::report_sql::scope::historian_scope(&self.query)
    }

    /// The query's SQL with `definitions` (`(name, SELECT …)`, one per relation it names)
    /// placed as CTEs before its own.
    pub fn with_relations(mut self, definitions: &[(String, String)]) -> Result<String, String> {
        if definitions.is_empty() {
            return Ok(self.query.to_string());
        }
        let text: Vec<String> = definitions
            .iter()
            .map(|(name, select)| format!("\"{name}\" AS ({select})"))
            .collect();
        let wrapper = format!("WITH {} SELECT 1", text.join(", "));
        let parsed = Parser::parse_sql(&SQLiteDialect {}, &wrapper)
            .map_err(|e| format!("internal relation definition failed to parse: {e}"))?;
        let ours: Vec<Cte> = match parsed.into_iter().next() {
            Some(Statement::Query(q)) => q.with.map(|w| w.cte_tables).unwrap_or_default(),
            _ => Vec::new(),
        };
        match &mut self.query.with {
            Some(with) => {
                let theirs = std::mem::take(&mut with.cte_tables);
                with.cte_tables = ours.into_iter().chain(theirs).collect();
            }
            None => {
                self.query.with = Some(With {
                    with_token: sqlparser::ast::helpers::attached_token::AttachedToken::empty(),
                    recursive: false,
                    cte_tables: ours,
                })
            }
        }
        Ok(self.query.to_string())
    }
}

/// Walks the query: collects relations and CTE names, refuses what a report may not do.
#[derive(Default)]
struct Checker {
    relations: BTreeSet<String>,
    ctes: BTreeSet<String>,
}

/// Whether a query body is made only of SELECTs, nested queries and VALUES (each side of a
/// UNION, INTERSECT or EXCEPT included).
fn reads_through_from(body: &SetExpr) -> bool {
    match body {
        SetExpr::Select(_) | SetExpr::Query(_) | SetExpr::Values(_) => true,
        SetExpr::SetOperation { left, right, .. } => {
            reads_through_from(left) && reads_through_from(right)
        }
        _ => false,
    }
}

impl Visitor for Checker {
    type Break = String;

    fn pre_visit_query(&mut self, query: &Query) -> ControlFlow<String> {
        if let Some(with) = &query.with {
            for cte in &with.cte_tables {
                let name = cte.alias.name.value.to_lowercase();
                if name == HISTORIAN {
                    return ControlFlow::Break(format!("a CTE may not be named `{HISTORIAN}`"));
                }
                self.ctes.insert(name);
            }
        }
        // Only what reads through FROM (whose relations are checked) may make up a query:
        // `TABLE x` names a relation no FROM holds, so it is refused with the writes.
        if reads_through_from(&query.body) {
            ControlFlow::Continue(())
        } else {
            ControlFlow::Break("only a SELECT is allowed".into())
        }
    }

    fn pre_visit_table_factor(&mut self, factor: &TableFactor) -> ControlFlow<String> {
        match factor {
            TableFactor::Table { name, args, .. } => {
                let relation = single_name(name)?;
                if args.is_some() {
                    if !TABLE_FUNCTIONS.contains(&relation.as_str()) {
                        return ControlFlow::Break(format!(
                            "table function `{relation}` is not allowed"
                        ));
                    }
                    return ControlFlow::Continue(());
                }
                let plain = relation
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_');
                if !plain || relation.starts_with("sqlite_") || relation.starts_with("pragma_") {
                    return ControlFlow::Break(format!("relation `{relation}` is not allowed"));
                }
                self.relations.insert(relation);
                ControlFlow::Continue(())
            }
            TableFactor::Derived { .. } | TableFactor::NestedJoin { .. } => {
                ControlFlow::Continue(())
            }
            other => ControlFlow::Break(format!(
                "`{}` is not allowed in FROM",
                first_words(&other.to_string())
            )),
        }
    }

    fn pre_visit_expr(&mut self, expr: &Expr) -> ControlFlow<String> {
        if let Expr::Function(function) = expr {
            let name = single_name(&function.name)?;
            if !FUNCTIONS.contains(&name.as_str()) {
                return ControlFlow::Break(format!("function `{name}` is not allowed"));
            }
        }
        ControlFlow::Continue(())
    }

    fn pre_visit_value(&mut self, value: &Value) -> ControlFlow<String> {
        match value {
            Value::Placeholder(p) => ControlFlow::Break(format!(
                "parameters such as `{p}` are not supported; write the value into the query"
            )),
            _ => ControlFlow::Continue(()),
        }
    }
}

/// A one-part name in lower case; `schema.table` and the like are refused.
fn single_name(name: &ObjectName) -> ControlFlow<String, String> {
    match name.0.as_slice() {
        [part] => match part.as_ident() {
            Some(ident) => ControlFlow::Continue(ident.value.to_lowercase()),
            None => ControlFlow::Break(format!("`{name}` is not allowed")),
        },
        _ => ControlFlow::Break(format!("qualified name `{name}` is not allowed")),
    }
}

/// The first few words of a statement, for messages.
fn first_words(sql: &str) -> String {
    sql.split_whitespace().take(3).collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn relations(sql: &str) -> Vec<String> {
        match check(sql) {
            Ok(q) => q.relations.into_iter().collect(),
            Err(e) => panic!("{sql}: {e}"),
        }
    }

    fn refused(sql: &str, needle: &str) {
        match check(sql) {
            Ok(q) => panic!("{sql} was accepted: {q:?}"),
            Err(e) => assert!(e.contains(needle), "{sql}: `{e}` lacks `{needle}`"),
        }
    }

    #[test]
    fn selects_with_joins_aggregates_windows_and_ctes_pass() {
        assert_eq!(relations("SELECT * FROM historian"), ["historian"]);
        assert_eq!(
            relations(
                "WITH t AS (SELECT topic, avg(value) AS a FROM historian GROUP BY topic) \
                 SELECT p.name, t.a, row_number() OVER (ORDER BY t.a) FROM t \
                 JOIN Products p ON p.sku = t.topic WHERE p.id IN (SELECT id FROM orders)"
            ),
            ["historian", "orders", "products"]
        );
        assert_eq!(
            relations("SELECT j.value FROM orders o, json_each(o.items) j"),
            ["orders"]
        );
    }

    #[test]
    fn anything_but_one_select_is_refused() {
        refused("DELETE FROM historian", "only a SELECT");
        refused("UPDATE orders SET x = 1", "only a SELECT");
        refused("INSERT INTO orders VALUES (1)", "only a SELECT");
        // `TABLE x` reads a relation no FROM names: refused however it parses.
        for sql in [
            "TABLE auth_users",
            "SELECT * FROM historian UNION TABLE auth_users",
        ] {
            assert!(check(sql).is_err(), "{sql} was accepted");
        }
        refused("PRAGMA user_version = 3", "only a SELECT");
        refused("ATTACH DATABASE 'x.db' AS x", "only a SELECT");
        refused("SELECT 1; SELECT 2", "one statement");
        refused("SELECT 1; DROP TABLE orders", "one statement");
        refused("", "empty");
        refused("SELEC 1", "not valid SQL");
    }

    #[test]
    fn relations_outside_the_domain_are_refused() {
        refused("SELECT * FROM sqlite_master", "sqlite_master");
        refused("SELECT * FROM main.orders", "qualified name");
        refused("SELECT * FROM \"beta.orders\"", "relation `beta.orders`");
        refused(
            "SELECT * FROM pragma_table_info('orders')",
            "pragma_table_info",
        );
        refused("SELECT * FROM generate_series(1, 3)", "generate_series");
        refused(
            "WITH historian AS (SELECT 1) SELECT * FROM historian",
            "CTE",
        );
    }

    #[test]
    fn functions_off_the_list_and_parameters_are_refused() {
        refused("SELECT load_extension('x')", "load_extension");
        refused("SELECT readfile('/etc/passwd')", "readfile");
        refused("SELECT sqlite_version()", "sqlite_version");
        refused("SELECT * FROM historian WHERE topic = ?", "parameters");
        refused("SELECT * FROM historian WHERE topic = :t", "parameters");
    }

    #[test]
    fn relation_definitions_go_before_the_query_s_own_ctes() {
        let q = check("WITH t AS (SELECT 1 AS x) SELECT * FROM t, historian").unwrap();
        let sql = q
            .with_relations(&[("historian".into(), "SELECT 2 AS y".into())])
            .unwrap();
        assert_eq!(
            sql,
            "WITH \"historian\" AS (SELECT 2 AS y), t AS (SELECT 1 AS x) SELECT * FROM t, historian"
        );
    }
}
