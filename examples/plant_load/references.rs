//! The same points written into the reference historians, each through its own ingestion
//! format with millisecond timestamps: VictoriaMetrics's JSON-lines import, InfluxDB 1.x's line
//! protocol, and an OpenMetrics file for Prometheus's `promtool tsdb create-blocks-from`.
//! VictoriaMetrics and Prometheus store numbers only: booleans go in as 0/1 and a text series
//! is refused.

use crate::flags::Flags;
use crate::{as_number, Points, Series};
use serde_json::{json, Value};
use std::io::Write;
use std::time::{Duration, Instant};

/// Points per JSON line of a VictoriaMetrics import, and per request.
const VM_LINE: u64 = 100_000;
const VM_REQUEST: u64 = 1_000_000;
/// Lines per InfluxDB write (its documentation suggests 5,000 to 10,000).
const INFLUX_BATCH: usize = 10_000;

fn client() -> reqwest::blocking::Client {
    reqwest::blocking::Client::builder()
        .timeout(Duration::from_secs(600))
        .build()
        .expect("http client")
}

fn numeric_only(points: &Points, system: &str) -> Result<(), String> {
    match points.series.iter().find(|s| !s.numeric()) {
        Some(s) => Err(format!("{system} stores numbers only: {} is text", s.topic)),
        None => Ok(()),
    }
}

/// A float as a JSON or text number, shortest form that reads back the same.
fn number_text(x: f64) -> String {
    Value::from(x).to_string()
}

fn send(request: reqwest::blocking::RequestBuilder, what: &str) -> Result<(), String> {
    let response = request.send().map_err(|e| format!("{what}: {e}"))?;
    let status = response.status();
    if !status.is_success() {
        let body = response.text().unwrap_or_default();
        return Err(format!("{what} → {status}: {}", body.trim()));
    }
    Ok(())
}

/// `vm-import`: JSON lines of up to [`VM_LINE`] points, [`VM_REQUEST`] points a request.
pub fn vm_import(flags: &Flags) -> Result<String, String> {
    let url = flags.required("url");
    let points = Points::from_flags(flags);
    numeric_only(&points, "VictoriaMetrics")?;
    let client = client();
    let started = Instant::now();
    let mut body = String::new();
    let mut in_body = 0;
    let flush = |body: &mut String, in_body: &mut u64| -> Result<(), String> {
        if *in_body > 0 {
            send(
                client
                    .post(format!("{url}/api/v1/import"))
                    .body(std::mem::take(body)),
                "POST /api/v1/import",
            )?;
            *in_body = 0;
        }
        Ok(())
    };
    for series in &points.series {
        let mut values = series.values();
        let mut n = 0;
        while n < points.per_signal {
            let end = (n + VM_LINE).min(points.per_signal);
            let mut nums = Vec::with_capacity((end - n) as usize);
            let mut stamps = Vec::with_capacity((end - n) as usize);
            for i in n..end {
                let value = values.next().expect("an endless stream");
                nums.push(as_number(&value).expect("a numeric series"));
                stamps.push(points.ts(i));
            }
            let line = json!({"metric": {"__name__": series.metric}, "values": nums, "timestamps": stamps});
            body.push_str(&line.to_string());
            body.push('\n');
            in_body += end - n;
            if in_body >= VM_REQUEST {
                flush(&mut body, &mut in_body)?;
            }
            n = end;
        }
    }
    flush(&mut body, &mut in_body)?;
    let seconds = started.elapsed().as_secs_f64();
    Ok(
        json!({"points": points.total(), "series": points.series.len(), "seconds": seconds})
            .to_string(),
    )
}

/// One line of InfluxDB line protocol: `<measurement> value=<typed value> <ms>`.
pub fn influx_line(series: &Series, value: &Value, ts: i64) -> String {
    let field = match value {
        Value::Bool(b) => b.to_string(),
        Value::Number(n) if n.is_i64() || n.is_u64() => format!("{n}i"),
        Value::Number(n) => n.to_string(),
        Value::String(s) => format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\"")),
        other => format!(
            "\"{}\"",
            other.to_string().replace('\\', "\\\\").replace('"', "\\\"")
        ),
    };
    format!("{} value={field} {ts}\n", series.metric)
}

/// `influx-write`: batches of [`INFLUX_BATCH`] lines to `/write?db=<--db>&precision=ms`.
pub fn influx_write(flags: &Flags) -> Result<String, String> {
    let url = flags.required("url");
    let db = flags.text("db", "plant");
    let points = Points::from_flags(flags);
    let client = client();
    let started = Instant::now();
    let mut streams: Vec<_> = points.series.iter().map(|s| (s, s.values())).collect();
    let mut body = String::new();
    let mut lines = 0;
    // In time order across the series, as a plant's values arrive.
    for n in 0..points.per_signal {
        for (series, values) in &mut streams {
            let value = values.next().expect("an endless stream");
            body.push_str(&influx_line(series, &value, points.ts(n)));
            lines += 1;
            if lines == INFLUX_BATCH {
                send(
                    client
                        .post(format!("{url}/write"))
                        .query(&[("db", db.as_str()), ("precision", "ms")])
                        .body(std::mem::take(&mut body)),
                    "POST /write",
                )?;
                lines = 0;
            }
        }
    }
    if lines > 0 {
        send(
            client
                .post(format!("{url}/write"))
                .query(&[("db", db.as_str()), ("precision", "ms")])
                .body(body),
            "POST /write",
        )?;
    }
    let seconds = started.elapsed().as_secs_f64();
    Ok(
        json!({"points": points.total(), "series": points.series.len(), "seconds": seconds})
            .to_string(),
    )
}

/// `openmetrics --out FILE`: one gauge family per series, its samples in time order, timestamps
/// in seconds with three decimals.
pub fn openmetrics(flags: &Flags) -> Result<String, String> {
    let out = flags.required("out");
    let points = Points::from_flags(flags);
    numeric_only(&points, "Prometheus")?;
    let file = std::fs::File::create(&out).map_err(|e| format!("{out}: {e}"))?;
    let mut file = std::io::BufWriter::new(file);
    let write_err = |e: std::io::Error| format!("{out}: {e}");
    for series in &points.series {
        writeln!(file, "# TYPE {} gauge", series.metric).map_err(write_err)?;
        for (n, value) in (0..points.per_signal).zip(series.values()) {
            let ts = points.ts(n);
            let x = as_number(&value).expect("a numeric series");
            writeln!(
                file,
                "{} {} {}.{:03}",
                series.metric,
                number_text(x),
                ts.div_euclid(1000),
                ts.rem_euclid(1000)
            )
            .map_err(write_err)?;
        }
    }
    writeln!(file, "# EOF").map_err(write_err)?;
    file.flush().map_err(write_err)?;
    Ok(json!({"points": points.total(), "series": points.series.len(), "file": out}).to_string())
}
