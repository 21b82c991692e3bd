//! `svc functions list|deploy|run|logs|versions|restore`: functions (records of the
//! `processes` table) deployed from code files through `POST /svc/code/:name`, run through
//! `POST /svc/processes/execute`, and their run log, versions and triggers. Also the helpers
//! `svc flows` shares: `--input` JSON, run-log rows and column-ordered lists.

use super::client::{segment, Client};
use super::error::{CliError, CliResult};
use super::output;
use super::{DeployArgs, FunctionsCommand, OutputFormat};
use crate::functions::Trigger;
use reqwest::blocking::multipart::{Form, Part};
use reqwest::Method;
use serde_json::{json, Map, Value};
use std::io::{self, Write};

/// Longest cell of a column-ordered table before it is cut with `…`.
const MAX_CELL: usize = 60;

/// Units an `every:` trigger may use.
const UNITS: [&str; 6] = ["ms", "s", "m", "h", "d", "w"];

pub fn run(client: &Client, format: OutputFormat, command: FunctionsCommand) -> CliResult<()> {
    let stdout = io::stdout();
    let mut out = stdout.lock();
    match command {
        FunctionsCommand::List => {
            let records: Vec<Value> = client.get("/svc/processes/domain")?;
            let records: Vec<Value> = records.into_iter().map(with_string_ids).collect();
            list(
                &mut out,
                format,
                &records,
                &["name", "version", "enabled", "triggers", "updated_dt"],
                |r| {
                    vec![
                        r["name"].clone(),
                        r["version"].clone(),
                        r["enabled"].clone(),
                        Value::String(triggers_text(&r["triggers"])),
                        r["updated_dt"].clone(),
                    ]
                },
            )?;
        }
        FunctionsCommand::Deploy(args) => deploy(client, format, &mut out, args)?,
        FunctionsCommand::Run { name, input } => {
            let input = parse_input(input.as_deref())?;
            let body = json!({"name": name, "input": input});
            let resp: Value = client.call(Method::POST, "/svc/processes/execute", &body)?;
            match format {
                OutputFormat::Table => {
                    for line in resp["logs"].as_array().into_iter().flatten() {
                        eprintln!("{}", output::cell(line, usize::MAX));
                    }
                    writeln!(out, "{}", pretty(&resp["output"]))?;
                }
                _ => output::object(&mut out, format, &resp)?,
            }
        }
        FunctionsCommand::Logs { name, limit } => {
            let path = format!("/svc/processes/runs/{}", segment(&name));
            print_runs(client, &mut out, format, &path, limit)?;
        }
        FunctionsCommand::Versions { name } => {
            let path = format!("/svc/code/{}/versions", segment(&name));
            let versions: Vec<Value> = client.get(&path)?;
            list(
                &mut out,
                format,
                &versions,
                &[
                    "version",
                    "language",
                    "module",
                    "files",
                    "created_dt",
                    "code",
                ],
                |v| {
                    let files = v["modules"]
                        .as_object()
                        .map_or(Value::Null, |m| m.len().into());
                    vec![
                        v["version"].clone(),
                        v["language"].clone(),
                        v["module"].clone(),
                        files,
                        v["created_dt"].clone(),
                        v["code"].clone(),
                    ]
                },
            )?;
        }
        FunctionsCommand::Restore { name, version } => {
            let path = format!("/svc/code/{}/restore/{version}", segment(&name));
            let record: Value = client.json(client.request(Method::POST, &path))?;
            match format {
                OutputFormat::Table => writeln!(
                    out,
                    "restored {name} version {version} as version {}",
                    output::cell(&record["version"], usize::MAX)
                )?,
                _ => output::object(&mut out, format, &record)?,
            }
        }
    }
    out.flush()?;
    Ok(())
}

