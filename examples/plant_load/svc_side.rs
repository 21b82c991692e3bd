//! The plant's points into svc as a plant's gateway sends them: tags declared historized first,
//! then every value published over MQTT at QoS 1 with its source timestamp; done when the
//! historian answers every point (its `count` aggregate, whatever its storage layout).

use crate::flags::Flags;
use crate::publisher::{self, publish_all, Connect};
use crate::svc_api::{Svc, DEFAULT_DOMAIN};
use crate::{as_number, Points, Series};
use serde_json::{json, Map, Value};
use std::time::{Duration, Instant};

fn svc_of(flags: &Flags) -> Svc {
    Svc::new(
        &flags.required("url"),
        &flags.required("token"),
        &flags.text("domain", DEFAULT_DOMAIN),
    )
}

/// Declares the set's tags historized, with `--tag-fields` added (see the header of main.rs).
pub fn declare(flags: &Flags) -> Result<String, String> {
    let svc = svc_of(flags);
    let points = Points::from_flags(flags);
    let template = flags.optional("tag-fields");
    let mut last_extra = Map::new();
    for series in &points.series {
        let mut body = json!({"path": series.topic, "historize": true});
        let mut extra = Map::new();
        if let Some(template) = &template {
            // A signal that never moved (a setpoint over a short run) gets a span of 1.
            let span = Some(span(series, points.per_signal))
                .filter(|&s| s > 0.0)
                .unwrap_or(1.0);
            let text = template
                .replace("DEVIATION", &(span * 0.001).to_string())
                .replace("SPAN", &span.to_string());
            extra = serde_json::from_str(&text)
                .map_err(|e| format!("--tag-fields is not a JSON object: {e}: {text}"))?;
            for (name, value) in &extra {
                body[name] = value.clone();
            }
        }
        let created = svc.post("/svc/tags", &body)?;
        if !extra.is_empty() {
            // A store that takes any member would accept a setting it does not know: only a
            // record that reads back with it counts as set.
            let id = created["id"]
                .as_str()
                .ok_or_else(|| format!("POST /svc/tags answered no id: {created}"))?;
            let stored = svc.get(&format!("/svc/{}", id.replace(':', "%3A")))?;
            for (name, value) in &extra {
                if stored.get(name) != Some(value) {
                    return Err(format!(
                        "the tag {} reads back `{name}` as {} instead of {value}",
                        series.topic,
                        stored.get(name).unwrap_or(&Value::Null)
                    ));
                }
            }
        }
        last_extra = extra;
    }
    Ok(json!({"tags": points.series.len(), "fields": last_extra}).to_string())
}

/// Largest minus smallest numeric value of the series' first `count` points (0 for text).
pub fn span(series: &Series, count: u64) -> f64 {
    let (lo, hi) = series
        .values()
        .take(count as usize)
        .filter_map(|v| as_number(&v))
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), x| {
            (lo.min(x), hi.max(x))
        });
    if hi >= lo {
        hi - lo
    } else {
        0.0
    }
}

/// A part of a series one connection publishes: points `first`, `first + stride`, … .
#[derive(Clone)]
pub struct Share {
    pub series: Series,
    pub first: u64,
    pub stride: u64,
}

/// One connection's messages: its shares interleaved in time.
pub fn messages(
    points: &Points,
    shares: Vec<Share>,
) -> impl Iterator<Item = (String, String)> + Send + 'static {
    let (start_ms, end) = (points.start_ms, points.per_signal);
    let mut streams: Vec<_> = shares
        .into_iter()
        .map(|share| {
            let values = share
                .series
                .values()
                .skip(share.first as usize)
                .step_by(share.stride as usize);
            (share, values)
        })
        .collect();
    (0..end)
        .map_while(move |step| {
            let mut batch = Vec::with_capacity(streams.len());
            for (share, values) in &mut streams {
                let n = share.first + step * share.stride;
                if n < end {
                    let value = values.next().expect("an endless stream");
                    let ts = start_ms + n as i64 * 1_000;
                    let body = format!("{{\"value\":{value},\"timestamp\":{ts}}}");
                    batch.push((share.series.topic.clone(), body));
                }
            }
            (!batch.is_empty()).then_some(batch)
        })
        .flatten()
}

