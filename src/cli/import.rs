//! `svc records import`: reads a JSON array, JSON lines or typed CSV, posts each row with
//! bounded concurrency (progress on stderr when it is a terminal), and reports every failed row
//! by line (or array item) with the reason. Any failure makes the command exit 1.

use super::client::{segment, Client};
use super::csv_typed;
use super::error::{CliError, CliResult};
use super::{ImportArgs, ImportFormat, OutputFormat};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use reqwest::Method;
use serde::Serialize;
use serde_json::{Map, Value};
use std::io::{IsTerminal, Read, Write};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// Where a row came from: a line of JSONL/CSV or an item (1-based) of a JSON array.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Loc {
    Line(usize),
    Item(usize),
}

impl std::fmt::Display for Loc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Loc::Line(n) => write!(f, "line {n}"),
            Loc::Item(n) => write!(f, "item {n}"),
        }
    }
}

/// One row to send, or why it cannot be sent.
pub type Row = (Loc, Result<Map<String, Value>, String>);

#[derive(Debug, Serialize)]
struct Failure {
    #[serde(skip_serializing_if = "Option::is_none")]
    line: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    item: Option<usize>,
    error: String,
}

#[derive(Debug, Serialize)]
struct Summary {
    table: String,
    dry_run: bool,
    rows: usize,
    created: usize,
    failed: usize,
    failures: Vec<Failure>,
}

/// Picks the format: `--format`, the file extension, else the first non-blank byte.
pub fn detect_format(path: &str, text: &str) -> ImportFormat {
    let lower = path.to_ascii_lowercase();
    if lower.ends_with(".csv") {
        return ImportFormat::Csv;
    }
    if lower.ends_with(".jsonl") || lower.ends_with(".ndjson") {
        return ImportFormat::Jsonl;
    }
    if lower.ends_with(".json") {
        return ImportFormat::Json;
    }
    match text.trim_start().chars().next() {
        Some('[') => ImportFormat::Json,
        Some('{') => ImportFormat::Jsonl,
        _ => ImportFormat::Csv,
    }
}

/// Parses the input into rows; a malformed row is a failed row, a malformed whole file an error.
pub fn parse_rows(format: ImportFormat, text: &str) -> CliResult<Vec<Row>> {
    match format {
        ImportFormat::Jsonl => Ok(text
            .lines()
            .enumerate()
            .filter(|(_, line)| !line.trim().is_empty())
            .map(|(i, line)| (Loc::Line(i + 1), object(serde_json::from_str(line))))
            .collect()),
        ImportFormat::Json => {
            let items: Vec<Value> = serde_json::from_str(text).map_err(|e| {
                CliError::usage(format!("the input is not a JSON array of records: {e}"))
            })?;
            Ok(items
                .into_iter()
                .enumerate()
                .map(|(i, v)| (Loc::Item(i + 1), object(Ok(v))))
                .collect())
        }
        ImportFormat::Csv => parse_csv(text),
    }
}

fn object(parsed: serde_json::Result<Value>) -> Result<Map<String, Value>, String> {
    match parsed {
        Ok(Value::Object(map)) => Ok(map),
        Ok(other) => Err(format!(
            "not a JSON object: {}",
            super::output::cell(&other, 60)
        )),
        Err(e) => Err(format!("invalid JSON: {e}")),
    }
}

fn parse_csv(text: &str) -> CliResult<Vec<Row>> {
    let mut reader = csv::ReaderBuilder::new().from_reader(text.as_bytes());
    let headers = reader
        .headers()
        .map_err(|e| CliError::usage(format!("cannot read the CSV header: {e}")))?
        .clone();
    let columns: Vec<csv_typed::Column> = headers.iter().map(csv_typed::parse_header).collect();
    if columns.iter().any(|c| c.name.is_empty()) {
        return Err(CliError::usage("the CSV header has an empty column name"));
    }
    let mut rows = Vec::new();
    let mut record = csv::StringRecord::new();
    loop {
        match reader.read_record(&mut record) {
            Ok(false) => break,
            Ok(true) => {
                let line = record.position().map_or(0, |p| p.line() as usize);
                rows.push((Loc::Line(line), csv_typed::parse_row(&columns, &record)));
            }
            Err(e) => {
                let line = e.position().map_or(0, |p| p.line() as usize);
                let fatal = matches!(e.kind(), csv::ErrorKind::Io(_));
                rows.push((Loc::Line(line), Err(format!("invalid CSV row: {e}"))));
                if fatal {
                    break;
                }
            }
        }
    }
    Ok(rows)
}

