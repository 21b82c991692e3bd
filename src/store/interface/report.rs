//! The read-only SQL route (`POST /svc/historian/query`): a checked query run over one
//! domain's data only, every relation it names defined over that domain's rows.

use crate::report_sql::CheckedQuery;
use crate::store::types::{ReportLimits, ReportRelation};
use crate::store::StoreResult;
use serde_json::{Map, Value};

/// Runs checked report queries.
pub trait Reports {
    /// What each relation the query names stands for in `domain` (a table, the historian), or
    /// an error naming one the domain does not have.
    fn report_relations(
        &self,
        domain: &str,
        query: &CheckedQuery,
    ) -> StoreResult<Vec<(String, ReportRelation)>>;
    /// Runs the query over the relations, within `limits` (time and rows); its rows.
    fn run_report(
        &self,
        domain: &str,
        query: CheckedQuery,
        relations: &[(String, ReportRelation)],
        limits: ReportLimits,
    ) -> StoreResult<Vec<Map<String, Value>>>;
}