/// Which connection publishes what: each series from one connection in time order, or
/// (`split`) from several connections, each taking every k-th point, so a series arrives nearly
/// in order at a higher rate even with fewer series than connections.
pub fn plan_shares(series: &[Series], publishers: usize, split: bool) -> Vec<Vec<Share>> {
    let stride = if split {
        (publishers / series.len().max(1)).max(1) as u64
    } else {
        1
    };
    let mut shares: Vec<Vec<Share>> = vec![Vec::new(); publishers];
    let mut next = 0;
    for series in series {
        for first in 0..stride {
            shares[next % publishers].push(Share {
                series: series.clone(),
                first,
                stride,
            });
            next += 1;
        }
    }
    shares
}

/// Publishes the points and waits until svc holds them (see the header of main.rs).
pub fn publish(flags: &Flags) -> Result<String, String> {
    let svc = svc_of(flags);
    let points = Points::from_flags(flags);
    let connect = Connect {
        host: flags.text("host", "127.0.0.1"),
        port: flags.number("port", 1883),
        username: flags.text("username", "bench"),
        password: flags.text("password", ""),
    };
    let publishers: usize = flags.number("publishers", 4).max(1);
    let expect_all = match flags.text("expect", "all").as_str() {
        "all" => true,
        "any" => false,
        other => flags.fail(&format!("--expect {other}: want all or any")),
    };
    let qos = publisher::qos(flags.number("qos", 1));

    let shares = plan_shares(&points.series, publishers, flags.switch("split"));

    let runtime = tokio::runtime::Runtime::new().expect("tokio runtime");
    let started = Instant::now();
    let acked: u64 = runtime.block_on(async {
        let tasks: Vec<_> = shares
            .into_iter()
            .enumerate()
            .filter(|(_, units)| !units.is_empty())
            .map(|(p, units)| {
                let name = format!("plant-load-{p}");
                let options = connect.options(&name);
                tokio::spawn(publish_all(name, options, qos, messages(&points, units)))
            })
            .collect();
        let mut acked = 0;
        for task in tasks {
            acked += task.await.unwrap_or(0);
        }
        acked
    });
    let publish_seconds = started.elapsed().as_secs_f64();
    if acked < points.total() {
        return Err(format!(
            "the broker acknowledged {acked} of {} publishes",
            points.total()
        ));
    }

    let (from, to) = points.window();
    let mut counts = vec![0u64; points.series.len()];
    let mut moved = Instant::now();
    let quiet = Duration::from_secs(if expect_all { 30 } else { 3 });
    loop {
        let mut changed = false;
        for (series, count) in points.series.iter().zip(&mut counts) {
            let now = svc.count(&series.topic, from, to)?;
            changed |= now != *count;
            *count = now;
        }
        if changed {
            moved = Instant::now();
        }
        let done = if expect_all {
            counts.iter().all(|&c| c >= points.per_signal)
        } else {
            counts.iter().all(|&c| c > 0) && moved.elapsed() >= quiet
        };
        if done {
            break;
        }
        if expect_all && moved.elapsed() >= quiet {
            return Err(format!(
                "svc holds {counts:?} points of the {} tags after nothing changed for {}s; {} each were published",
                points.series.len(),
                quiet.as_secs(),
                points.per_signal
            ));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let seconds =
        started.elapsed().as_secs_f64() - if expect_all { 0.0 } else { quiet.as_secs_f64() };
    let stored: u64 = counts.iter().sum();
    let by_tag: Map<String, Value> = points
        .series
        .iter()
        .zip(&counts)
        .map(|(series, &count)| (series.topic.clone(), json!(count)))
        .collect();
    Ok(json!({
        "points": points.total(),
        "acked": acked,
        "stored": stored,
        "stored_by_tag": by_tag,
        "publish_seconds": (publish_seconds * 1000.0).round() / 1000.0,
        "seconds": (seconds * 1000.0).round() / 1000.0,
        "values_per_s": (points.total() as f64 / seconds).round() as u64,
    })
    .to_string())
}