/// Uploads the code, then applies the options that are not part of the code.
fn deploy(
    client: &Client,
    format: OutputFormat,
    out: &mut dyn Write,
    args: DeployArgs,
) -> CliResult<()> {
    let shown = args.file.display().to_string();
    let file_name = args
        .file
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| CliError::usage(format!("`{shown}` does not name a file")))?
        .to_string();
    let name = match args.name {
        Some(name) => name,
        None => args
            .file
            .file_stem()
            .and_then(|s| s.to_str())
            .filter(|s| !s.is_empty())
            .ok_or_else(|| CliError::usage(format!("give the function a --name for `{shown}`")))?
            .to_string(),
    };
    let bytes = std::fs::read(&args.file)
        .map_err(|e| CliError::failed(format!("cannot read `{shown}`: {e}")))?;
    let form = Form::new().part("file", Part::bytes(bytes).file_name(file_name));
    let upload = client
        .request(Method::POST, &format!("/svc/code/{}", segment(&name)))
        .multipart(form);
    let mut record: Value = client.json(upload)?;

    let mut patch = Map::new();
    if args.disabled {
        patch.insert("enabled".into(), Value::Bool(false));
    }
    if let Some(ms) = args.timeout_ms {
        patch.insert("timeout_ms".into(), ms.into());
    }
    if let Some(mb) = args.memory_mb {
        patch.insert("memory_mb".into(), mb.into());
    }
    if !patch.is_empty() {
        let id = record_id(&record)?;
        record = client.call(Method::PUT, &format!("/svc/{}", segment(&id)), &patch)?;
    }
    if !args.triggers.is_empty() {
        let id = record_id(&record)?;
        let path = format!("/svc/processes/triggers/{}", segment(&id));
        let process = client.call(Method::PUT, &path, &json!({"triggers": args.triggers}))?;
        record = with_string_ids(process);
    }
    match format {
        OutputFormat::Table => writeln!(
            out,
            "deployed {} version {}",
            output::cell(&record["name"], usize::MAX),
            output::cell(&record["version"], usize::MAX)
        )?,
        _ => output::object(out, format, &record)?,
    }
    Ok(())
}

/// A process as the SDK-facing routes answer it, its RecordID objects (`{"Table","ID"}`)
/// written as the RecordID strings (`Table:ID`) the CLI shows everywhere else.
fn with_string_ids(mut process: Value) -> Value {
    for field in ["id", "domain_id", "createdBy"] {
        let Some(value) = process.get_mut(field) else {
            continue;
        };
        if let (Some(table), Some(id)) = (value["Table"].as_str(), value["ID"].as_str()) {
            *value = Value::String(format!("{table}:{id}"));
        }
    }
    process
}

/// The RecordID of a record the server answered with.
pub(super) fn record_id(record: &Value) -> CliResult<String> {
    record["id"]
        .as_str()
        .map(str::to_string)
        .ok_or_else(|| CliError::failed(format!("the server's answer has no record id: {record}")))
}

/// `--trigger`: `manual`, `http`, `tag:<filter>`, `every:<N><unit>`, `cron:<pattern>` (and
/// `tag_change:` / `interval:` as `functions list` shows them) → the trigger's JSON.
pub fn parse_trigger(spec: &str) -> Result<Value, String> {
    let spec = spec.trim();
    let grammar =
        "expected manual, http, tag:<topic filter>, every:<N><unit> (unit ms s m h d w), \
                   or cron:<pattern>";
    match spec {
        "manual" | "http" => return Ok(json!({"type": spec})),
        _ => {}
    }
    let Some((kind, arg)) = spec.split_once(':') else {
        return Err(format!("unknown trigger `{spec}`: {grammar}"));
    };
    let arg = arg.trim();
    if arg.is_empty() {
        return Err(format!(
            "trigger `{spec}` is missing its argument: {grammar}"
        ));
    }
    match kind {
        "tag" | "tag_change" => Ok(json!({"type": "tag_change", "topic": arg})),
        "cron" => Ok(json!({"type": "cron", "expr": arg})),
        "every" | "interval" => {
            let digits = arg.find(|c: char| !c.is_ascii_digit()).unwrap_or(arg.len());
            let (number, unit) = arg.split_at(digits);
            let value: u64 =
                number.parse().ok().filter(|v| *v > 0).ok_or_else(|| {
                    format!("`{spec}` needs a positive whole number like every:5s")
                })?;
            if !UNITS.contains(&unit) {
                return Err(format!(
                    "`{spec}` needs a unit of {} right after the number, like every:250ms",
                    UNITS.join(" ")
                ));
            }
            Ok(json!({"type": "interval", "value": value, "unit": unit}))
        }
        _ => Err(format!("unknown trigger `{spec}`: {grammar}")),
    }
}

