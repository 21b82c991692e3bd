//! `svc historian list|query|query-sql|last|export`: the historian routes, with times given as
//! RFC 3339, `now`, or relative to now (`-1h`, `-1h30m`). `export` uses the SDK's aggregated
//! export, so it can write its timestamps and day buckets in a time zone.

use super::client::Client;
use super::error::{CliError, CliResult};
use super::output;
use super::{HistorianCommand, OutputFormat};
use crate::duration::parse_duration;
use crate::model::{HistorianExportRequest, HistorianLastRequest, HistorianPoint, HistorianQuery};
use crate::time::{format_rfc3339, parse_rfc3339};
use chrono::{DateTime, Utc};
use reqwest::Method;
use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::io::Write;

/// RFC 3339 (normalized to UTC), `now`, or `-<duration>` before `now`.
pub fn parse_time(text: &str, now: DateTime<Utc>) -> CliResult<String> {
    let text = text.trim();
    let bad = |why: String| {
        CliError::usage(format!(
            "invalid time `{text}`: {why} (use RFC 3339 like 2026-01-02T03:04:05Z, `now`, or relative like -1h)"
        ))
    };
    if text.eq_ignore_ascii_case("now") {
        return Ok(format_rfc3339(now));
    }
    if let Some(ago) = text.strip_prefix('-') {
        let d = parse_duration(ago).map_err(bad)?;
        let d = chrono::Duration::from_std(d).map_err(|_| bad("too far back".into()))?;
        let t = now
            .checked_sub_signed(d)
            .ok_or_else(|| bad("too far back".into()))?;
        return Ok(format_rfc3339(t));
    }
    parse_rfc3339(text)
        .map(format_rfc3339)
        .ok_or_else(|| bad("not a timestamp".into()))
}

/// Body of `POST /svc/historian/export/aggregated` (the SDK's export, which the CLI uses):
/// the plain export's members plus a time zone and column names.
#[derive(Serialize)]
struct AggregatedExport {
    #[serde(flatten)]
    export: HistorianExportRequest,
    #[serde(skip_serializing_if = "Option::is_none")]
    timezone: Option<String>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    mapping: BTreeMap<String, String>,
}

pub fn run(client: &Client, format: OutputFormat, command: HistorianCommand) -> CliResult<()> {
    let now = Utc::now();
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    match command {
        HistorianCommand::List => {
            let topics: Vec<Value> = client.get("/svc/historian/list")?;
            output::rows(&mut out, format, &topics, "topic")?;
        }
        HistorianCommand::QuerySql { query } => {
            let rows: Vec<Value> = client.call(
                Method::POST,
                "/svc/historian/query",
                &serde_json::json!({ "query": query }),
            )?;
            output::rows(&mut out, format, &rows, "value")?;
        }
        HistorianCommand::Query {
            topic,
            start,
            range,
            end,
            bucket,
            agg,
            limit,
        } => {
            let query = HistorianQuery {
                topic,
                start_time: start.map(|s| parse_time(&s, now)).transpose()?,
                range,
                end_time: end.map(|s| parse_time(&s, now)).transpose()?,
                limit,
                bucket,
                aggregation: agg,
            };
            let points: Vec<HistorianPoint> =
                client.call(Method::PATCH, "/svc/historian", &query)?;
            write_points(&mut out, format, &points)?;
        }
        HistorianCommand::Last { topic, limit } => {
            let req = HistorianLastRequest { topic, limit };
            let points: Vec<HistorianPoint> =
                client.call(Method::PATCH, "/svc/historian/last", &req)?;
            write_points(&mut out, format, &points)?;
        }
        HistorianCommand::Export {
            topics,
            start,
            end,
            timezone,
            sample_rate,
            agg,
            mapping,
            quality,
            out: file,
        } => {
            // With a sample rate and no --agg the buckets hold means, as they did before.
            let aggregation = agg.or_else(|| sample_rate.as_ref().map(|_| "mean".to_string()));
            let req = AggregatedExport {
                export: HistorianExportRequest {
                    topics,
                    start_date: parse_time(&start, now)?,
                    end_date: parse_time(&end, now)?,
                    sample_rate,
                    aggregation,
                    quality,
                },
                timezone,
                mapping: mapping.into_iter().collect(),
            };
            let resp = client.send(
                client
                    .request(Method::POST, "/svc/historian/export/aggregated")
                    .json(&req),
            )?;
            let bytes = resp
                .bytes()
                .map_err(|e| CliError::failed(format!("cannot read the export: {e}")))?;
            if file == "-" {
                out.write_all(&bytes)?;
            } else {
                std::fs::write(&file, &bytes)
                    .map_err(|e| CliError::failed(format!("cannot write `{file}`: {e}")))?;
                eprintln!("wrote {} bytes of gzipped CSV to {file}", bytes.len());
            }
        }
    }
    out.flush()?;
    Ok(())
}

fn write_points(
    out: &mut dyn Write,
    format: OutputFormat,
    points: &[HistorianPoint],
) -> CliResult<()> {
    let rows: Vec<Value> = points
        .iter()
        .map(|p| serde_json::json!({"timestamp": p.timestamp, "value": p.value}))
        .collect();
    output::rows(out, format, &rows, "value")?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times() {
        let now = parse_rfc3339("2026-05-01T12:00:00Z").unwrap();
        assert_eq!(parse_time("now", now).unwrap(), "2026-05-01T12:00:00.000Z");
        assert_eq!(parse_time("-1h", now).unwrap(), "2026-05-01T11:00:00.000Z");
        assert_eq!(
            parse_time("-1h30m", now).unwrap(),
            "2026-05-01T10:30:00.000Z"
        );
        assert_eq!(parse_time("-2d", now).unwrap(), "2026-04-29T12:00:00.000Z");
        assert_eq!(
            parse_time("2026-01-01T01:00:00+01:00", now).unwrap(),
            "2026-01-01T00:00:00.000Z"
        );
        for bad in ["yesterday", "-1x", "-", "2026-13-01T00:00:00Z", "1h"] {
            assert_eq!(parse_time(bad, now).unwrap_err().exit_code(), 2, "{bad}");
        }
    }
}
