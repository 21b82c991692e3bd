//! Reads that compare svc with VictoriaMetrics on the same series: a raw range export timed
//! until its body is received, and charts of min, mean and max buckets over a long range
//! (three requests sent at once per chart, as a chart view fetches them; a chart's time is until
//! the last of the three bodies is received).

use crate::flags::Flags;
use crate::svc_api::{rfc3339, Svc, DEFAULT_DOMAIN};
use crate::{percentile, Points};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

fn client() -> reqwest::blocking::Client {
    reqwest::blocking::Client::builder()
        .timeout(Duration::from_secs(600))
        .build()
        .expect("http client")
}

/// `GET url` with `query`: the body and the seconds until it was received.
fn timed_get(
    client: &reqwest::blocking::Client,
    url: &str,
    query: &[(&str, String)],
) -> Result<(bytes::Bytes, f64), String> {
    let started = Instant::now();
    let response = client
        .get(url)
        .query(query)
        .send()
        .map_err(|e| format!("GET {url}: {e}"))?;
    let status = response.status();
    let body = response.bytes().map_err(|e| format!("GET {url}: {e}"))?;
    let took = started.elapsed().as_secs_f64();
    if !status.is_success() {
        return Err(format!(
            "GET {url} → {status}: {}",
            String::from_utf8_lossy(&body)
        ));
    }
    Ok((body, took))
}

/// Epoch milliseconds as the seconds VictoriaMetrics's API reads.
fn vm_time(ms: i64) -> String {
    format!("{}.{:03}", ms.div_euclid(1000), ms.rem_euclid(1000))
}

/// `vm-export`: the series' points from `/api/v1/export` (JSON lines), counted after the
/// timed part.
pub fn vm_export(flags: &Flags) -> Result<String, String> {
    let url = flags.required("url");
    let points = Points::from_flags(flags);
    let series = points.series.first().ok_or("no series")?;
    let (from, to) = points.window();
    let query = [
        ("match[]", series.metric.clone()),
        ("start", vm_time(from)),
        // VictoriaMetrics's end is inclusive.
        ("end", vm_time(to - 1)),
    ];
    let (body, seconds) = timed_get(&client(), &format!("{url}/api/v1/export"), &query)?;
    let mut read = 0u64;
    for line in body.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        let line: Value =
            serde_json::from_slice(line).map_err(|e| format!("export line is not JSON: {e}"))?;
        read += line["timestamps"].as_array().map_or(0, |t| t.len() as u64);
    }
    if read != points.per_signal {
        return Err(format!(
            "the export held {read} points, {} were written",
            points.per_signal
        ));
    }
    Ok(json!({
        "points": read,
        "bytes": body.len(),
        "seconds": seconds,
        "points_per_s": (read as f64 / seconds).round() as u64,
    })
    .to_string())
}

/// The bucket of a chart over the points: their span / `--buckets`, rounded up to whole
/// seconds (a unit both APIs take).
pub fn bucket_ms(points: &Points, buckets: u64) -> i64 {
    let (from, to) = points.window();
    let ms = ((to - from) as u64).div_ceil(buckets);
    ms.div_ceil(1000) as i64 * 1000
}

/// Runs `--queries` charts after one untimed chart; each draws with `draw`, which returns the
/// number of points it received (checked against `expect`).
fn charts(
    flags: &Flags,
    expect: std::ops::RangeInclusive<usize>,
    draw: impl Fn() -> Result<usize, String>,
) -> Result<String, String> {
    let queries: usize = flags.number("queries", 30);
    // A slow system still finishes: charts stop once they have taken this long in all.
    let budget = Duration::from_secs_f64(flags.number("budget-seconds", 600.0));
    let check = |got: usize| {
        if expect.contains(&got) {
            Ok(())
        } else {
            Err(format!(
                "a chart came back with {got} points, expected {expect:?}"
            ))
        }
    };
    check(draw()?)?;
    let mut ms = Vec::with_capacity(queries);
    let all = Instant::now();
    while ms.len() < queries && (ms.is_empty() || all.elapsed() < budget) {
        let started = Instant::now();
        let got = draw()?;
        ms.push(started.elapsed().as_secs_f64() * 1000.0);
        check(got)?;
    }
    let round = |x: f64| (x * 10.0).round() / 10.0;
    Ok(json!({
        "charts": ms.len(),
        "p50_ms": round(percentile(&ms, 50.0)),
        "p99_ms": round(percentile(&ms, 99.0)),
        "max_ms": round(percentile(&ms, 100.0)),
    })
    .to_string())
}