/// Triggers as one compact cell: `tag_change:plant/+/temp, interval:5s, cron:*/5 * * * *`
/// (read in either shape the server speaks: svc's flat one or the SDK's `{type, config}`).
pub fn triggers_text(triggers: &Value) -> String {
    let one = |t: &Value| match serde_json::from_value::<Trigger>(t.clone()) {
        Ok(Trigger::TagChange { topic }) => format!("tag_change:{topic}"),
        Ok(Trigger::Interval { value, unit }) => format!("interval:{value}{unit}"),
        Ok(Trigger::Cron { expr }) => format!("cron:{expr}"),
        Ok(Trigger::Http {
            endpoint: Some(endpoint),
        }) => format!("http:{endpoint}"),
        Ok(trigger) => trigger.kind().to_string(),
        Err(_) => t["type"].as_str().unwrap_or("?").to_string(),
    };
    triggers
        .as_array()
        .map(|list| list.iter().map(one).collect::<Vec<_>>().join(", "))
        .unwrap_or_default()
}

/// `--input`: JSON, or null when not given.
pub(super) fn parse_input(text: Option<&str>) -> CliResult<Value> {
    let Some(text) = text else {
        return Ok(Value::Null);
    };
    serde_json::from_str(text).map_err(|e| {
        CliError::usage(format!(
            "--input `{text}` is not JSON ({e}); quote text as '\"{text}\"'"
        ))
    })
}

/// JSON as people read it: pretty, on as many lines as it takes.
pub(super) fn pretty(value: &Value) -> String {
    serde_json::to_string_pretty(value).unwrap_or_default()
}

/// The run log at `path`: the runs as the server has them in JSON, else one row per run.
pub(super) fn print_runs(
    client: &Client,
    out: &mut dyn Write,
    format: OutputFormat,
    path: &str,
    limit: Option<u64>,
) -> CliResult<()> {
    let query: Vec<(String, String)> = limit
        .map(|l| ("limit".to_string(), l.to_string()))
        .into_iter()
        .collect();
    let runs: Vec<Value> = client.get_query(path, &query)?;
    let columns = [
        "started_dt",
        "trigger",
        "duration_ms",
        "success",
        "error",
        "logs",
    ];
    list(out, format, &runs, &columns, |r| {
        let logs: Vec<String> = r["logs"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|l| output::cell(l, usize::MAX))
            .collect();
        vec![
            r["started_dt"].clone(),
            r["trigger"].clone(),
            r["duration_ms"].clone(),
            r["success"].clone(),
            r["error"].clone(),
            Value::String(logs.join(" | ")),
        ]
    })?;
    Ok(())
}

/// A list: the records themselves in JSON and JSON lines; in a table or CSV, the `columns`
/// in that order with the cells `row` picks from each record (table cells cut).
pub(super) fn list(
    out: &mut dyn Write,
    format: OutputFormat,
    records: &[Value],
    columns: &[&str],
    row: impl Fn(&Value) -> Vec<Value>,
) -> io::Result<()> {
    match format {
        OutputFormat::Json | OutputFormat::Jsonl => output::rows(out, format, records, "value"),
        // Nothing to say: no header line of no rows either.
        _ if records.is_empty() => Ok(()),
        OutputFormat::Csv => {
            let mut w = csv::Writer::from_writer(out);
            w.write_record(columns).map_err(output::csv_io)?;
            for record in records {
                let cells: Vec<String> = row(record)
                    .iter()
                    .map(|v| output::cell(v, usize::MAX))
                    .collect();
                w.write_record(&cells).map_err(output::csv_io)?;
            }
            w.flush()
        }
        OutputFormat::Table => {
            let header: Vec<String> = columns.iter().map(|c| c.to_uppercase()).collect();
            let cells: Vec<Vec<String>> = records
                .iter()
                .map(|r| row(r).iter().map(|v| output::cell(v, MAX_CELL)).collect())
                .collect();
            aligned(out, &header, &cells)
        }
    }
}

