//! `svc migrate`: copies an SQLite store (a data dir's `svc.db`) into a PostgreSQL database
//! through the PostgreSQL engine, whose migrations create the schema first. Every table of
//! svc's SQLite schema goes to its PostgreSQL counterpart in key order, in batches that each
//! commit with a note of how far their table got, so a second run resumes (or, after a finished
//! run, changes nothing). At the end every copied table's rows are counted on both sides.
//!
//! The caller (the CLI) makes sure no server runs on the data dir and that the historian's
//! journal holds nothing unfolded; this module only reads the SQLite file.

pub mod batch;
mod plan;
mod source;

use super::location::PostgresTarget;
use super::postgres::PgStore;
use super::{StoreError, StoreResult};
use batch::TableCopy;
use source::Source;
use std::path::Path;

/// What the copy reports as it goes (the CLI draws progress bars from it).
pub trait Progress {
    /// A table's copy begins: its rows in the source, and how many an earlier run copied.
    fn table(&mut self, label: &str, total: u64, already: u64);
    /// Rows read and written since the last call.
    fn advance(&mut self, rows: u64);
    /// The table is copied.
    fn finish(&mut self);
}

/// One line of the summary: a copied item's rows on each side.
#[derive(Debug, Clone)]
pub struct Count {
    pub label: String,
    pub source: u64,
    pub target: u64,
}

#[derive(Debug, Default)]
pub struct Report {
    pub counts: Vec<Count>,
    /// The PostgreSQL instance id per-instance state (broker, outbox) was copied as.
    pub instance: String,
}

impl Report {
    pub fn mismatches(&self) -> impl Iterator<Item = &Count> {
        self.counts.iter().filter(|c| c.source != c.target)
    }
}

/// What a migration reads: the data dir and its database file.
pub struct MigrateSource {
    pub data_dir: std::path::PathBuf,
    pub db_file: std::path::PathBuf,
}

impl MigrateSource {
    pub fn new(data_dir: &Path) -> MigrateSource {
        MigrateSource {
            data_dir: data_dir.to_path_buf(),
            db_file: data_dir.join(super::location::SQLITE_FILE),
        }
    }

    /// The historian journal's mark in the source database (journal entries at or below it
    /// are already in the series).
    pub fn journal_folded(&self) -> StoreResult<u64> {
        Source::open(&self.db_file)?.journal_folded()
    }
}

/// Copies everything from `from` into `to`. `progress` hears of each table.
pub fn migrate(
    from: &MigrateSource,
    to: &PostgresTarget,
    progress: &mut dyn Progress,
) -> StoreResult<Report> {
    let source = Source::open(&from.db_file)?;
    // The data dir is the instance's: its `instance.id` keys the broker state copied below,
    // so a server started on this data dir with the PostgreSQL URL carries on as the same
    // instance (sessions, retained messages, upstream outbox).
    let target = PgStore::open(to, &from.data_dir)
        .map_err(|e| e.in_context(&format!("cannot open {}", to_description(to))))?;
    if target.import_target_is_foreign()? {
        return Err(StoreError::Invalid(format!(
            "{} already holds svc data that no `svc migrate` put there; migrate into a new, \
             empty database",
            to_description(to)
        )));
    }
    let mut report = Report {
        instance: target.instance_id().to_string(),
        ..Report::default()
    };
    for table in plan::system_tables() {
        copy_table(&source, &target, &table, progress, &mut report)?;
    }
    let record_tables = source.record_tables()?;
    for table in &record_tables {
        target.import_record_table(table)?;
        copy_table(
            &source,
            &target,
            &plan::record_table(table),
            progress,
            &mut report,
        )?;
    }
    let mut domains: Vec<&str> = record_tables.iter().map(|t| t.domain.as_str()).collect();
    domains.sort_unstable();
    domains.dedup();
    for domain in domains {
        copy_collection_indexes(&source, &target, domain)?;
    }
    for table in plan::historian_tables()
        .into_iter()
        .chain(plan::instance_tables())
    {
        copy_table(&source, &target, &table, progress, &mut report)?;
    }
    copy_jwt_secret(&from.data_dir, &target, &mut report)?;
    Ok(report)
}

fn to_description(to: &PostgresTarget) -> String {
    super::Location::Postgres(Box::new(to.clone())).describe()
}

/// Copies one table batch by batch from where an earlier run stopped, then counts both sides.
fn copy_table(
    source: &Source,
    target: &PgStore,
    table: &TableCopy,
    progress: &mut dyn Progress,
    report: &mut Report,
) -> StoreResult<()> {
    let total = source.count(table)?;
    let mut state = target.import_progress(&table.label)?;
    if !state.done {
        progress.table(&table.label, total, state.copied.min(total));
        loop {
            let batch = source.read(table, state.last_key.as_ref())?;
            if batch.rows == 0 {
                break;
            }
            target.import_batch(table, &batch)?;
            progress.advance(batch.rows as u64);
            state.last_key = batch.last_key;
            if batch.rows < table.batch_rows {
                break;
            }
        }
        target.import_identity(table)?;
        target.import_done(&table.label)?;
        progress.finish();
    }
    report.counts.push(Count {
        label: table.label.clone(),
        source: total,
        target: target.import_count(table)?,
    });
    Ok(())
}

/// Builds each collection's indexes on its PostgreSQL table (once its records are there, so
/// a unique index is built over them in one pass).
fn copy_collection_indexes(source: &Source, target: &PgStore, domain: &str) -> StoreResult<()> {
    for (name, doc) in source.collections(domain)? {
        let item = format!("indexes of {domain}.{name}");
        if target.import_progress(&item)?.done {
            continue;
        }
        let collection = super::collection_of_record(Some(doc))
            .map_err(|e| e.in_context(&format!("collection `{name}` of `{domain}`")))?;
        if let Some(collection) = collection {
            target
                .import_collection_indexes(domain, &collection)
                .map_err(|e| e.in_context(&format!("indexes of collection `{name}`")))?;
        }
        target.import_done(&item)?;
    }
    Ok(())
}

/// The data dir's JWT secret (when it has one) becomes the database's shared one.
fn copy_jwt_secret(data_dir: &Path, target: &PgStore, report: &mut Report) -> StoreResult<()> {
    let path = data_dir.join("jwt.secret");
    let Ok(text) = std::fs::read_to_string(&path) else {
        return Ok(());
    };
    let secret = text.trim();
    if secret.is_empty() {
        return Ok(());
    }
    target.import_jwt_secret(secret.as_bytes())?;
    report.counts.push(Count {
        label: "jwt secret".into(),
        source: 1,
        target: u64::from(target.import_has_jwt_secret()?),
    });
    Ok(())
}