/// Three requests at once, one per aggregation; the points they returned in all.
fn three_at_once<F>(request: F) -> Result<usize, String>
where
    F: Fn(usize) -> Result<usize, String> + Sync,
{
    std::thread::scope(|scope| {
        let request = &request;
        let handles: Vec<_> = (0..3).map(|i| scope.spawn(move || request(i))).collect();
        let mut total = 0;
        for handle in handles {
            total += handle.join().map_err(|_| "a request thread panicked")??;
        }
        Ok(total)
    })
}

/// `chart`: svc's `PATCH /svc/historian` with `bucket` and `aggregation` min, mean, max.
pub fn svc_chart(flags: &Flags) -> Result<String, String> {
    let svc = Svc::new(
        &flags.required("url"),
        &flags.required("token"),
        &flags.text("domain", DEFAULT_DOMAIN),
    );
    let points = Points::from_flags(flags);
    let buckets: u64 = flags.number("buckets", 500);
    let series = points.series.first().ok_or("no series")?;
    let (from, to) = points.window();
    let bucket = bucket_ms(&points, buckets);
    let bodies: Vec<Value> = ["min", "mean", "max"]
        .into_iter()
        .map(|agg| {
            json!({
                "topic": series.topic,
                "start_time": rfc3339(from),
                "end_time": rfc3339(to),
                "bucket": format!("{}s", bucket / 1000),
                "aggregation": agg,
            })
        })
        .collect();
    let full = to.saturating_sub(from).div_euclid(bucket) as usize;
    charts(flags, 3 * full..=3 * (full + 1), || {
        three_at_once(|i| {
            let (body, _) = svc.historian(&bodies[i])?;
            let got: Vec<Value> =
                serde_json::from_slice(&body).map_err(|e| format!("not a JSON array: {e}"))?;
            Ok(got.len())
        })
    })
}

/// `vm-chart`: `query_range` of `<f>_over_time(<metric>[bucket])` evaluated at the end of each
/// bucket, `step` = bucket, `nocache=1` so no answer comes from its rollup cache.
pub fn vm_chart(flags: &Flags) -> Result<String, String> {
    let url = flags.required("url");
    let points = Points::from_flags(flags);
    let buckets: u64 = flags.number("buckets", 500);
    let series = points.series.first().ok_or("no series")?;
    let (from, to) = points.window();
    let bucket = bucket_ms(&points, buckets);
    let client = client();
    let full = to.saturating_sub(from).div_euclid(bucket) as usize;
    let queries: Vec<Vec<(&str, String)>> = ["min", "avg", "max"]
        .into_iter()
        .map(|f| {
            vec![
                (
                    "query",
                    format!("{f}_over_time({}[{}s])", series.metric, bucket / 1000),
                ),
                ("start", vm_time(from + bucket)),
                ("end", vm_time(to)),
                ("step", format!("{}s", bucket / 1000)),
                ("nocache", "1".into()),
            ]
        })
        .collect();
    let endpoint = format!("{url}/api/v1/query_range");
    charts(flags, 3 * full.saturating_sub(1)..=3 * (full + 1), || {
        three_at_once(|i| {
            let (body, _) = timed_get(&client, &endpoint, &queries[i])?;
            let answer: Value =
                serde_json::from_slice(&body).map_err(|e| format!("not JSON: {e}"))?;
            let result = &answer["data"]["result"];
            Ok(result
                .as_array()
                .and_then(|r| r.first())
                .and_then(|s| s["values"].as_array())
                .map_or(0, |v| v.len()))
        })
    })
}