/// The body sent for a row: server-set timestamps dropped, a full RecordID reduced to its key
/// so rows exported from one table or domain import into another.
pub fn prepare(mut row: Map<String, Value>) -> Map<String, Value> {
    row.remove("created_dt");
    row.remove("updated_dt");
    if let Some(Value::String(id)) = row.get("id") {
        if let Some((_, key)) = id.rsplit_once(':') {
            let key = key.to_string();
            row.insert("id".into(), Value::String(key));
        }
    }
    row
}

fn read_input(file: &str) -> CliResult<String> {
    let mut text = String::new();
    let read = if file == "-" {
        std::io::stdin().read_to_string(&mut text)
    } else {
        std::fs::File::open(file).and_then(|mut f| f.read_to_string(&mut text))
    };
    read.map_err(|e| CliError::failed(format!("cannot read `{file}`: {e}")))?;
    Ok(text)
}

pub fn progress_bar(len: u64, what: &str) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::stderr());
    let style = ProgressStyle::with_template(&format!(
        "{what} {{bar:40}} {{pos}}/{{len}} ({{per_sec}}, eta {{eta}})"
    ))
    .unwrap_or_else(|_| ProgressStyle::default_bar());
    bar.set_style(style);
    bar
}

pub fn run(client: &Client, format: OutputFormat, args: &ImportArgs) -> CliResult<()> {
    let text = read_input(&args.file)?;
    let input_format = args
        .format
        .unwrap_or_else(|| detect_format(&args.file, &text));
    let rows = parse_rows(input_format, &text)?;
    drop(text);
    let total = rows.len();
    let failures: Mutex<Vec<(Loc, String)>> = Mutex::new(Vec::new());
    let mut valid = Vec::with_capacity(total);
    for (loc, row) in rows {
        match row {
            Ok(map) => valid.push((loc, prepare(map))),
            Err(e) => failures
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push((loc, e)),
        }
    }
    let created = AtomicUsize::new(0);
    if !args.dry_run {
        let path = format!("/svc/{}", segment(&args.table));
        let bar = progress_bar(valid.len() as u64, "importing");
        let next = AtomicUsize::new(0);
        let workers = usize::from(args.concurrency).min(valid.len().max(1));
        std::thread::scope(|s| {
            for _ in 0..workers {
                s.spawn(|| loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some((loc, body)) = valid.get(i) else {
                        break;
                    };
                    let sent: CliResult<Value> = client.call(Method::POST, &path, body);
                    match sent {
                        Ok(_) => {
                            created.fetch_add(1, Ordering::Relaxed);
                        }
                        Err(e) => failures
                            .lock()
                            .unwrap_or_else(|p| p.into_inner())
                            .push((*loc, e.to_string().replace('\n', " "))),
                    }
                    bar.inc(1);
                });
            }
        });
        bar.finish_and_clear();
    }
    let mut failures = failures.into_inner().unwrap_or_else(|p| p.into_inner());
    failures.sort_by_key(|(loc, _)| *loc);
    let created = created.into_inner();
    let summary = Summary {
        table: args.table.clone(),
        dry_run: args.dry_run,
        rows: total,
        created: if args.dry_run { 0 } else { created },
        failed: failures.len(),
        failures: failures
            .iter()
            .map(|(loc, e)| Failure {
                line: matches!(loc, Loc::Line(_)).then_some(loc_n(loc)),
                item: matches!(loc, Loc::Item(_)).then_some(loc_n(loc)),
                error: e.clone(),
            })
            .collect(),
    };
    report(format, &summary, &failures, valid.len())?;
    if summary.failed > 0 {
        return Err(CliError::Reported);
    }
    Ok(())
}

fn loc_n(loc: &Loc) -> usize {
    match loc {
        Loc::Line(n) | Loc::Item(n) => *n,
    }
}

/// Failures listed in a human summary before the rest is only counted.
const SHOWN_FAILURES: usize = 50;