fn aligned(out: &mut dyn Write, header: &[String], rows: &[Vec<String>]) -> io::Result<()> {
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (w, c) in widths.iter_mut().zip(row) {
            *w = (*w).max(c.chars().count());
        }
    }
    for cells in std::iter::once(header).chain(rows.iter().map(Vec::as_slice)) {
        let mut text = String::new();
        for (c, w) in cells.iter().zip(&widths) {
            text.push_str(c);
            text.push_str(&" ".repeat(w - c.chars().count() + 2));
        }
        writeln!(out, "{}", text.trim_end())?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trigger_specs() {
        let ok = |s| parse_trigger(s).unwrap();
        assert_eq!(ok("manual"), json!({"type": "manual"}));
        assert_eq!(ok("http"), json!({"type": "http"}));
        assert_eq!(
            ok("tag:plant/+/temp"),
            json!({"type": "tag_change", "topic": "plant/+/temp"})
        );
        assert_eq!(
            ok("every:250ms"),
            json!({"type": "interval", "value": 250, "unit": "ms"})
        );
        assert_eq!(
            ok("every:2m"),
            json!({"type": "interval", "value": 2, "unit": "m"})
        );
        assert_eq!(
            ok("cron:*/5 * * * *"),
            json!({"type": "cron", "expr": "*/5 * * * *"})
        );
        for bad in [
            "bogus:x", "bogus", "tag:", "every:5", "every:s", "every:0s", "every:5x", "cron: ",
        ] {
            assert!(parse_trigger(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn triggers_round_trip_through_their_text() {
        let triggers = json!([
            {"type": "tag_change", "topic": "plant/+/temp"},
            {"type": "interval", "value": 5, "unit": "s"},
            {"type": "cron", "expr": "*/5 * * * *"},
            {"type": "http"}
        ]);
        let text = triggers_text(&triggers);
        assert_eq!(
            text,
            "tag_change:plant/+/temp, interval:5s, cron:*/5 * * * *, http"
        );
        let sdk = json!([
            {"type": "tag_change", "config": {"tag": "plant/+/temp"}},
            {"type": "interval", "config": {"interval_value": 5, "interval_unit": "s"}},
            {"type": "cron", "config": {"cron_expression": "*/5 * * * *"}},
            {"type": "http", "config": {}}
        ]);
        assert_eq!(triggers_text(&sdk), text, "the SDK's shape reads the same");
        let back: Vec<Value> = text
            .split(", ")
            .map(|s| parse_trigger(s).unwrap())
            .collect();
        assert_eq!(Value::Array(back), triggers);
        assert_eq!(triggers_text(&Value::Null), "");
    }

    #[test]
    fn inputs() {
        assert_eq!(parse_input(None).unwrap(), Value::Null);
        assert_eq!(parse_input(Some("{\"x\":2}")).unwrap(), json!({"x": 2}));
        assert_eq!(parse_input(Some("{x")).unwrap_err().exit_code(), 2);
    }

    #[test]
    fn ordered_columns() {
        let records = [json!({"b": 1, "a": "x"}), json!({"a": "long value"})];
        let render = |format| {
            let mut buf = Vec::new();
            list(&mut buf, format, &records, &["b", "a"], |r| {
                vec![r["b"].clone(), r["a"].clone()]
            })
            .unwrap();
            String::from_utf8(buf).unwrap()
        };
        assert_eq!(render(OutputFormat::Table), "B  A\n1  x\n   long value\n");
        assert_eq!(render(OutputFormat::Csv), "b,a\n1,x\n,long value\n");
        assert_eq!(render(OutputFormat::Jsonl).lines().count(), 2);
        let mut buf = Vec::new();
        list(&mut buf, OutputFormat::Table, &[], &["a"], |_| vec![]).unwrap();
        assert!(buf.is_empty());
    }
}
