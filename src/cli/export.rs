//! `svc records export`: reads every page of a table (limit/offset over the server's stable
//! default order, or the given sort) and writes the records to stdout as they arrive: a JSON
//! array, JSON lines, or typed CSV (collected first, as its header needs every column).

use super::client::{segment, Client};
use super::csv_typed;
use super::error::CliResult;
use super::filters;
use super::import::progress_bar;
use super::output::csv_io;
use super::{ListArgs, OutputFormat};
use crate::model::CountResponse;
use serde_json::Value;
use std::io::Write;

pub fn run(
    client: &Client,
    format: OutputFormat,
    table: &str,
    list: &ListArgs,
    page_size: u64,
) -> CliResult<()> {
    let pairs = filters::list_pairs(list)?;
    let count_pairs = filters::filter_pairs(&list.filters, &list.or_filters)?;
    let table_path = segment(table);
    let total: CountResponse =
        client.get_query(&format!("/svc/{table_path}/count"), &count_pairs)?;
    let bar = progress_bar(total.count, "exporting");
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let mut collected: Vec<Value> = Vec::new();
    let mut written = 0u64;
    if format == OutputFormat::Json {
        out.write_all(b"[")?;
    }
    let mut offset = 0u64;
    loop {
        let mut query = pairs.clone();
        query.push(("limit".into(), page_size.to_string()));
        query.push(("offset".into(), offset.to_string()));
        let page: Vec<Value> = client.get_query(&format!("/svc/{table_path}/all"), &query)?;
        let n = page.len() as u64;
        for record in page {
            match format {
                OutputFormat::Json => {
                    out.write_all(if written == 0 { b"\n  " } else { b",\n  " })?;
                    serde_json::to_writer(&mut out, &record).map_err(std::io::Error::from)?;
                }
                OutputFormat::Jsonl => {
                    serde_json::to_writer(&mut out, &record).map_err(std::io::Error::from)?;
                    out.write_all(b"\n")?;
                }
                OutputFormat::Csv | OutputFormat::Table => collected.push(record),
            }
            written += 1;
        }
        bar.inc(n);
        if n < page_size {
            break;
        }
        offset += n;
    }
    bar.finish_and_clear();
    match format {
        OutputFormat::Json => out.write_all(if written == 0 { b"]\n" } else { b"\n]\n" })?,
        OutputFormat::Jsonl => {}
        OutputFormat::Csv => write_typed_csv(&mut out, &collected)?,
        OutputFormat::Table => super::output::rows(&mut out, format, &collected, "value")?,
    }
    out.flush()?;
    if std::io::IsTerminal::is_terminal(&std::io::stderr()) {
        eprintln!("exported {written} records from `{table}`");
    }
    Ok(())
}

/// Records as CSV with `name:type` headers, so `records import` restores them exactly.
pub fn write_typed_csv(out: &mut dyn Write, records: &[Value]) -> std::io::Result<()> {
    let columns = csv_typed::typed_columns(records);
    let mut w = csv::Writer::from_writer(out);
    w.write_record(columns.iter().map(csv_typed::header_cell))
        .map_err(csv_io)?;
    for record in records {
        w.write_record(csv_typed::row_cells(&columns, record))
            .map_err(csv_io)?;
    }
    w.flush()
}
