//! Which rows of the `historian` relation a checked report can read: a time range and a set of
//! topics found in its `WHERE` clauses, so the store materializes only those points (blocks
//! are decoded in Rust, never in SQL). The scope is conservative: a row outside it can never
//! satisfy the query's conditions on that occurrence of `historian`, and whenever a condition
//! is not understood it is simply not used. The query still applies every condition itself,
//! so a wider scope costs time, never correctness.
//!
//! Used from a condition: a top-level `AND` conjunct of the `WHERE` of the `SELECT` whose
//! `FROM` holds the occurrence directly, comparing its `timestamp` or `topic` column with a
//! string literal (`= < <= > >=`, `BETWEEN`, `IN`). Column names must be qualified when the
//! `FROM` holds more than the one relation. A `FROM` with an outer join, an occurrence inside
//! a parenthesized join, or column aliases on it push nothing. Occurrences are counted, and
//! a query with one this walk did not find reads everything.
//!
//! `timestamp` is text (`YYYY-MM-DDTHH:MM:SS.mmmZ`) compared as text, byte by byte (SQLite's
//! `BINARY`, PostgreSQL's `"C"`); the text grows with the time, so the times a comparison
//! admits are found by bisection over [`timestamp_text`] whatever the literal looks like.

use super::HISTORIAN;
use sqlparser::ast::{
    BinaryOperator, Expr, JoinOperator, ObjectName, Query, Select, SetExpr, TableFactor, Value,
    Visit, Visitor,
};
use std::collections::BTreeSet;
use std::ops::ControlFlow;

/// The first and last millisecond whose text has four year digits (0000-01-01 to 9999-12-31);
/// ingest accepts no timestamp outside them.
const TEXT_MIN_MS: i64 = -62_167_219_200_000;
const TEXT_MAX_MS: i64 = 253_402_300_799_999;

/// Historian points a report can read: `start_ms <= ts < end_ms`, of `topics` (all if `None`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HistorianScope {
    pub start_ms: i64,
    pub end_ms: i64,
    pub topics: Option<BTreeSet<String>>,
}

impl HistorianScope {
    /// Every point.
    pub fn everything() -> HistorianScope {
        HistorianScope {
            start_ms: i64::MIN,
            end_ms: i64::MAX,
            topics: None,
        }
    }

    /// No point.
    pub fn nothing() -> HistorianScope {
        HistorianScope {
            start_ms: 0,
            end_ms: 0,
            topics: None,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.start_ms >= self.end_ms || self.topics.as_ref().is_some_and(BTreeSet::is_empty)
    }

    /// Whether points of `topic` are in scope.
    pub fn has_topic(&self, topic: &str) -> bool {
        self.topics.as_ref().is_none_or(|t| t.contains(topic))
    }

    /// A scope holding both (the hull of the time ranges).
    fn union(self, other: HistorianScope) -> HistorianScope {
        if self.is_empty() {
            return other;
        }
        if other.is_empty() {
            return self;
        }
        HistorianScope {
            start_ms: self.start_ms.min(other.start_ms),
            end_ms: self.end_ms.max(other.end_ms),
            topics: match (self.topics, other.topics) {
                (Some(mut a), Some(b)) => {
                    a.extend(b);
                    Some(a)
                }
                _ => None,
            },
        }
    }

    fn narrow_time(&mut self, start_ms: i64, end_ms: i64) {
        self.start_ms = self.start_ms.max(start_ms);
        self.end_ms = self.end_ms.min(end_ms);
    }

    fn narrow_topics(&mut self, topics: BTreeSet<String>) {
        self.topics = Some(match self.topics.take() {
            Some(known) => known.intersection(&topics).cloned().collect(),
            None => topics,
        });
    }
}

/// The historian points `query` can read.
pub fn historian_scope(query: &Query) -> HistorianScope {
    let mut walk = Walk {
        occurrences: 0,
        understood: 0,
        scope: HistorianScope::nothing(),
    };
    let _ = query.visit(&mut walk);
    if walk.understood == walk.occurrences {
        walk.scope
    } else {
        HistorianScope::everything()
    }
}

/// The relation's `timestamp` text for a time, as both engines write it.
pub fn timestamp_text(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .map(|t| t.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string())
        .unwrap_or_default()
}

/// Counts every `historian` in `FROM` (as the checker finds relations) and scopes those each
/// `SELECT` holds directly.
struct Walk {
    occurrences: usize,
    understood: usize,
    scope: HistorianScope,
}

impl Visitor for Walk {
    type Break = ();

