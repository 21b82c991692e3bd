//! The read-only SQL route (`POST /svc/historian/query`): a checked query run over one
//! domain's data only, every relation it names defined over that domain's rows.

use crate::ids::TableRef;
use crate::report_sql::scope::HistorianScope;
use crate::report_sql::CheckedQuery;
use crate::store::types::{resolve_report_relations, ReportLimits, ReportRelation};
use crate::store::{StoreError, StoreResult};
use serde_json::{Map, Value};

/// Runs checked report queries. An engine says how its relations are defined in its own SQL;
/// resolving names and assembling the query are the same for every engine (default methods).
pub trait Reports {
    /// The domain's record tables (bare names that are identifiers).
    fn domain_tables(&self, domain: &str) -> StoreResult<Vec<String>>;

    /// A `SELECT` that reads a table's records as rows: `id`, `created_dt`, `updated_dt` and
    /// a column per top-level field (with an identifier for a name) found in its records.
    fn table_definition(&self, table: &TableRef) -> StoreResult<String>;

    /// A `SELECT` over the temporary table of historian points a report copies in (see
    /// `store::report_historian`), with the columns the `historian` relation has.
    fn historian_definition(&self) -> String;

    /// What each relation the query names stands for in `domain` (a table, the historian), or
    /// an error naming one the domain does not have.
    fn report_relations(
        &self,
        domain: &str,
        query: &CheckedQuery,
    ) -> StoreResult<Vec<(String, ReportRelation)>> {
        resolve_report_relations(domain, query, &self.domain_tables(domain)?)
    }

    /// The query's SQL with every relation replaced by its definition, and the historian's
    /// scope when it names the historian (the points the engine must copy in first).
    fn report_sql(
        &self,
        query: CheckedQuery,
        relations: &[(String, ReportRelation)],
    ) -> StoreResult<(String, Option<HistorianScope>)> {
        let mut definitions = Vec::with_capacity(relations.len());
        let mut historian = None;
        for (name, relation) in relations {
            let definition = match relation {
                ReportRelation::Historian => {
                    historian = Some(query.historian_scope());
                    self.historian_definition()
                }
                ReportRelation::Table(table) => self.table_definition(table)?,
            };
            definitions.push((name.clone(), definition));
        }
        let sql = query
            .with_relations(&definitions)
            .map_err(StoreError::Internal)?;
        Ok((sql, historian))
    }

    /// Runs the query over the relations, within `limits` (time and rows); its rows.
    fn run_report(
        &self,
        domain: &str,
        query: CheckedQuery,
        relations: &[(String, ReportRelation)],
        limits: ReportLimits,
    ) -> StoreResult<Vec<Map<String, Value>>>;
}
