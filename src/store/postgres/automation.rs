//! What functions and flows leave behind, on PostgreSQL: every version of a function's code and
//! the log of runs, as the SQLite engine keeps them (`sqlite/automation.rs`).

use super::PgStore;
use crate::store::interface::Automation;
use crate::store::types::*;
use crate::store::StoreResult;
use crate::store::{CodeVersion, RunRecord};
use serde_json::Value;
use std::collections::BTreeMap;

impl Automation for PgStore {
    /// Keeps a version of a function's code; a version already kept is left as it was.
    fn keep_code_version(
        &self,
        domain: &str,
        name: &str,
        version: &CodeVersion,
    ) -> StoreResult<()> {
        self.execute(
            "INSERT INTO fn_versions \
             (domain, name, version, language, module, code, modules, created_dt) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT DO NOTHING",
            &[
                &domain,
                &name,
                &(version.version as i64),
                &version.language,
                &version.module,
                &version.code,
                &serde_json::to_string(&version.modules)?,
                &version.created_dt,
            ],
        )?;
        Ok(())
    }

    /// Every kept version of a function, oldest first.
    fn code_versions(&self, domain: &str, name: &str) -> StoreResult<Vec<CodeVersion>> {
        self.query(
            "SELECT version, language, module, code, modules, created_dt FROM fn_versions \
             WHERE domain = $1 AND name = $2 ORDER BY version",
            &[&domain, &name],
        )?
        .iter()
        .map(|r| {
            let modules: BTreeMap<String, String> = serde_json::from_str(r.get(4))?;
            Ok(CodeVersion {
                version: r.get::<_, i64>(0).max(0) as u64,
                language: r.get(1),
                module: r.get(2),
                code: r.get(3),
                modules,
                created_dt: r.get(5),
            })
        })
        .collect()
    }

    /// Forgets a deleted function's versions and runs.
    fn forget_function(&self, domain: &str, name: &str) -> StoreResult<()> {
        self.execute(
            "DELETE FROM fn_versions WHERE domain = $1 AND name = $2",
            &[&domain, &name],
        )?;
        self.execute(
            "DELETE FROM fn_runs WHERE domain = $1 AND kind = 'function' AND name = $2",
            &[&domain, &name],
        )?;
        Ok(())
    }

    /// Logs runs in one transaction; now and then an owner's runs beyond the newest
    /// [`RUNS_KEPT`] are dropped (one insert in [`PRUNE_EVERY`], drawn at random, as on SQLite).
    fn record_runs(&self, runs: &[(String, RunOwner, RunRecord)]) -> StoreResult<()> {
        let mut rows = Vec::with_capacity(runs.len());
        for (domain, owner, run) in runs {
            rows.push((
                domain,
                owner.as_str(),
                run,
                serde_json::to_string(&run.logs)?,
                run.output.as_ref().map(Value::to_string),
                rand::random::<u32>().is_multiple_of(PRUNE_EVERY),
            ));
        }
        self.block(async {
            let mut client = self.client().await?;
            let tx = client.transaction().await?;
            for (domain, kind, run, logs, output, prune) in &rows {
                tx.execute(
                    "INSERT INTO fn_runs (domain, kind, name, started_dt, trigger, duration_ms, \
                     success, error, logs, output) \
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
                    &[
                        domain,
                        kind,
                        &run.name,
                        &run.started_dt,
                        &run.trigger,
                        &(run.duration_ms as i64),
                        &run.success,
                        &run.error,
                        logs,
                        output,
                    ],
                )
                .await?;
                if *prune {
                    tx.execute(
                        "DELETE FROM fn_runs WHERE domain = $1 AND kind = $2 AND name = $3 \
                         AND id <= (SELECT id FROM fn_runs WHERE domain = $1 AND kind = $2 \
                         AND name = $3 ORDER BY id DESC LIMIT 1 OFFSET $4)",
                        &[domain, kind, &run.name, &RUNS_KEPT],
                    )
                    .await?;
                }
            }
            tx.commit().await?;
            Ok(())
        })
    }

    /// The newest runs of a function or flow, newest first.
    fn runs(
        &self,
        domain: &str,
        owner: RunOwner,
        name: &str,
        limit: usize,
    ) -> StoreResult<Vec<RunRecord>> {
        self.query(
            "SELECT id, name, started_dt, trigger, duration_ms, success, error, logs, output \
             FROM fn_runs WHERE domain = $1 AND kind = $2 AND name = $3 \
             ORDER BY id DESC LIMIT $4",
            &[&domain, &owner.as_str(), &name, &(limit as i64)],
        )?
        .iter()
        .map(|r| {
            Ok(RunRecord {
                id: r.get(0),
                name: r.get(1),
                started_dt: r.get(2),
                trigger: r.get(3),
                duration_ms: r.get::<_, i64>(4).max(0) as u64,
                success: r.get(5),
                error: r.get(6),
                logs: serde_json::from_str(r.get(7))?,
                output: r
                    .get::<_, Option<&str>>(8)
                    .map(serde_json::from_str)
                    .transpose()?,
            })
        })
        .collect()
    }
}