    fn pre_visit_query(&mut self, query: &Query) -> ControlFlow<()> {
        self.set_expr(&query.body);
        ControlFlow::Continue(())
    }

    fn pre_visit_table_factor(&mut self, factor: &TableFactor) -> ControlFlow<()> {
        if historian_alias(factor).is_some() {
            self.occurrences += 1;
        }
        ControlFlow::Continue(())
    }
}

impl Walk {
    /// The `SELECT`s of a query body (a nested query is visited on its own).
    fn set_expr(&mut self, body: &SetExpr) {
        match body {
            SetExpr::Select(select) => self.select(select),
            SetExpr::SetOperation { left, right, .. } => {
                self.set_expr(left);
                self.set_expr(right);
            }
            _ => {}
        }
    }

    fn select(&mut self, select: &Select) {
        let factors: Vec<&TableFactor> = select
            .from
            .iter()
            .flat_map(|t| std::iter::once(&t.relation).chain(t.joins.iter().map(|j| &j.relation)))
            .collect();
        let inner = select.from.iter().flat_map(|t| &t.joins).all(|j| {
            matches!(
                j.join_operator,
                JoinOperator::Join(_) | JoinOperator::Inner(_) | JoinOperator::CrossJoin(_)
            )
        });
        let alone = factors.len() == 1;
        for factor in factors {
            let Some(alias) = historian_alias(factor) else {
                continue;
            };
            self.understood += 1;
            let scope = match (alias, &select.selection) {
                (Some(name), Some(selection)) if inner => occurrence_scope(selection, &name, alone),
                _ => HistorianScope::everything(),
            };
            let known = std::mem::replace(&mut self.scope, HistorianScope::nothing());
            self.scope = known.union(scope);
        }
    }
}

/// For a `historian` table factor: `Some(Some(name))` with the name its columns are qualified
/// by, `Some(None)` when it renames its columns; `None` for any other factor.
fn historian_alias(factor: &TableFactor) -> Option<Option<String>> {
    let TableFactor::Table {
        name,
        alias,
        args: None,
        ..
    } = factor
    else {
        return None;
    };
    if !is_historian(name) {
        return None;
    }
    Some(match alias {
        Some(alias) if !alias.columns.is_empty() => None,
        Some(alias) => Some(alias.name.value.to_lowercase()),
        None => Some(HISTORIAN.to_string()),
    })
}

fn is_historian(name: &ObjectName) -> bool {
    match name.0.as_slice() {
        [part] => part
            .as_ident()
            .is_some_and(|i| i.value.eq_ignore_ascii_case(HISTORIAN)),
        _ => false,
    }
}

/// The scope the conjuncts of `selection` give one occurrence qualified by `name`.
fn occurrence_scope(selection: &Expr, name: &str, alone: bool) -> HistorianScope {
    let mut scope = HistorianScope::everything();
    let mut conjuncts = vec![selection];
    while let Some(expr) = conjuncts.pop() {
        match expr {
            Expr::BinaryOp {
                left,
                op: BinaryOperator::And,
                right,
            } => {
                conjuncts.push(left);
                conjuncts.push(right);
            }
            Expr::Nested(inner) => conjuncts.push(inner),
            other => narrow(&mut scope, other, name, alone),
        }
    }
    scope
}

#[derive(Clone, Copy, PartialEq)]
enum Column {
    Timestamp,
    Topic,
}

/// Narrows `scope` by one conjunct, when it is a condition this module understands.
fn narrow(scope: &mut HistorianScope, expr: &Expr, name: &str, alone: bool) {
    let column = |e: &Expr| column_of(e, name, alone);
    match expr {
        Expr::BinaryOp { left, op, right } => {
            let (column, op, text) = match (column(left), literal(right), column(right)) {
                (Some(c), Some(text), _) => (c, op.clone(), text),
                (None, _, Some(c)) => match (literal(left), flipped(op)) {
                    (Some(text), Some(op)) => (c, op, text),
                    _ => return,
                },
                _ => return,
            };
            match (column, op) {
                (Column::Topic, BinaryOperator::Eq) => {
                    scope.narrow_topics(BTreeSet::from([text.to_string()]))
                }
                (Column::Timestamp, op) => {
                    let (start, end) = match op {
                        BinaryOperator::Eq => (at_or_after(text), after(text)),
                        BinaryOperator::GtEq => (at_or_after(text), TEXT_MAX_MS + 1),
                        BinaryOperator::Gt => (after(text), TEXT_MAX_MS + 1),
                        BinaryOperator::LtEq => (TEXT_MIN_MS, after(text)),
                        BinaryOperator::Lt => (TEXT_MIN_MS, at_or_after(text)),
                        _ => return,
                    };
                    narrow_time(scope, start, end);
                }
                _ => {}
            }
        }
        Expr::Between {
            expr,
            negated: false,
            low,
            high,
        } => {
            if let (Some(Column::Timestamp), Some(low), Some(high)) =
                (column(expr), literal(low), literal(high))
            {
                narrow_time(scope, at_or_after(low), after(high));
            }
        }
        Expr::InList {
            expr,
            list,
            negated: false,
        } => {
            let Some(texts) = list.iter().map(literal).collect::<Option<Vec<&str>>>() else {
                return;
            };
            match column(expr) {
                Some(Column::Topic) => {
                    scope.narrow_topics(texts.iter().map(|t| t.to_string()).collect())
                }
                Some(Column::Timestamp) => {
                    let start = texts.iter().map(|t| at_or_after(t)).min();
                    let end = texts.iter().map(|t| after(t)).max();
                    match (start, end) {
                        (Some(start), Some(end)) => narrow_time(scope, start, end),
                        _ => narrow_time(scope, 0, 0), // `IN ()` holds for no row
                    }
                }
                None => {}
            }
        }
        _ => {}
    }
}

/// Narrows to `[start, end)`, found within the four-digit years: a bound at their edge is no
/// bound at all.
fn narrow_time(scope: &mut HistorianScope, start: i64, end: i64) {
    let start = if start <= TEXT_MIN_MS {
        i64::MIN
    } else {
        start
    };
    let end = if end > TEXT_MAX_MS { i64::MAX } else { end };
    scope.narrow_time(start, end);
}

/// `timestamp` or `topic` of this occurrence: qualified by its name, or bare when it is the
/// only relation of its `FROM` (where a bare name can mean no other column).
fn column_of(expr: &Expr, name: &str, alone: bool) -> Option<Column> {
    let column = match expr {
        Expr::Identifier(ident) if alone => &ident.value,
        Expr::CompoundIdentifier(parts) => match parts.as_slice() {
            [qualifier, column] if qualifier.value.to_lowercase() == name => &column.value,
            _ => return None,
        },
        Expr::Nested(inner) => return column_of(inner, name, alone),
        _ => return None,
    };
    match column.to_lowercase().as_str() {
        "timestamp" => Some(Column::Timestamp),
        "topic" => Some(Column::Topic),
        _ => None,
    }
}

fn literal(expr: &Expr) -> Option<&str> {
    match expr {
        Expr::Value(value) => match &value.value {
            Value::SingleQuotedString(text) => Some(text),
            _ => None,
        },
        Expr::Nested(inner) => literal(inner),
        _ => None,
    }
}

/// `a op b` as `b op' a`.
fn flipped(op: &BinaryOperator) -> Option<BinaryOperator> {
    Some(match op {
        BinaryOperator::Eq => BinaryOperator::Eq,
        BinaryOperator::Lt => BinaryOperator::Gt,
        BinaryOperator::LtEq => BinaryOperator::GtEq,
        BinaryOperator::Gt => BinaryOperator::Lt,
        BinaryOperator::GtEq => BinaryOperator::LtEq,
        _ => return None,
    })
}

/// The first time whose text is `>= text` (`TEXT_MAX_MS + 1` if none).
fn at_or_after(text: &str) -> i64 {
    first_time(|t| t.as_str() >= text)
}

/// The first time whose text is `> text` (`TEXT_MAX_MS + 1` if none).
fn after(text: &str) -> i64 {
    first_time(|t| t.as_str() > text)
}

/// The first time in the four-digit years whose text passes `holds` (which, the text growing
/// with the time, holds from some time on), or `TEXT_MAX_MS + 1`.
fn first_time(holds: impl Fn(&String) -> bool) -> i64 {
    let (mut lo, mut hi) = (TEXT_MIN_MS, TEXT_MAX_MS + 1);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if holds(&timestamp_text(mid)) {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    lo
}

#[cfg(test)]
mod tests;