fn report(
    format: OutputFormat,
    summary: &Summary,
    failures: &[(Loc, String)],
    valid: usize,
) -> CliResult<()> {
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    match format {
        OutputFormat::Table | OutputFormat::Csv => {
            if summary.dry_run {
                writeln!(
                    out,
                    "dry run: {valid} of {} rows would be sent to `{}`",
                    summary.rows, summary.table
                )?;
            } else {
                writeln!(
                    out,
                    "created {} of {} rows in `{}`",
                    summary.created, summary.rows, summary.table
                )?;
            }
            if !failures.is_empty() {
                writeln!(out, "failed {}:", failures.len())?;
                for (loc, e) in failures.iter().take(SHOWN_FAILURES) {
                    writeln!(out, "  {loc}: {e}")?;
                }
                if failures.len() > SHOWN_FAILURES {
                    writeln!(
                        out,
                        "  … and {} more (--output json lists all)",
                        failures.len() - SHOWN_FAILURES
                    )?;
                }
            }
        }
        OutputFormat::Json => {
            serde_json::to_writer_pretty(&mut out, summary).map_err(std::io::Error::from)?;
            writeln!(out)?;
        }
        OutputFormat::Jsonl => {
            serde_json::to_writer(&mut out, summary).map_err(std::io::Error::from)?;
            writeln!(out)?;
        }
    }
    out.flush()?;
    if summary.failed > 0 {
        eprintln!("svc: {} of {} rows failed", summary.failed, summary.rows);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn formats_are_detected() {
        assert_eq!(detect_format("a.CSV", "[1]"), ImportFormat::Csv);
        assert_eq!(detect_format("a.ndjson", ""), ImportFormat::Jsonl);
        assert_eq!(detect_format("a.json", "{"), ImportFormat::Json);
        assert_eq!(detect_format("-", "  [{}]"), ImportFormat::Json);
        assert_eq!(detect_format("-", "{\"a\":1}\n"), ImportFormat::Jsonl);
        assert_eq!(detect_format("-", "a,b\n1,2"), ImportFormat::Csv);
    }

    #[test]
    fn jsonl_rows_carry_line_numbers_and_errors() {
        let rows = parse_rows(ImportFormat::Jsonl, "{\"a\":1}\n\n{bad\n[1]\n{\"b\":2}\n").unwrap();
        let locs: Vec<Loc> = rows.iter().map(|r| r.0).collect();
        assert_eq!(
            locs,
            [Loc::Line(1), Loc::Line(3), Loc::Line(4), Loc::Line(5)]
        );
        assert!(rows[1].1.as_ref().unwrap_err().starts_with("invalid JSON"));
        assert!(rows[2]
            .1
            .as_ref()
            .unwrap_err()
            .starts_with("not a JSON object"));
        assert_eq!(rows[3].1.as_ref().unwrap()["b"], json!(2));
    }

    #[test]
    fn json_array_items_and_bad_arrays() {
        let rows = parse_rows(ImportFormat::Json, "[{\"a\":1}, 2]").unwrap();
        assert_eq!(rows[1].0, Loc::Item(2));
        assert!(rows[1].1.is_err());
        assert_eq!(
            parse_rows(ImportFormat::Json, "{").unwrap_err().exit_code(),
            2
        );
    }

    #[test]
    fn csv_rows_typed_and_ragged() {
        let rows = parse_rows(
            ImportFormat::Csv,
            "name,price:number\npump,12\nvalve\nx,notnum\n",
        )
        .unwrap();
        assert_eq!(rows[0].1.as_ref().unwrap()["price"], json!(12));
        assert_eq!(rows[1].0, Loc::Line(3));
        assert!(rows[1].1.as_ref().unwrap_err().contains("invalid CSV row"));
        assert_eq!(rows[2].0, Loc::Line(4));
        assert!(rows[2].1.as_ref().unwrap_err().contains("not a number"));
    }

    #[test]
    fn prepared_rows_drop_server_fields() {
        let row = json!({"id": "demo.items:k1", "created_dt": "x", "updated_dt": "y", "a": 1});
        let Value::Object(map) = row else {
            unreachable!()
        };
        assert_eq!(Value::Object(prepare(map)), json!({"id": "k1", "a": 1}));
    }
}
