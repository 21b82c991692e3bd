//! `svc migrate --from sqlite://<data_dir> --to postgres://…`: checks the arguments and the
//! source (no server on it, nothing left in the historian's journal), copies the store with
//! one progress bar per table on stderr (`store::migrate`), and prints the per-table counts;
//! any count that differs is a failure.

use super::error::{CliError, CliResult};
use super::MigrateArgs;
use crate::store::migrate::{self, MigrateSource, Progress, Report};
use crate::store::Location;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};

pub fn run(args: &MigrateArgs) -> CliResult<()> {
    let target = match Location::parse(Some(&args.to), Path::new(".")) {
        Ok(Location::Postgres(target)) => target,
        Ok(Location::Sqlite(_)) => {
            return Err(CliError::usage(format!(
                "--to must be a postgres:// URL, not `{}`",
                args.to
            )))
        }
        Err(e) => {
            return Err(CliError::usage(format!(
                "--to is not a usable database: {e}"
            )))
        }
    };
    let data_dir = source_dir(&args.from)?;
    // Held for the whole copy: `svc serve` takes the same lock, so no server can change the
    // source meanwhile (one that runs now makes this fail).
    let _lock = crate::server::lock_data_dir(&data_dir).map_err(|e| {
        CliError::failed(format!(
            "{e:#}; stop the server before migrating {}",
            data_dir.display()
        ))
    })?;
    let source = MigrateSource::new(&data_dir);
    let folded = source
        .journal_folded()
        .map_err(|e| CliError::failed(e.to_string()))?;
    let unfolded = crate::historian::writer::unfolded_entries(&source.db_file, folded)
        .map_err(|e| CliError::failed(format!("cannot read the historian journal: {e}")))?;
    if unfolded > 0 {
        return Err(CliError::failed(format!(
            "the historian journal of {} still holds {unfolded} values that are not in the \
             database (the server did not stop cleanly); start `svc serve` on it once and stop \
             it, then migrate",
            data_dir.display()
        )));
    }
    eprintln!(
        "svc: migrating {} to {}",
        source.db_file.display(),
        Location::Postgres(target.clone()).describe()
    );
    let mut bars = Bars::default();
    let report = migrate::migrate(&source, &target, &mut bars).map_err(|e| {
        CliError::failed(format!(
            "the migration stopped: {e}; run it again to resume"
        ))
    })?;
    print_summary(&report)?;
    let wrong: Vec<String> = report
        .mismatches()
        .map(|c| {
            format!(
                "{} ({} in SQLite, {} in PostgreSQL)",
                c.label, c.source, c.target
            )
        })
        .collect();
    if !wrong.is_empty() {
        return Err(CliError::failed(format!(
            "the counts differ for {}",
            wrong.join(", ")
        )));
    }
    eprintln!(
        "svc: migrated (broker state as instance {}); serve it with `svc serve --data-dir {} \
         --database <the URL>`: uploaded files and the instance id stay in the data dir",
        report.instance,
        data_dir.display()
    );
    Ok(())
}

/// The data dir `--from` names (`sqlite://<dir>` or a plain path), which must hold `svc.db`.
fn source_dir(from: &str) -> CliResult<PathBuf> {
    let text = from.trim();
    if text.starts_with("postgres://") || text.starts_with("postgresql://") {
        return Err(CliError::usage(
            "--from must be an SQLite data dir (sqlite://<dir> or a path), not a PostgreSQL URL",
        ));
    }
    let dir = PathBuf::from(text.strip_prefix("sqlite://").unwrap_or(text));
    if dir.as_os_str().is_empty() {
        return Err(CliError::usage(
            "--from must name a data dir (sqlite://<dir> or a path)",
        ));
    }
    if !dir.is_dir() {
        return Err(CliError::usage(format!(
            "--from: there is no data dir {}",
            dir.display()
        )));
    }
    if !dir.join(crate::store::SQLITE_FILE).is_file() {
        return Err(CliError::usage(format!(
            "--from: {} holds no {}, so it is not an svc data dir",
            dir.display(),
            crate::store::SQLITE_FILE
        )));
    }
    Ok(dir)
}

/// One progress bar per table on stderr; nothing when stderr is not a terminal.
#[derive(Default)]
struct Bars {
    bar: Option<ProgressBar>,
}

impl Progress for Bars {
    fn table(&mut self, label: &str, total: u64, already: u64) {
        let bar = if std::io::stderr().is_terminal() {
            let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
            let style = ProgressStyle::with_template(
                "{prefix:<32} {bar:30} {pos}/{len} ({per_sec}, eta {eta})",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar());
            bar.set_style(style);
            bar.set_prefix(label.to_string());
            bar
        } else {
            ProgressBar::hidden()
        };
        bar.set_position(already);
        self.bar = Some(bar);
    }

    fn advance(&mut self, rows: u64) {
        if let Some(bar) = &self.bar {
            bar.inc(rows);
        }
    }

    fn finish(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish();
        }
    }
}

/// The counts, one line per table, on stdout.
fn print_summary(report: &Report) -> CliResult<()> {
    let width = report
        .counts
        .iter()
        .map(|c| c.label.len())
        .max()
        .unwrap_or(5)
        .max(5);
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    writeln!(
        out,
        "{:<width$}  {:>10}  {:>10}  ok",
        "table", "sqlite", "postgres"
    )?;
    for c in &report.counts {
        let ok = if c.source == c.target { "yes" } else { "NO" };
        writeln!(
            out,
            "{:<width$}  {:>10}  {:>10}  {ok}",
            c.label, c.source, c.target
        )?;
    }
    out.flush()?;
    Ok(())
}
